package load

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// TestBadInputs loads every file in testdata/bad and checks each "# want:" line appears in the
// errors, with its line and column.
func TestBadInputs(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, err := Scenarios(context.Background(), []string{path}, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			var errs yamlfile.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("err = %v, want yamlfile.Errors", err)
			}
			got := err.Error()
			for _, want := range wants(t, path) {
				if strings.Contains(want, ": ") && want[0] >= '0' && want[0] <= '9' {
					want = path + ":" + want
				}
				if !strings.Contains(got, want) {
					t.Errorf("errors lack %q:\n%s", want, got)
				}
			}
		})
	}
}

func wants(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
			out = append(out, w)
		}
	}
	return out
}

func TestEveryErrorInAFileIsReported(t *testing.T) {
	_, err := Scenarios(context.Background(), []string{"testdata/bad/fanout_bounds.yaml", "testdata/bad/bad_duration.yaml"}, Options{})
	var errs yamlfile.Errors
	if !errors.As(err, &errs) || len(errs) != 4 {
		t.Fatalf("want 4 errors from 2 files, got %v", err)
	}
}

func TestBinaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bin.yaml")
	os.WriteFile(path, []byte("name: x\nsteps: \x00\x01\x02"), 0o644)
	_, err := Scenarios(context.Background(), []string{path}, Options{})
	if err == nil || !strings.Contains(err.Error(), path+":2:8: not a text file") {
		t.Errorf("err = %v", err)
	}
}

func TestSeedFormLoadsAsNative(t *testing.T) {
	list, err := Scenarios(context.Background(), []string{"testdata/good/seed.yaml"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := list[0]
	if s.Name != "Refund tool retry safety" || len(s.Steps) != 3 {
		t.Fatalf("scenario %q with %d steps", s.Name, len(s.Steps))
	}
	for i, want := range []scenario.StepKind{scenario.CallStep, scenario.CallStep, scenario.AssertStep} {
		if s.Steps[i].Kind != want {
			t.Errorf("step %d kind %v, want %v", i+1, s.Steps[i].Kind, want)
		}
	}
	call := s.Steps[0]
	if call.Tool != "issue_refund" || call.Endpoint != "refunds" || call.Expect != outcome.OK {
		t.Errorf("call step %+v", call)
	}
	if args := call.Args.(map[string]any); args["idempotencyKey"] != "test-sess-4" || args["amount"] != 49.99 {
		t.Errorf("args %v", args)
	}
	ok, err := s.Steps[2].Assert.Bool(map[string]any{"step1": assert.CallResult{OK: true}, "step2": assert.CallResult{OK: true}})
	if err != nil || !ok {
		t.Errorf("=== assertion: %v %v", ok, err)
	}
}

func TestNativeForm(t *testing.T) {
	list, err := Scenarios(context.Background(), []string{"testdata/good/native.yaml"}, Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	s := list[0]
	if s.Trials != 3 || strings.Join(s.Tags, ",") != "a,b" || s.Config != filepath.Join("testdata", "idemtest.yaml") {
		t.Errorf("scenario %+v", s)
	}
	first, retry, burst, sleep, check := s.Steps[0], s.Steps[1], s.Steps[2], s.Steps[3], s.Steps[4]
	if !first.LoseResponse || first.Expect != outcome.Info {
		t.Errorf("lose_response step: %+v", first)
	}
	if retry.Tool != "issue_refund" || retry.RetryOf != "first" || retry.Expect != outcome.Any || retry.Retry.Attempts != 4 || retry.Retry.Backoff != 10*time.Millisecond {
		t.Errorf("retry step: %+v %+v", retry, retry.Retry)
	}
	if !burst.VerdictOff || first.VerdictOff {
		t.Errorf("verdict: off on burst %v, on first %v", burst.VerdictOff, first.VerdictOff)
	}
	if ep := s.Endpoints["refunds"]; strings.Join(ep.Ignore, ",") != "requestId,meta.at" || !ep.IsNatural("set_status") || ep.IsNatural("issue_refund") {
		t.Errorf("compare.ignore %v, natural %v", ep.Ignore, ep.Natural)
	}
	if burst.Fanout != 16 || burst.Expect != outcome.Any {
		t.Errorf("burst: %+v", burst)
	}
	if _, ok := burst.Args.(map[string]any)["ref"].(*assert.Template); !ok {
		t.Errorf("templated arg not compiled: %#v", burst.Args)
	}
	if first.Args.(map[string]any)["note"] != "fallback" {
		t.Errorf("${VAR:-default}: %#v", first.Args)
	}
	if sleep.Sleep != 10*time.Millisecond || check.Eventually != 2*time.Second {
		t.Errorf("sleep %v eventually %v", sleep.Sleep, check.Eventually)
	}
}

func TestAllowHosts(t *testing.T) {
	opts := Options{AllowHosts: []string{"payments.example.com"}}
	if _, err := Scenarios(context.Background(), []string{"testdata/bad/host_not_allowed.yaml"}, opts); err != nil {
		t.Errorf("--allow-host did not allow the host: %v", err)
	}
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "10.0.0.1": false, "example.com": false} {
		if scenario.IsLoopback(host) != want {
			t.Errorf("IsLoopback(%s) != %v", host, want)
		}
	}
}

func TestExamplesLoad(t *testing.T) {
	if _, err := Scenarios(context.Background(), []string{"../../../examples/scenarios"}, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{"../../../examples/broken/naive.yaml", "../../../examples/broken/none.yaml"} {
		if _, err := Scenarios(context.Background(), []string{"../../../examples/scenarios"}, Options{Config: cfg}); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
}

// FuzzLoad checks that no input makes the loader panic or hang.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../../../examples/scenarios/*.yaml")
	more, _ := filepath.Glob("testdata/*/*.yaml")
	for _, p := range append(seeds, more...) {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, scenario.ConfigName), []byte("endpoints:\n  e:\n    http: {url: \"http://127.0.0.1:1/{tool}\"}\n"), 0o644)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Skip()
		}
		list, err := Scenarios(context.Background(), []string{path}, Options{LookupEnv: func(string) (string, bool) { return "", false }})
		if err == nil && len(list) != 1 {
			t.Fatalf("no error and %d scenarios", len(list))
		}
	})
}

