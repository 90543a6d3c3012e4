package reporters

import (
	"strings"

	"github.com/idemtest/idemtest/internal/result"
)

// Rerun is the command that runs trial t of scenario r again, alone and with the same session
// (so the same keys and the same {{ session }} values), written to be copied into a shell as
// it is: "idemtest run --config CONFIG FILE --session SESSION --trials 1". The config is named
// whenever one was merged in, found or given, so that the rerun cannot silently pick up another
// idemtest.yaml and talk to another server; paths are as the run was given them (or, for a
// config found by searching, relative to the working directory), so the command works from the
// directory the run was started in. Every format that offers a rerun uses this one command.
func Rerun(r *result.ScenarioResult, t *result.Trial) string {
	args := []string{"idemtest", "run"}
	if r.Scenario.Config != "" {
		args = append(args, "--config", ShellQuote(pathArg(r.Scenario.Config)))
	}
	args = append(args, ShellQuote(pathArg(r.Scenario.File)), "--session", ShellQuote(t.Session), "--trials", "1")
	return strings.Join(args, " ")
}

// ShellQuote returns s as one word of a POSIX shell command line: unchanged when it is made of
// characters no shell treats specially, else in single quotes (a quote inside written '\”).
// The empty word is ” so that it is not dropped.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, needsQuote) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// needsQuote reports whether a shell could read r as something other than itself.
func needsQuote(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("@%+=:,./_-", r)
}

// pathArg is a path as an argument: one that starts with - gets ./ in front, so that it is not
// read as a flag (quoting does not prevent that).
func pathArg(p string) string {
	if strings.HasPrefix(p, "-") {
		return "./" + p
	}
	return p
}
