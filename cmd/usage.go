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

// completionExamples are the examples of "completion SHELL": how each shell loads the script.
var completionExamples = map[string]string{
	"bash":       "  source <(idemtest completion bash)\n  idemtest completion bash > /etc/bash_completion.d/idemtest",
	"zsh":        "  idemtest completion zsh > \"${fpath[1]}/_idemtest\"",
	"fish":       "  idemtest completion fish > ~/.config/fish/completions/idemtest.fish",
	"powershell": "  idemtest completion powershell | Out-String | Invoke-Expression",
}

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
		c.Example = "  source <(idemtest completion bash)\n  idemtest completion zsh > \"${fpath[1]}/_idemtest\""
		for _, sh := range c.Commands() {
			sh.Example = completionExamples[sh.Name()]
		}
	}
}

// verboseFirst handles -v written before the command. -v is --verbose wherever it is defined:
// before a command that has it (run, report merge: every call with its key and outcome) it
// means that, as after it. Alone, with nothing but flags after it, or before a command without
// it, it is a usage error that says where -v goes and that the version is --version.
func verboseFirst(root *cobra.Command, args []string) ([]string, error) {
	i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	if i < 0 {
		i = len(args)
	}
	if !slices.Contains(args[:i], "-v") {
		return args, nil
	}
	if i == len(args) {
		return nil, errors.New("-v is --verbose, for a command that has it (idemtest run -v); for the version: idemtest --version")
	}
	sub, _, err := root.Find(args[i:])
	if err != nil || sub == root {
		return args, nil // an unknown command: cobra says so
	}
	if f := sub.Flags().ShorthandLookup("v"); f != nil && f.Value.Type() == "bool" {
		// After the command's own words (report merge), wherever flags stand between them.
		end, words := i, strings.Fields(sub.CommandPath())[1:]
		for j := i; j < len(args) && len(words) > 0; j++ {
			if args[j] == words[0] {
				words, end = words[1:], j
			}
		}
		out := slices.Concat(slices.DeleteFunc(slices.Clone(args[:i]), func(a string) bool { return a == "-v" }), args[i:end+1], []string{"-v"}, args[end+1:])
		return out, nil
	}
	return nil, fmt.Errorf("-v is --verbose, and %s has none; for the version: idemtest --version, for every call of a run: idemtest run -v", sub.CommandPath()[len(root.Name())+1:])
}
