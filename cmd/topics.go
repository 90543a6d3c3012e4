package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// exitCodesHelp is the exit-codes help topic: every code any command ends with, and when.
const exitCodesHelp = `Every idemtest command ends with one of these exit codes; a CI gate reads them.

  0    Passed. run: every scenario passed. check, sweep: no ✗ cell. report merge: the
       merged verdict passes. audit: no finding that fails. proxy: the agent's verdict
       passes, or it made no mutating call (nothing judged). validate: the files are
       valid. With --baseline (and --fail-on new, the default with a baseline), 0 also
       when every failure is one the baseline lists.

  1    Failed. run: a scenario failed or errored, a key executed twice, or no call
       reached the server ("is the server running?"). check: a ✗ cell, or every check
       of every tool skipped (nothing was judged). sweep: a run diverged from run 0, or
       run 0 itself executed a key twice. report merge: as the merged command would.
       audit: a double execution, a retry under a fresh key, or a rate over
       --max-hit-rate or --max-conflict-rate. proxy: the
       agent reused no key on a retry, sent a mutating call without a key, or the tool
       server ended. Any command: --require-coverage and a mutating tool untested, a
       baseline failure not in the baseline (or any failure with --fail-on any), or a
       report that could not be written.

  2    Bad usage or invalid input; nothing was sent. An unknown flag or command, a bad
       flag value, a scenario or idemtest.yaml with an error (its file:line:col named),
       a baseline that is not a report of the same command, a report path that is one
       of the command's inputs or another report, report merge of an incomplete set of
       shards (one missing, one twice with different results, mixed N), a trace that
       cannot be read.

  130  Interrupted by Ctrl-C (SIGINT): services stopped, reports written for what
       finished. A second signal kills every process idemtest started at once.
  143  Terminated (SIGTERM), as 130.
  129  Hangup (SIGHUP), as 130.

The proxy ends on a signal by design: its verdict's code (0 or 1) stands instead.`

// NewCmdExitCodes is the "idemtest help exit-codes" topic (a command without an action, which
// cobra lists under Additional help topics).
func NewCmdExitCodes() *cobra.Command {
	return &cobra.Command{
		Use:     "exit-codes",
		Short:   "What each exit code of idemtest means",
		Long:    exitCodesHelp,
		Example: "  idemtest help exit-codes",
	}
}

// topicPage is the man page of a help topic: its name, how to show it, and its text as laid
// out, escaped for roff (a backslash, a line that starts with a control character).
func topicPage(t *cobra.Command, h *doc.GenManHeader) string {
	esc := func(s string) string {
		s = strings.ReplaceAll(s, `\`, `\e`)
		if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
			s = `\&` + s
		}
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, ".nh\n.TH %q %q \"\" %q %q\n\n", "IDEMTEST", h.Section, h.Source, h.Manual)
	fmt.Fprintf(&b, ".SH NAME\nidemtest-%s \\- %s\n\n", t.Name(), esc(t.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n\\fBidemtest help %s\\fP\n\n", t.Name())
	b.WriteString(".SH DESCRIPTION\n.nf\n")
	for _, l := range strings.Split(t.Long, "\n") {
		b.WriteString(esc(l) + "\n")
	}
	b.WriteString(".fi\n\n.SH SEE ALSO\n\\fBidemtest(1)\\fP\n")
	return b.String()
}

// NewCmdMan writes a man page per command into a directory: hidden, for packagers and the
// release (goreleaser runs it; the archives carry the pages).
func NewCmdMan(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write a man page per command (section 1) into DIR",
		Hidden: true,
		Example: `  idemtest man ./man && man -l ./man/idemtest-run.1
  sudo idemtest man /usr/local/share/man/man1`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return &exitError{ExitUsage, err}
			}
			root := c.Root()
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "IDEMTEST", Section: "1", Source: "idemtest " + f.Version, Manual: "idemtest manual"}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return &exitError{ExitFailed, err}
			}
			// cobra leaves help topics out of the tree: each is a page of its own, its text kept
			// as laid out (.nf), reached as "idemtest help TOPIC".
			var topicErr error
			for _, t := range root.Commands() {
				if t.IsAdditionalHelpTopicCommand() {
					page := topicPage(t, header)
					topicErr = errors.Join(topicErr, os.WriteFile(filepath.Join(dir, "idemtest-"+t.Name()+".1"), []byte(page), 0o644))
				}
			}
			if topicErr != nil {
				return &exitError{ExitFailed, topicErr}
			}
			fmt.Fprintf(f.IO.ErrOut, "wrote the man pages to %s\n", dir)
			return nil
		},
	}
}
