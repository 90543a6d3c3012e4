package cmd

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/check/battery"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/reportschema"
)

// commands is every command of the tree under root, root included, as --help reaches them.
func commands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		out = append(out, commands(c)...)
	}
	return out
}

func testRoot() *cobra.Command {
	io, _, _ := iostreams.Test()
	return NewCmdRoot(&Factory{IO: io, Version: "test"})
}

// TestEveryCommandHasAnExample: the help of every command, subcommands and cobra's completion
// commands included, shows how it is called.
func TestEveryCommandHasAnExample(t *testing.T) {
	for _, c := range commands(testRoot())[1:] {
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", c.CommandPath())
		}
	}
}

// TestHelpFlagsOneMeaning: -v is --verbose wherever it is defined, the root's --version has no
// shorthand, and --no-color is one global flag: in every command's help once, under Global
// Flags (the root's own help lists it under Flags).
func TestHelpFlagsOneMeaning(t *testing.T) {
	root := testRoot()
	if f := root.Flags().Lookup("version"); f == nil || f.Shorthand != "" {
		t.Errorf("root --version: %+v, want a flag without shorthand", f)
	}
	for _, c := range commands(root) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Shorthand == "v" && f.Name != "verbose" {
				t.Errorf("%s: -v is --%s", c.CommandPath(), f.Name)
			}
		})
		if c.LocalNonPersistentFlags().Lookup("no-color") != nil {
			t.Errorf("%s defines its own --no-color", c.CommandPath())
		}
		if c == root || c.Hidden || c.IsAdditionalHelpTopicCommand() { // a topic is text: no flags
			continue
		}
		io, out, _ := iostreams.Test()
		Execute(context.Background(), &Factory{IO: io, Version: "test"}, append(strings.Fields(c.CommandPath())[1:], "--help"))
		help := out.String()
		if n := strings.Count(help, "--no-color"); n != 1 {
			t.Errorf("%s --help shows --no-color %d times:\n%s", c.CommandPath(), n, help)
		}
		if !regexp.MustCompile(`(?s)Global Flags:\n.*--no-color`).MatchString(help) {
			t.Errorf("%s --help: --no-color not under Global Flags:\n%s", c.CommandPath(), help)
		}
	}
}

// TestEnumeratedFlagsComplete: a flag whose help lists values of one of idemtest's fixed
// vocabularies (the checks, the profiles, the fail-on modes, the report kinds, the fault kinds),
// two of them one after the other ("ietf (…), stripe (…) or lenient"), completes them; a new
// such flag without completion fails here.
func TestEnumeratedFlagsComplete(t *testing.T) {
	vocabularies := [][]string{battery.IDs, battery.Profiles, {baseline.FailOnNew, baseline.FailOnAny}, reportschema.Kinds, faultKinds}
	listed := func(usage string, vocab []string) bool {
		for _, a := range vocab {
			for _, b := range vocab {
				// a, its backquotes and a note in brackets, then ", " or " or ", then b.
				re := "(^|[^\\w-])`?" + regexp.QuoteMeta(a) + "`?( *\\([^)]*\\))?(, *| or )`?" + regexp.QuoteMeta(b) + "($|[^\\w-])"
				if a != b && regexp.MustCompile(re).MatchString(usage) {
					return true
				}
			}
		}
		return false
	}
	checked := 0
	for _, c := range commands(testRoot()) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			for _, vocab := range vocabularies {
				if !listed(f.Usage, vocab) {
					continue
				}
				checked++
				if _, ok := c.GetFlagCompletionFunc(f.Name); !ok {
					t.Errorf("%s --%s lists fixed values (%q) but completes none", c.CommandPath(), f.Name, f.Usage)
				}
			}
		})
	}
	if checked < 6 {
		t.Errorf("only %d flags name fixed values: the walk is not finding them", checked)
	}
}

// TestValueCompletion drives cobra's hidden __complete command, as the shell scripts do, for
// every flag with fixed values: each offers its values (after a comma, for a list), never
// file names.
func TestValueCompletion(t *testing.T) {
	ids := strings.Join(battery.IDs, "\n") + "\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"check --only", []string{"check", "--only", ""}, ids + ":4\n"},
		{"check --only after a comma", []string{"check", "--only", "replay,con"}, "replay,concurrent\n:4\n"},
		{"check --skip", []string{"check", "--skip", "mis"}, "mismatch-in-flight\nmissing-key\n:4\n"},
		{"check --profile", []string{"check", "--profile", ""}, "ietf\nstripe\nlenient\n:4\n"},
		{"run --fail-on", []string{"run", "--fail-on", ""}, "new\nany\n:4\n"},
		{"check --fail-on", []string{"check", "--fail-on", "a"}, "any\n:4\n"},
		{"sweep --fail-on", []string{"sweep", "--fail-on", ""}, "new\nany\n:4\n"},
		{"report merge --fail-on", []string{"report", "merge", "--fail-on", ""}, "new\nany\n:4\n"},
		{"schema --report", []string{"schema", "--report", ""}, strings.Join(reportschema.Kinds, "\n") + "\n:4\n"},
		{"proxy --fault-kinds", []string{"proxy", "--fault-kinds", "lose-response,"}, "lose-response,timeout\nlose-response,error:503\nlose-response,delay:2s\n:4\n"},
		{"proxy --fault", []string{"proxy", "--fault", "t"}, "timeout:\n:6\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, out, errOut := iostreams.Test()
			code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, append([]string{"__complete"}, tc.args...))
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := out.String(); got != tc.want {
				t.Errorf("completions %q, want %q", got, tc.want)
			}
		})
	}
}
