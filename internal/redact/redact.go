package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/idemtest/idemtest/internal/safejson"
)

// MinLen is the shortest value hidden: shorter ones are too short to be a credential and
// would mask ordinary text (a digit, a word) all over a report.
const MinLen = 4

// Mask is what a password without a name of its own is shown as.
const Mask = "***"

// Secrets is a set of values to hide, each with what to show instead. The zero value is empty
// and ready to use; it is not safe for concurrent Add.
type Secrets struct {
	list []secret
}

type secret struct{ value, shown string }

// Add records value, shown as shown (such as "${TOKEN}"). Values shorter than MinLen are not
// recorded.
func (s *Secrets) Add(value, shown string) {
	if s == nil || len(value) < MinLen || value == shown {
		return
	}
	for _, x := range s.list {
		if x.value == value {
			return
		}
	}
	s.list = append(s.list, secret{value, shown})
}

// Merge adds every secret of o.
func (s *Secrets) Merge(o *Secrets) {
	if o == nil {
		return
	}
	for _, x := range o.list {
		s.Add(x.value, x.shown)
	}
}

// userinfo matches the user:password@ part of a URL anywhere in a text.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:"'<>]*):([^/?#@\s"'<>]+)@`)

// dsnPassword matches password=VALUE in a key=value DSN.
var dsnPassword = regexp.MustCompile(`(?i)\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)`)

// AddURL records the password of every URL in s (user:password@host), shown as Mask.
func (s *Secrets) AddURL(text string) {
	for _, m := range userinfo.FindAllStringSubmatch(text, -1) {
		s.Add(m[2], Mask)
		if p, err := url.PathUnescape(m[2]); err == nil {
			s.Add(p, Mask)
		}
	}
}

// AddDSN records the password of a database DSN, in URL or key=value form, shown as Mask.
func (s *Secrets) AddDSN(dsn string) {
	s.AddURL(dsn)
	for _, m := range dsnPassword.FindAllStringSubmatch(dsn, -1) {
		v := m[1]
		if len(v) >= 2 && v[0] == '\'' {
			v = strings.ReplaceAll(v[1:len(v)-1], `\'`, `'`)
		}
		s.Add(v, Mask)
	}
}

// Redactor replaces secrets in text. It is safe for concurrent use; a nil Redactor still masks
// URL passwords.
type Redactor struct {
	r *strings.Replacer
}

// New returns a Redactor for the secrets of every set.
func New(sets ...*Secrets) *Redactor {
	var all Secrets
	for _, s := range sets {
		all.Merge(s)
	}
	// Each secret is also looked for as the encodings of a report write it (variants).
	type pair struct{ old, new string }
	seen := map[string]bool{}
	var pairs []pair
	for _, x := range all.list {
		for _, v := range variants(x.value) {
			if !seen[v] {
				seen[v] = true
				pairs = append(pairs, pair{v, x.shown})
			}
		}
	}
	// Longest first: a secret that contains another is replaced whole.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].old) > len(pairs[j].old) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.old, p.new)
	}
	return &Redactor{r: strings.NewReplacer(args...)}
}

// variants are the forms v takes in what idemtest writes: as is, as each writer escapes or
// quotes it, and as one escaping inside another (a JSON value quoted with %q in an explanation,
// which the JUnit report then escapes as XML). Text already escaped (an explanation) is thus
// redacted in the results, and the Writer finds a secret in a report escaped on its own.
func variants(v string) []string {
	seen := map[string]bool{v: true}
	out := []string{v}
	level := []string{v}
	for depth := 0; depth < 2; depth++ {
		var next []string
		for _, s := range level {
			for _, esc := range escapings {
				if e := esc(s); !seen[e] {
					seen[e] = true
					out = append(out, e)
					next = append(next, e)
				}
			}
		}
		level = next
	}
	return out
}

