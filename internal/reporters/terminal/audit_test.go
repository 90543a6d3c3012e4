package terminal

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/audit"
	"github.com/idemtest/idemtest/internal/outcome"
)

// TestAuditSaysWhatIsNotListed: findings past the first of a tool and kind are counted in the
// table but not listed; the output says how many more there are, so a list of 5 is not read as
// all of 30.
func TestAuditSaysWhatIsNotListed(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	a := audit.New(audit.Options{MaxFindings: 5, MaxHitRate: -1, MaxConflictRate: -1})
	for i := range 30 {
		for j := range 2 {
			c := audit.Call{Start: t0.Add(time.Duration(j) * time.Second), Session: "s", ArgsKnown: true, Where: "f:1"}
			c.Tool, c.Outcome, c.Key = "refund", outcome.OK, fmt.Sprintf("k%d", i)
			c.Args = json.RawMessage(fmt.Sprintf(`{"idempotencyKey":%q}`, c.Key))
			c.Result = json.RawMessage(fmt.Sprintf(`{"id":%d}`, j))
			if err := a.Add(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	var b strings.Builder
	if err := WriteAudit(&b, a.Report(), false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n  … and 25 more double-execution findings of refund not listed (counted in the table)\n") {
		t.Errorf("no line for the 25 findings not listed:\n%s", b.String())
	}
}
