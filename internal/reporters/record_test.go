package reporters_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/reporters/reporterstest"
)

var record = flag.Bool("record", false, "run idemtest against the reference server and record the JSON reports in testdata/run.*.json")

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
	for _, rc := range reporterstest.Recordings {
		t.Run(rc.Name, func(t *testing.T) {
			path := reporterstest.Testdata(rc.Name)
			if !*record {
				if _, err := os.Stat(path); err != nil {
					t.Fatalf("%v (go test ./internal/reporters -run TestRecord -record)", err)
				}
				return
			}
			out, _ := filepath.Abs(path)
			args := append([]string{"run", "--no-color", "--json", out}, rc.Args...)
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
				if rc.Interrupt != "" && strings.Contains(sc.Text(), rc.Interrupt) {
					_ = cmd.Process.Signal(os.Interrupt)
				}
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if err != nil && !(errors.As(err, &exit) && (exit.ExitCode() == 1 || rc.Interrupt != "" && exit.ExitCode() == 130)) {
				t.Fatalf("idemtest %s: %v\n%s%s", strings.Join(args, " "), err, seen.String(), stderr.String())
			}
		})
	}
}
