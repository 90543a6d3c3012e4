package reporters

// NameWidth is how many characters of a name (a tool, an operation) a table column shows; a
// longer name is clipped by Clip so that one name cannot push every other column off-screen.
const NameWidth = 40

// Clip shortens s to at most max characters (runes, as text/tabwriter counts them) by cutting
// out its middle and putting "…" there: the start and the end of a long name, where names of
// one server usually differ, both stay visible. Clip escaped text (Escape first), so that a
// cut can never split what a terminal would read as one control sequence.
func Clip(s string, max int) string {
	r := []rune(s)
	if len(r) <= max || max < 2 {
		return s
	}
	tail := (max - 1) / 3
	head := max - 1 - tail
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
