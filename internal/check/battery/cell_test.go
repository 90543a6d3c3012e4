package battery

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/idemtest/idemtest/internal/matrix"
)

// TestCellReadBack: a cell of a JSON report read back (report merge) has its typed evidence,
// from evidence_items, or from the text alone in a report written before them.
func TestCellReadBack(t *testing.T) {
	want := matrix.Evidences{{Kind: matrix.EvidenceSinks, Names: []string{"pp"}}, {Kind: matrix.EvidenceAnswers}}
	tests := []struct{ name, json string }{
		{"with evidence_items", `{"check":"replay","status":"fail","evidence":"sinks (pp), answers (exactly-once verdict)","evidence_items":[{"kind":"sinks","names":["pp"]},{"kind":"answers"}],"duration_ns":1}`},
		{"text only", `{"check":"replay","status":"fail","evidence":"sinks (pp), answers (exactly-once verdict)","duration_ns":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Cell
			if err := json.Unmarshal([]byte(tt.json), &c); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Evidence, want) || c.Status != matrix.Fail || c.Duration != 1 {
				t.Errorf("read back %+v, evidence %#v", c, c.Evidence)
			}
		})
	}
}
