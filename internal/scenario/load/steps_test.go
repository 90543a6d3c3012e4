package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// manySteps writes a scenario of n steps (n a multiple of 4): rounds of a call, a fan-out and
// two assertions, each assertion on the round's own steps and on the very first call, so every
// step's environment must hold every earlier step with its type. extra is appended to the steps.
func manySteps(t testing.TB, n int, extra string) string {
	var b strings.Builder
	b.WriteString("name: many steps\nendpoints:\n  refunds: {http: {url: \"http://127.0.0.1:9/tools/{tool}\"}}\nsteps:\n")
	for i := range n / 4 {
		fmt.Fprintf(&b, "  - id: c%d\n    call_tool: issue_refund\n    args: {accountId: \"acct_{{ session }}\", amount: %d}\n", i, i+1)
		fmt.Fprintf(&b, "  - id: f%d\n    call_tool: issue_refund\n    fanout: 2\n    args: {accountId: \"{{ c%d.result.accountId }}\", amount: 1}\n", i, i)
		fmt.Fprintf(&b, "  - assert: c%d.ok && c0.status == 200 && filter(f%d.calls, .ok)[0].result.refundId != \"\"\n", i, i)
		fmt.Fprintf(&b, "  - action: assert\n    check: 'f%d.ok + f%d.conflict === 2'\n", i, i)
	}
	b.WriteString(extra)
	path := filepath.Join(t.TempDir(), "many.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func noEnv(string) (string, bool) { return "", false }

// TestManySteps loads a long scenario: every step is decoded with the names of the steps before
// it, typed, and not those after it.
func TestManySteps(t *testing.T) {
	const n = 4000
	list, err := Scenarios(context.Background(), []string{manySteps(t, n, "")}, Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || len(list[0].Steps) != n {
		t.Fatalf("loaded %d scenarios, want 1 of %d steps", len(list), n)
	}
	last := list[0].Steps[n-1]
	if last.Kind != scenario.AssertStep || last.Assert == nil || !last.Assert.Uses(fmt.Sprintf("f%d", n/4-1)) {
		t.Errorf("last step = %+v, want the assertion on the last fan-out", last)
	}

	// At the end of the file the first call is still typed, a later step is unknown, and a
	// step's own id is not yet a name.
	extra := "  - assert: c0.okk\n" +
		"  - assert: later.ok\n" +
		"  - id: self\n    call_tool: issue_refund\n    args: {amount: \"{{ self.status }}\"}\n" +
		"  - id: later\n    call_tool: issue_refund\n"
	path := manySteps(t, n, extra)
	_, err = Scenarios(context.Background(), []string{path}, Options{LookupEnv: noEnv})
	var errs yamlfile.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v, want load errors", err)
	}
	line := 5 + 10*n/4 // the line of the first extra step
	want := []string{
		fmt.Sprintf("%s:%d:16: assert: a call result has no field \"okk\"", path, line),
		fmt.Sprintf("%s:%d:13: assert: unknown name later", path, line+1),
		fmt.Sprintf("%s:%d:24: template: unknown name self", path, line+4),
	}
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, e := range errs {
		if got := e.Pos.String() + ": " + e.Msg; got != want[i] {
			t.Errorf("error %d = %q, want %q", i, got, want[i])
		}
	}
}

// BenchmarkLoadSteps measures loading a scenario of n steps, which must grow linearly with n
// (BENCHMARKS.md records the numbers).
func BenchmarkLoadSteps(b *testing.B) {
	for _, n := range []int{5000, 10000, 20000} {
		path := manySteps(b, n, "")
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			for range b.N {
				if _, err := Scenarios(context.Background(), []string{path}, Options{LookupEnv: noEnv}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
