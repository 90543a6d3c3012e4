package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/result"
)

// TestTrialsReleaseAnswers: the first trial and the first failed one keep their decoded answers
// whole (reports, check and sweep read them); every other trial keeps each answer as reports
// show it, capped at result.MaxAnswer, so a run's memory does not grow with its trials.
func TestTrialsReleaseAnswers(t *testing.T) {
	big := strings.Repeat("x", 3*result.MaxAnswer)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"refundId": "r1", "note": big})
	}))
	defer srv.Close()
	t.Setenv("BIG_URL", srv.URL)
	list := load(t, `
name: big answers
trials: 5
endpoints:
  e:
    http: {url: "${BIG_URL}/tools/{tool}"}
steps:
  - id: burst
    call_tool: issue_refund
    fanout: 3
  - assert: trial != 3 && trial != 4
`)
	r := Run(context.Background(), list, Options{}).Scenarios[0]
	if len(r.History) != 5 || r.FailedTrial == nil || r.FailedTrial.Index != 3 {
		t.Fatalf("history of %d trials, failed trial %v", len(r.History), r.FailedTrial)
	}
	for _, tr := range r.History {
		whole := tr == r.Trial1 || tr == r.FailedTrial
		if len(tr.Calls) != 3 {
			t.Fatalf("trial %d has %d calls", tr.Index, len(tr.Calls))
		}
		for _, c := range tr.Calls {
			switch v := c.Result.(type) {
			case map[string]any:
				if !whole {
					t.Errorf("trial %d keeps its decoded answer whole", tr.Index)
				}
			case result.CutAnswer:
				if whole {
					t.Errorf("trial %d lost its answer: %.80s", tr.Index, v.Text)
				}
				b, _ := json.Marshal(map[string]any{"refundId": "r1", "note": big})
				if v.Bytes != len(b) || !strings.HasPrefix(string(b), strings.TrimSuffix(v.Text, "…")) || len(v.Text) > result.MaxAnswer+len("…") {
					t.Errorf("trial %d: cut answer of %d bytes, %q…; want the first %d bytes of %d", tr.Index, v.Bytes, v.Text[:40], result.MaxAnswer, len(b))
				}
			default:
				t.Errorf("trial %d: answer of type %T", tr.Index, c.Result)
			}
		}
	}
}
