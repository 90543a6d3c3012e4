package cmd

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemtest/idemtest/internal/assert"
)

// flagSynonyms are the flags people reach for under another tool's name.
var flagSynonyms = map[string]string{
	"retries": "trials", "retry": "trials", "repeat": "trials", "count": "trials", "iterations": "trials",
	"jobs": "parallel", "concurrency": "parallel", "workers": "parallel",
	"tags": "tag", "filter": "run", "junit-xml": "junit", "xml": "junit",
}

// reportFlags are the flags that take a report's file, or - for standard output.
var reportFlags = map[string]bool{"json": true, "junit": true, "html": true}

// flagError says how a report flag without its file is written (--json -), and adds a did-you-mean to an unknown flag: the command's flag names closest to it
// (a typo) or the one meant under another tool's name.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if flag, ok := strings.CutPrefix(msg, "flag needs an argument: --"); ok && reportFlags[flag] {
		return fmt.Errorf("%s: --%s takes a FILE, or - for standard output (--%s -)", msg, flag, flag)
	}
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := suggestFlag(name, names); s != "" {
		return errors.New(msg + "\n\nDid you mean this?\n\t--" + s)
	}
	return err
}

func suggestFlag(name string, names []string) string {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	if s, ok := flagSynonyms[name]; ok && has[s] {
		return s
	}
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	for _, n := range names {
		d := assert.Distance(name, n)
		if d <= 2 || (len(name) >= 3 && strings.HasPrefix(n, name)) {
			cands = append(cands, cand{n, d})
		}
	}
	if len(cands) == 0 {
		return ""
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	return cands[0].name
}

// completionShells are the shells cobra writes completion scripts for.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// strictCompletion makes "completion SHELL" for a shell cobra does not know (tcsh) a usage
// error, instead of the help and exit 0 that a script would take for success.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &exitError{ExitUsage, fmt.Errorf("completion: unknown shell %q: idemtest completes %s", args[0], strings.Join(completionShells, ", "))}
			}
			return nil
		}
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}

// verboseFirst handles -v written before the command. Alone, or with nothing but flags after it,
// -v is --version. Before a command that has -v (run: every call with its key and outcome) it
// means that, as after it; before any other command it is an error that says where -v goes.
func verboseFirst(root *cobra.Command, args []string) ([]string, error) {
	i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	if i < 0 || !slices.Contains(args[:i], "-v") {
		return args, nil
	}
	sub, _, err := root.Find(args[i : i+1])
	if err != nil || sub == root {
		return args, nil
	}
	if f := sub.Flags().ShorthandLookup("v"); f != nil && f.Value.Type() == "bool" {
		out := slices.Concat(slices.DeleteFunc(slices.Clone(args[:i]), func(a string) bool { return a == "-v" }), args[i:i+1], []string{"-v"}, args[i+1:])
		return out, nil
	}
	return nil, fmt.Errorf("-v before a command is --version, and %s has no -v; for the version: idemtest --version, for every call of a run: idemtest run -v", sub.Name())
}