// escapings are the ways the outputs write a string inside their text.
var escapings = []func(string) string{
	// JSON, with and without the HTML escaping of encoding/json (\u003c, \u0026), and with the
	// hostile characters escaped (safejson).
	func(v string) string { return jsonInner(v, true) },
	func(v string) string { return jsonInner(v, false) },
	func(v string) string {
		b, err := safejson.Marshal(v)
		if err != nil {
			return v
		}
		return string(b[1 : len(b)-1])
	},
	// Go %q and %+q (fmt, strconv).
	func(v string) string { q := strconv.Quote(v); return q[1 : len(q)-1] },
	func(v string) string { q := strconv.QuoteToASCII(v); return q[1 : len(q)-1] },
	// XML (JUnit) and HTML: encoding/xml, html.EscapeString, text/template's HTMLEscapeString
	// and html/template's own escaper (&#43; for +, &#34;, &#39;), and JavaScript strings.
	func(v string) string {
		var x strings.Builder
		_ = xml.EscapeText(&x, []byte(v))
		return x.String()
	},
	html.EscapeString, template.HTMLEscapeString, htmlTemplateEscape, template.JSEscapeString,
	// URL query and path escaping, and the %-escaping of GitHub workflow commands.
	url.QueryEscape, url.PathEscape, workflowEscape,
	func(v string) string { return strings.ReplaceAll(v, "%", "%25") },
	// Markdown (the job summary): a backslash before each punctuation character, or its
	// table cells' escaping on one line.
	markdownEscape,
	func(v string) string { return mdCell(strings.Join(strings.Fields(v), " ")) },
	// The terminal's escaping of control, bidi and separator characters.
	terminalEscape,
}

func jsonInner(v string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if enc.Encode(v) != nil {
		return v
	}
	t := strings.TrimSuffix(b.String(), "\n")
	return t[1 : len(t)-1]
}

var mdCell = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "\\|", "*", "\\*", "_", "\\_", "`", "\\`", "[", "\\[", "]", "\\]").Replace

// terminalEscape is how the terminal and the logs show a character that could drive a terminal
// (reporters.Escape): as \xNN or \uNNNN.
func terminalEscape(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case !safejson.Hostile(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// htmlTemplateEscape is how html/template writes text in an element or a quoted attribute.
var htmlTemplateEscape = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;").Replace

// workflowEscape is how a GitHub Actions workflow command's message is escaped.
var workflowEscape = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace

func markdownEscape(v string) string {
	var b strings.Builder
	for _, r := range v {
		if r < 0x80 && strings.ContainsRune("\\`*_{}[]()#+-.!|<>&~\"'", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// String returns s with every secret and every URL password replaced.
func (r *Redactor) String(s string) string {
	if r != nil && r.r != nil {
		s = r.r.Replace(s)
	}
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}:"+Mask+"@")
	}
	return s
}

// Bytes is String for a byte slice.
func (r *Redactor) Bytes(b []byte) []byte {
	return []byte(r.String(string(b)))
}

// Writer returns a writer that redacts each Write before passing it to w. A secret split across
// two writes is not found: callers write whole strings (a line, a report) at a time.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CredentialHeaders are the HTTP headers whose values are credentials wherever they are seen:
// the proxy hides them in what it records, also when a server echoes them in an answer.
var CredentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"}

// AddHeader records the credentials in a value of an HTTP header, shown as Mask: the whole
// value, the token after an authentication scheme ("Bearer abc": abc, "Basic …": the encoded
// pair and its password), and the value of each cookie ("a=b; c=d": b and d; a Set-Cookie's
// attributes are not credentials).
func (s *Secrets) AddHeader(name, value string) {
	value = strings.TrimSpace(value)
	s.Add(value, Mask)
	switch strings.ToLower(name) {
	case "cookie", "set-cookie":
		pairs := strings.Split(value, ";")
		if strings.EqualFold(name, "set-cookie") {
			pairs = pairs[:1]
		}
		for _, p := range pairs {
			if _, v, ok := strings.Cut(p, "="); ok {
				s.Add(strings.Trim(strings.TrimSpace(v), `"`), Mask)
			}
		}
	default:
		scheme, token, ok := strings.Cut(value, " ")
		if !ok {
			return
		}
		token = strings.TrimSpace(token)
		s.Add(token, Mask)
		if strings.EqualFold(scheme, "basic") {
			if pair, err := base64.StdEncoding.DecodeString(token); err == nil {
				if _, pw, ok := strings.Cut(string(pair), ":"); ok {
					s.Add(pw, Mask)
				}
			}
		}
	}
}

// Value returns v, a decoded JSON value (objects, arrays, strings, numbers, booleans), with
// every secret replaced in its strings and object keys, before any writer quotes or escapes
// them. v itself is not changed: the maps and lists are copied (one may be a scenario's own).
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.String(k)] = r.Value(e)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.Value(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = r.String(e)
		}
		return out
	}
	return v
}
