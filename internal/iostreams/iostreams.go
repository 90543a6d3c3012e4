package iostreams

import (
	"bytes"
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/idemtest/idemtest/internal/redact"
)

// IOStreams are the command's streams and what is known about them. Results go to Out,
// progress and errors to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	OutTTY bool
	ErrTTY bool
	// Getenv reads the environment (NO_COLOR, CLICOLOR_FORCE, GITHUB_ACTIONS).
	Getenv func(string) string
	// NoColor is the --no-color every command accepts (before or after its name).
	NoColor bool
}

// System returns the process's streams. IDEMTEST_FORCE_TTY=1 treats them as terminals, so that
// tests can see what a terminal gets (the live line, colour) through pipes.
func System() *IOStreams {
	force := os.Getenv("IDEMTEST_FORCE_TTY") == "1"
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: force || isatty.IsTerminal(os.Stdout.Fd()), ErrTTY: force || isatty.IsTerminal(os.Stderr.Fd()),
		Getenv: os.Getenv,
	}
}

// Test returns streams backed by buffers, as if nothing were a terminal.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut, Getenv: func(string) string { return "" }}, out, errOut
}

// ColorEnabled applies the usual rules: --no-color (noColorFlag, or the command line's
// --no-color in s.NoColor) and NO_COLOR turn colour off, CLICOLOR_FORCE turns it on, otherwise
// colour only on a terminal that is not TERM=dumb.
func (s *IOStreams) ColorEnabled(noColorFlag bool) bool {
	switch {
	case noColorFlag, s.NoColor, s.Getenv("NO_COLOR") != "":
		return false
	case s.Getenv("CLICOLOR_FORCE") != "" && s.Getenv("CLICOLOR_FORCE") != "0":
		return true
	}
	return s.OutTTY && !s.dumb()
}

// LiveErr reports whether ErrOut takes a live line redrawn in place (carriage return and
// erase-line codes): a terminal, and not TERM=dumb, which has no such codes.
func (s *IOStreams) LiveErr() bool {
	return s.ErrTTY && !s.dumb()
}

func (s *IOStreams) dumb() bool { return s.Getenv("TERM") == "dumb" }

// Redact passes everything written to Out and ErrOut from now on, error messages included,
// through r, so no report or message shows a secret of the scenarios loaded.
func (s *IOStreams) Redact(r *redact.Redactor) {
	s.Out, s.ErrOut = r.Writer(s.Out), r.Writer(s.ErrOut)
}