// TestConfigErrorsFirst: when the config does not load, its errors are reported and the
// scenarios using it are not, so the root cause is not buried under one derived "no endpoint"
// error per step.
func TestConfigErrorsFirst(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	scenarios := []string{
		write("found/a.yaml", "name: a\nsteps:\n  - call_tool: x\n  - call_tool: y\n"),
		write("found/b.yaml", "name: b\nsteps:\n  - call_tool: x\n"),
	}
	write("found/idemtest.yaml", "endpoints:\n  e:\n    htpp: {url: \"http://127.0.0.1:1/{tool}\"}\n")
	explicit := write("explicit.yaml", "endpoints:\n  e: {http: {url: \"http://127.0.0.1:1/{tool}\"}\n")
	for _, tc := range []struct {
		name, config, want string
	}{
		{"found next to the scenarios", "", `found/idemtest.yaml:3:5: unknown field "htpp"`},
		{"given with --config", explicit, "explicit.yaml:2:3: invalid YAML"},
		{"missing --config", filepath.Join(dir, "nope.yaml"), "nope.yaml: read: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Scenarios(context.Background(), scenarios, Options{Config: tc.config})
			var errs yamlfile.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("err = %v, want yamlfile.Errors", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("errors lack %q:\n%v", tc.want, err)
			}
			for _, e := range errs {
				if !strings.HasSuffix(e.Pos.File, ".yaml") || strings.HasSuffix(e.Pos.File, "a.yaml") || strings.HasSuffix(e.Pos.File, "b.yaml") {
					t.Errorf("an error outside the config: %v", e)
				}
			}
		})
	}
}

// TestEmptyVariableHint: a variable set to "" expands to "", and a URL it leaves invalid says so.
func TestEmptyVariableHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	src := "name: x\nendpoints:\n  e: {http: {url: \"${REFUND_URL}/tools/{tool}\"}}\nsteps:\n  - call_tool: t\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Scenarios(context.Background(), []string{path}, Options{LookupEnv: func(k string) (string, bool) { return "", k == "REFUND_URL" }})
	for _, want := range []string{`url: "/tools/{tool}" is not an http:// or https:// URL`, "hint: REFUND_URL is set but empty in the environment"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// TestLongLineExcerpt checks that errors on 100 KB lines stay short: each shows a window of its
// line around the column.
func TestLongLineExcerpt(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	path := filepath.Join(t.TempDir(), "long.yaml")
	src := "name: long\nsteps:\n  - call_tool: t\n    args: {a: " + long + "}\n    timeout: " + long + "\n    fanuot: 1 # " + long + "\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Scenarios(context.Background(), []string{path}, Options{})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) > 2000 {
		t.Errorf("the errors are %d bytes long:\n%.3000s", len(msg), msg)
	}
	for _, want := range []string{path + ":5:14: timeout must be a duration", path + `:6:5: unknown field "fanuot"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
}
