package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// TestPlaceholdersDoNotLoad: a placeholder init wrote, left in a call's arguments, is an error
// at its position naming the argument and the tool; values that merely look alike load.
func TestPlaceholdersDoNotLoad(t *testing.T) {
	for _, tt := range []struct {
		name, step string
		want       []string // "line:col: message"; none: the scenario loads
	}{
		{"a string", `{call_tool: issue_refund, args: {accountId: "TODO(string)_{{ session }}", amount: 5}}`,
			[]string{"6:49: fill in TODO: argument accountId of issue_refund"}},
		{"the whole arguments", `{call_tool: issue_refund, args: {"TODO(args)": "TODO(value)"}}`,
			[]string{"6:38: fill in TODO: the arguments of issue_refund"}},
		{"nested", `{call_tool: issue_refund, args: {accountId: a, amount: 5, meta: {tags: [x, "TODO(string)"]}}}`,
			[]string{"6:80: fill in TODO: argument meta.tags[1] of issue_refund"}},
		{"the seed form", `{action: call_tool, tool: issue_refund, args: {accountId: "TODO(string)", amount: 5}}`,
			[]string{"6:63: fill in TODO: argument accountId of issue_refund"}},
		{"filled in", `{call_tool: issue_refund, args: {accountId: "acct_{{ session }}", amount: 5}}`, nil},
		{"look-alikes", `{call_tool: issue_refund, args: {accountId: "TODO list", note: "TODO(Later)", other: "TODO()", amount: 5}}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.yaml")
			src := "name: s\nendpoints:\n  e: {http: {url: \"http://127.0.0.1:9/{tool}\"}}\nendpoint: e\nsteps:\n  - " + tt.step + "\n"
			cfg := filepath.Join(dir, "cfg.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, []byte("allow_hosts: []\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Scenarios(context.Background(), []string{path}, Options{Config: cfg, LookupEnv: func(string) (string, bool) { return "", false }})
			if tt.want == nil && err != nil {
				t.Fatalf("does not load: %v", err)
			}
			var errs yamlfile.Errors
			errors.As(err, &errs)
			var got []string
			for _, e := range errs {
				if strings.Contains(e.Msg, "TODO") {
					got = append(got, e.Pos.String()[len(path)+1:]+": "+e.Msg)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s\n(all: %v)", strings.Join(got, "\n"), strings.Join(tt.want, "\n"), err)
			}
		})
	}
}
