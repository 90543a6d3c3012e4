package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
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
	// Each secret is also looked for as the encodings of a report write it: JSON and XML
	// escaping, URL escaping, and the %-escaping of GitHub annotations.
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

func variants(v string) []string {
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var x bytes.Buffer
	if xml.EscapeText(&x, []byte(v)) == nil {
		out = append(out, x.String())
	}
	out = append(out, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(v, "%", "%25"))
	return out
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
