package endpoint

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/idemtest/idemtest/internal/jsonvalue"
)

// maxDetail bounds the server's own words added to an error message, in bytes.
const maxDetail = 300

// Detail adds what the server said about an error to the message, whatever the body's shape:
// plain text ("insufficient funds"), a problem+json detail or title, a message nested under
// error ({"error": {"code", "message"}}) or listed under errors ([{"message"}, …], or a map of
// field to messages), cut to maxDetail bytes. The reporters escape it.
func Detail(msg string, body any) string {
	if d := strings.TrimSpace(errorText(body, 0)); d != "" {
		return msg + ": " + cut(d, maxDetail)
	}
	return msg
}

// messageKeys are the fields an error body states its message in, most telling first.
var messageKeys = []string{"detail", "message", "error_description", "description", "title", "msg", "reason", "error"}

// errorText finds the message in an error body; depth bounds the nesting it follows. It is not
// a jsonvalue walk: it searches named fields (messageKeys) for text, it visits no paths.
func errorText(body any, depth int) string {
	if depth > 3 {
		return ""
	}
	switch b := body.(type) {
	case string:
		return b
	case []any:
		var parts []string
		for _, e := range b {
			if t := strings.TrimSpace(errorText(e, depth+1)); t != "" {
				parts = append(parts, t)
			}
			if len(parts) == 3 {
				break
			}
		}
		if len(b) > len(parts) && len(parts) == 3 {
			parts = append(parts, fmt.Sprintf("… %d in all", len(b)))
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		return objectText(b, depth)
	}
	return ""
}

// objectText is the message of an error object, with its code when it has one of its own.
func objectText(b map[string]any, depth int) string {
	code, _ := b["code"].(string)
	for _, k := range messageKeys {
		var t string
		switch v := b[k].(type) {
		case string:
			t = v
		case map[string]any, []any:
			t = errorText(v, depth+1)
		}
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if k == "error" || code == "" || strings.Contains(t, code) {
			return t
		}
		return t + " (" + code + ")"
	}
	switch errs := b["errors"].(type) {
	case []any:
		return errorText(errs, depth+1)
	case map[string]any:
		// Field errors: {"errors": {"amount": ["must be above 0"]}}.
		var parts []string
		for _, k := range jsonvalue.SortedKeys(errs) {
			if t := strings.TrimSpace(errorText(errs[k], depth+1)); t != "" {
				parts = append(parts, k+": "+t)
			}
		}
		return strings.Join(parts, "; ")
	}
	return code
}

// cut keeps the first n bytes of s, not splitting a character, and says it cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
