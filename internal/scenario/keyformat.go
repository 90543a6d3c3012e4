package scenario

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KeyFormats are the named key formats a key spec's format: may give; anything else is a
// template.
var KeyFormats = []string{"uuid", "uuidv7", "ulid"}

// MaxKeyLength bounds a key a format produces.
const MaxKeyLength = 255

// KeyFormat is how the keys idemtest makes look, for servers that accept only some shapes (a
// UUID, a ULID, a fixed length). The zero value is idemtest's own <session>-<index>.
type KeyFormat struct {
	// Name is uuid (v4), uuidv7, ulid, or "" for a template.
	Name string
	// Template, when Name is "", is text with {session}, {index} and {random}; {random} is filled
	// with random lowercase letters and digits so that the key is Length characters long.
	Template string
	Length   int
}

// IsZero reports whether no format was given.
func (f KeyFormat) IsZero() bool { return f.Name == "" && f.Template == "" }

// String is the format as written: uuid, or the template and its length.
func (f KeyFormat) String() string {
	if f.Name != "" {
		return f.Name
	}
	if f.Length > 0 {
		return fmt.Sprintf("%s (length %d)", f.Template, f.Length)
	}
	return f.Template
}

// ParseKeyFormat checks a format: and length: as written; length is 0 when not given.
func ParseKeyFormat(format string, length int) (KeyFormat, error) {
	for _, n := range KeyFormats {
		if format == n {
			if length != 0 {
				return KeyFormat{}, fmt.Errorf("length is for a template; a %s has its own length", n)
			}
			return KeyFormat{Name: n}, nil
		}
	}
	if !strings.Contains(format, "{") {
		return KeyFormat{}, fmt.Errorf("format %q: use uuid, uuidv7, ulid or a template with {random} or {index}, such as \"ik_{random}\" with a length", format)
	}
	if _, ok := templateParts(format); !ok {
		return KeyFormat{}, fmt.Errorf("format %q: a template may use {session}, {index} and {random} only", format)
	}
	if !strings.Contains(format, "{random}") && !strings.Contains(format, "{index}") {
		return KeyFormat{}, fmt.Errorf("format %q: a template needs {random} or {index}, or every call of a trial gets one key", format)
	}
	if length < 0 || length > MaxKeyLength {
		return KeyFormat{}, fmt.Errorf("length %d: want 1 to %d", length, MaxKeyLength)
	}
	if length > 0 && !strings.Contains(format, "{random}") {
		return KeyFormat{}, fmt.Errorf("format %q: a length needs {random}, which fills the key to it", format)
	}
	return KeyFormat{Template: format, Length: length}, nil
}

// Key makes the key of the index-th logical call of a trial whose session is session. A named
// format is random (unique across runs as sessions are); a template fills {random} so the key
// has the format's length (16 random characters without one), and is never longer than the
// length when the fixed parts allow it.
func (f KeyFormat) Key(session string, index int) string {
	switch f.Name {
	case "uuid":
		return uuid4()
	case "uuidv7":
		return uuid7(time.Now())
	case "ulid":
		return ulid(time.Now())
	}
	parts, _ := templateParts(f.Template)
	holes, fixedLen := 0, 0
	idx := strconv.Itoa(index)
	for _, p := range parts {
		switch p {
		case "{random}":
			holes++
		case "{session}":
			fixedLen += len(session)
		case "{index}":
			fixedLen += len(idx)
		default:
			fixedLen += len(p)
		}
	}
	n := 16
	if f.Length > 0 {
		n = max(0, (f.Length-fixedLen)/max(holes, 1))
	}
	var b strings.Builder
	b.Grow(fixedLen + holes*n)
	for _, p := range parts {
		switch p {
		case "{random}":
			b.WriteString(randomText(n))
		case "{session}":
			b.WriteString(session)
		case "{index}":
			b.WriteString(idx)
		default:
			b.WriteString(p)
		}
	}
	out := b.String()
	if f.Length > 0 && len(out) < f.Length {
		out += randomText(f.Length - len(out))
	}
	return out
}

// templateParts splits a key template, in one pass, into its placeholders ({session},
// {index}, {random}) and the literal text between them; ok is false when a brace is not part
// of a placeholder. One pass keeps a template with thousands of placeholders linear, and a
// placeholder is recognised only as written, never one assembled from what another expands to.
func templateParts(t string) (parts []string, ok bool) {
	for t != "" {
		i := strings.IndexAny(t, "{}")
		if i < 0 {
			return append(parts, t), true
		}
		if i > 0 {
			parts = append(parts, t[:i])
			t = t[i:]
		}
		matched := false
		for _, p := range []string{"{session}", "{index}", "{random}"} {
			if strings.HasPrefix(t, p) {
				parts, t, matched = append(parts, p), t[len(p):], true
				break
			}
		}
		if !matched {
			return nil, false
		}
	}
	return parts, true
}

// uuid4 is a random RFC 9562 version 4 UUID.
func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return uuidText(b)
}

// uuid7 is an RFC 9562 version 7 UUID: 48 bits of Unix milliseconds, then random bits.
func uuid7(now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(now.UnixMilli())
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(b[:6], ts[2:])
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return uuidText(b)
}

func uuidText(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// crockford is the base32 alphabet of ULIDs.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulid is a ULID: 48 bits of Unix milliseconds and 80 random bits in 26 Crockford base32
// characters.
func ulid(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(b[:6], ts[2:])
	_, _ = rand.Read(b[6:])
	// 128 bits as 26 characters of 5 bits, the first carrying the top 3.
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	out := make([]byte, 26)
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out)
}

const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"

func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return string(b)
}
