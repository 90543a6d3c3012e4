package safejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// Hostile reports a character that can change what a terminal shows, or where a log line ends:
// C0 and C1 controls and DEL, bidirectional formatting, line and paragraph separators. It is the
// one definition every escaping of idemtest uses.
func Hostile(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// Marshal is json.Marshal with the hostile characters of string values escaped.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return escapeStrings(b), nil
}

// Encode writes v as one JSON document, indented by indent ("" for compact), and a newline, with
// the hostile characters of string values escaped.
func Encode(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeStrings(buf.Bytes()))
	return err
}

// escapeStrings rewrites the string tokens of the valid JSON b, and only them: a hostile
// character becomes \uNNNN and a byte that is not UTF-8 becomes \ufffd. The bytes between
// tokens (the indentation's newlines) are copied as they are. b is returned unchanged, without a
// copy, when it has nothing to escape.
func escapeStrings(b []byte) []byte {
	i := firstSuspect(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	inString := false
	start := 0 // b[start:i] is still to copy
	for i = 0; i < len(b); {
		c := b[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			i++
			continue
		}
		switch {
		case c == '\\':
			i += 2 // an escape: its other bytes (\uNNNN's digits) are ASCII and need nothing
			continue
		case c == '"':
			inString = false
			i++
			continue
		case c >= 0x20 && c < 0x7f:
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = append(out, b[start:i]...)
			out = append(out, `\ufffd`...)
		case Hostile(r):
			out = append(out, b[start:i]...)
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			i += size
			continue
		}
		i += max(size, 1)
		start = i
	}
	return append(out, b[start:]...)
}

// firstSuspect is the index of the first byte that may need escaping inside a string (DEL, a
// control other than JSON whitespace, or a non-ASCII byte), -1 when there is none: most
// documents are ASCII and take the fast path.
func firstSuspect(b []byte) int {
	return bytes.IndexFunc(b, func(r rune) bool {
		return r >= 0x7f || (r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != ' ')
	})
}
