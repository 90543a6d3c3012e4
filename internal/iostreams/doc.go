// Package iostreams holds a command's streams and what is known about them: results go to
// Out, progress and errors to ErrOut; whether each is a terminal, and the one place where the
// colour rules (--no-color, NO_COLOR, CLICOLOR_FORCE, TERM=dumb) are decided.
//
//	s := iostreams.System()
//	color := s.ColorEnabled(noColorFlag)
//
//	s, out, errOut := iostreams.Test() // buffers, as if nothing were a terminal
package iostreams
