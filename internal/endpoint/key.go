package endpoint

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// CheckKey refuses an idempotency key that cannot be sent faithfully or shown safely: invalid
// UTF-8, control characters (C0, DEL, C1) and bidirectional formatting characters. Every path
// that sends a key (a call, a prepared copy, a single-packet burst, MCP) checks it here, so a key
// is refused or sent the same way whichever path carries it.
func CheckKey(key string) error {
	if !utf8.ValidString(key) {
		return fmt.Errorf("idempotency key %q is not valid UTF-8", key)
	}
	for i, r := range key {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Errorf("idempotency key %q has a control character (%U) at byte %d; keys must be printable", key, r, i)
		}
	}
	return nil
}
