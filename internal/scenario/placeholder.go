package scenario

import "strings"

// Placeholder starts every value idemtest init could not choose: "TODO(string)", a number's
// "TODO(number)", an argument list's "TODO(args)". A user replaces it with a value the server
// accepts; a scenario that still holds one does not load, so a generated step never passes on
// a placeholder's refusal. The form is one no real argument takes by accident.
const Placeholder = "TODO("

// IsPlaceholder reports whether s is, or starts with, a placeholder init wrote ("TODO(string)"
// and "TODO(string)_{{ session }}" both are).
func IsPlaceholder(s string) bool {
	rest, ok := strings.CutPrefix(s, Placeholder)
	if !ok {
		return false
	}
	end := strings.IndexByte(rest, ')')
	if end <= 0 {
		return false
	}
	for _, c := range rest[:end] {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
