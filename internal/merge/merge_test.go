package merge

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/result"
)

// The inputs are reports recorded from real runs (the reporters' test data).
func read(t *testing.T, names ...string) []*Input {
	t.Helper()
	var out []*Input
	for _, n := range names {
		in, err := ReadFile(filepath.Join("..", "reporters", "testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		files       []string
		scenarios   int
		failed      bool
		interrupted bool
		errText     string // of the merged report's Err
		wantErr     string // of the merge
	}{
		{name: "two shards", files: []string{"run.correct.json", "run.mixed.json"}, scenarios: 5, failed: true},
		{name: "a report twice is kept once", files: []string{"run.correct.json", "run.correct.json"}, scenarios: 3, failed: true},
		{name: "one scenario, two results", files: []string{"run.correct.json", "run.none.json"}, wantErr: `"verdict only: a call, a lost response and its retry, a 16-way burst" is in`},
		{name: "an interrupted shard", files: []string{"run.mixed.json", "run.interrupted.json"}, scenarios: 5, failed: true, interrupted: true},
		{name: "a shard whose services did not start", files: []string{"run.nostart.json", "run.mixed.json"}, scenarios: 2, failed: true, errText: "run.nostart.json: service refundserver stopped"},
		{name: "a shard alone", files: []string{"run.none.json"}, scenarios: 4, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Run(read(t, tt.files...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Scenarios) != tt.scenarios || rep.Failed() != tt.failed || rep.Interrupted != tt.interrupted {
				t.Errorf("%d scenarios, failed %v, interrupted %v", len(rep.Scenarios), rep.Failed(), rep.Interrupted)
			}
			for i := 1; i < len(rep.Scenarios); i++ {
				if a, b := rep.Scenarios[i-1].Scenario, rep.Scenarios[i].Scenario; a.File > b.File {
					t.Errorf("%s before %s: not in load order", a.File, b.File)
				}
			}
			if tt.errText != "" && (rep.Err == nil || !strings.Contains(rep.Err.Error(), tt.errText)) {
				t.Errorf("Err %v, want %q", rep.Err, tt.errText)
			}
		})
	}
}

func TestKindAndCheck(t *testing.T) {
	if _, err := Kind(read(t, "run.mixed.json", "check.json")); err == nil || !strings.Contains(err.Error(), "check.json is the report of idemtest check") {
		t.Errorf("mixed kinds: %v", err)
	}
	ins := read(t, "check.json", "check.json")
	if k, err := Kind(ins); err != nil || k != baseline.Check {
		t.Fatalf("kind %q, %v", k, err)
	}
	rep, err := Check(ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Endpoint != "mcp_stdio" || len(rep.Checks) != 7 {
		t.Errorf("%d rows of %s, checks %v", len(rep.Rows), rep.Endpoint, rep.Checks)
	}
}

func TestRunCoverage(t *testing.T) {
	u := func(tools ...string) []result.Uncovered {
		var out []result.Uncovered
		for _, n := range tools {
			out = append(out, result.Uncovered{Tool: n})
		}
		return out
	}
	got := runCoverage([][]result.Coverage{
		{{Endpoint: "e", Mutating: 3, Uncovered: u("a", "b")}},
		{{Endpoint: "e", Mutating: 3, Uncovered: u("b", "c")}},
	})
	if len(got) != 1 || len(got[0].Uncovered) != 1 || got[0].Uncovered[0].Tool != "b" {
		t.Errorf("a tool one shard called is covered: %+v", got)
	}
	if !result.Gaps(got) {
		t.Error("b, called by no shard, is a gap")
	}
}

func TestMergeRegressions(t *testing.T) {
	f := baseline.Failure{Subject: "tool a check concurrent", What: "fail"}
	same := func(path string) regressions {
		return regressions{path, &baseline.Result{Baseline: "b.json", FailOn: "new", New: []baseline.Failure{f}, Known: []baseline.Failure{}, Fixed: []baseline.Failure{}}}
	}
	res, err := mergeRegressions([]regressions{same("1.json"), same("2.json")})
	if err != nil || len(res.New) != 1 || !res.Failed() {
		t.Errorf("joined: %+v, %v", res, err)
	}
	if res, err := mergeRegressions([]regressions{{"1.json", nil}, {"2.json", nil}}); res != nil || err != nil {
		t.Errorf("no baseline: %+v, %v", res, err)
	}
	if _, err := mergeRegressions([]regressions{same("1.json"), {"2.json", nil}}); !errors.Is(err, ErrBaselines) {
		t.Errorf("one shard without a baseline: %v", err)
	}
}
