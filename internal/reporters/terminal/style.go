package terminal

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles are the terminal styles, built from a renderer bound to the output writer.
type styles struct {
	pass, fail, skip, dim, bold, code lipgloss.Style
}

func newStyles(w io.Writer, color bool) styles {
	r := lipgloss.NewRenderer(w)
	if !color {
		// Plain, stable lines: no colour and no bold or faint either.
		plain := r.NewStyle()
		return styles{pass: plain, fail: plain, skip: plain, dim: plain, bold: plain, code: plain}
	}
	r.SetColorProfile(termenv.ANSI256)
	return styles{
		pass: r.NewStyle().Foreground(lipgloss.Color("2")),
		fail: r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		skip: r.NewStyle().Foreground(lipgloss.Color("3")),
		dim:  r.NewStyle().Faint(true),
		bold: r.NewStyle().Bold(true),
		code: r.NewStyle().Foreground(lipgloss.Color("6")),
	}
}
