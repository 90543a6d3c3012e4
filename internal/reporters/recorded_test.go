package reporters

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/runner"
)

var record = flag.Bool("record", false, "run idemtest against the reference server and record the JSON reports in testdata/run.*.json")

// recordings are real runs of idemtest (go run . run ARGS --json testdata/NAME, from the
// repository root), recorded with -record and rendered by every reporter in the golden tests.
var recordings = []struct {
	name string
	args []string
	// interrupt, when set, is a line of the verbose output after which the run gets SIGINT.
	interrupt string
}{
	// The reference server ignoring keys: lost answers and bursts executed again.
	{"run.none.json", []string{"--config", "examples/broken/none.yaml", "--trials", "1", "--session", "0123456789ab",
		"examples/scenarios/verdict_only.yaml", "examples/scenarios/burst.yaml", "examples/scenarios/two_keys.yaml", "examples/scenarios/lost_response.yaml"}, ""},
	// The correct server, two trials each: everything passes.
	{"run.correct.json", []string{"--trials", "2", "--session", "0123456789ab",
		"examples/scenarios/verdict_only.yaml", "examples/scenarios/retry_returns_stored_result.yaml", "examples/scenarios/missing_key.yaml"}, ""},
	// A rejected call (a 400 with a problem body), an MCP server that exits at once, and a
	// scenario --fail-fast skips.
	{"run.mixed.json", []string{"--fail-fast", "--trials", "1", "--session", "0123456789ab",
		"internal/reporters/testdata/record/a_rejected.yaml", "internal/reporters/testdata/record/b_skipped.yaml"}, ""},
	{"run.errored.json", []string{"--trials", "1", "--session", "0123456789ab", "internal/reporters/testdata/record/c_errors.yaml"}, ""},
	// A service that exits before it is ready.
	{"run.nostart.json", []string{"--config", "internal/reporters/testdata/record/nostart.yaml", "internal/reporters/testdata/record/b_skipped.yaml"}, ""},
	// Ctrl-C during the second trial of the second scenario (after its first call line), its call
	// in flight.
	{"run.interrupted.json", []string{"-v", "--session", "0123456789ab", "internal/reporters/testdata/record/interrupt"}, "second trial t1 "},
}

// TestRecord re-records the runs with -record; otherwise it only checks they are there.
func TestRecord(t *testing.T) {
	var bin string
	if *record {
		bin = filepath.Join(t.TempDir(), "idemtest")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build idemtest: %v\n%s", err, out)
		}
	}
	for _, rc := range recordings {
		t.Run(rc.name, func(t *testing.T) {
			path := filepath.Join("testdata", rc.name)
			if !*record {
				if _, err := os.Stat(path); err != nil {
					t.Fatalf("%v (go test ./internal/reporters -run TestRecord -record)", err)
				}
				return
			}
			out, _ := filepath.Abs(path)
			args := append([]string{"run", "--no-color", "--json", out}, rc.args...)
			cmd := exec.Command(bin, args...)
			cmd.Dir = filepath.Join("..", "..")
			cmd.Env = append(os.Environ(), "GITHUB_ACTIONS=", "GITHUB_STEP_SUMMARY=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var seen bytes.Buffer
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				seen.WriteString(sc.Text() + "\n")
				if rc.interrupt != "" && strings.Contains(sc.Text(), rc.interrupt) {
					_ = cmd.Process.Signal(os.Interrupt)
				}
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if err != nil && !(errors.As(err, &exit) && (exit.ExitCode() == 1 || rc.interrupt != "" && exit.ExitCode() == 130)) {
				t.Fatalf("idemtest %s: %v\n%s%s", strings.Join(args, " "), err, seen.String(), stderr.String())
			}
		})
	}
}

// recordedReport reads a report recorded from a real run.
func recordedReport(t *testing.T, name string) *runner.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("%v (go test ./internal/reporters -run TestRecord -record)", err)
	}
	rep, err := ReadJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestRecordedGolden renders every recorded run with every reporter, and checks that the JSON
// report reads back into the run it describes: written again, it is the recording.
func TestRecordedGolden(t *testing.T) {
	for _, rc := range recordings {
		base := strings.TrimSuffix(rc.name, ".json")
		t.Run(base, func(t *testing.T) {
			rep := recordedReport(t, rc.name)
			var js, txt, junit, gh, md bytes.Buffer
			if err := WriteJSON(&js, rep, "dev"); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(filepath.Join("testdata", rc.name))
			if !bytes.Equal(js.Bytes(), want) {
				t.Errorf("the JSON report does not read back into the same run:\n%s", lineDiff(string(want), js.String()))
			}
			Terminal(&txt, rep, TerminalOptions{})
			golden(t, base+".txt", txt.Bytes())
			if err := WriteJUnit(&junit, rep); err != nil {
				t.Fatal(err)
			}
			golden(t, base+".junit.xml", junit.Bytes())
			validateJUnit(t, junit.Bytes())
			GitHub(&gh, rep, "")
			golden(t, base+".github.txt", gh.Bytes())
			if err := StepSummary(&md, rep); err != nil {
				t.Fatal(err)
			}
			golden(t, base+".summary.md", md.Bytes())
		})
	}
}

// lineDiff shows the first line where two texts differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n- %.200s\n+ %.200s", i+1, al[i], bl[i])
		}
	}
	return "lengths differ"
}

// TestJSONFieldsDocumented: every field name the recorded reports hold is in the README's table
// of the JSON report, so the documented format cannot drift from the written one.
func TestJSONFieldsDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "### The JSON report")
	section, _, _ = strings.Cut(section, "\n## ")
	fields := map[string]bool{}
	var walk func(v any, inAnswer bool)
	walk = func(v any, inAnswer bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !inAnswer {
					fields[k] = true
				}
				// Arguments, answers and service output are the server's and the scenario's own.
				walk(e, inAnswer || k == "arguments" || k == "answer" || k == "service_output")
			}
		case []any:
			for _, e := range x {
				walk(e, inAnswer)
			}
		}
	}
	for _, rc := range recordings {
		b, err := os.ReadFile(filepath.Join("testdata", rc.name))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		walk(v, false)
	}
	for f := range fields {
		if !strings.Contains(section, "`"+f+"`") && !strings.Contains(section, "`"+f+"[]") && !strings.Contains(section, "."+f+"[]`") {
			t.Errorf("the JSON report's field %q is not in the README's table (### The JSON report)", f)
		}
	}
}
