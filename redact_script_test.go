//go:build unix

package main

import (
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/rogpeppe/go-internal/testscript"
)

// leakySecrets are the values secretenv sets, each holding a character some output escapes
// (a quote, a backslash, a plus, markup, a newline, non-ASCII) and the marker LEAKMARK, which
// no output may show in any form: a partly hidden secret is found by its marker.
var leakySecrets = map[string]string{
	"TOKEN_QUOTE":  `p"qLEAKMARKword1`,
	"TOKEN_BSLASH": `b\sLEAKMARKword2`,
	"TOKEN_PLUS":   `ab+cdLEAKMARK3`,
	"TOKEN_LT":     `lt<b>LEAKMARK4`,
	"TOKEN_AMP":    `a&b'cLEAKMARK5`,
	"TOKEN_NL":     "nl\nLEAKMARK6\tx",
	"TOKEN_UNI":    "ünï\u202eLEAKMARK7€",
	// Not named like a secret: the scenario's secrets: list marks it.
	"PARTNER": `pa"r+t<n&e\rLEAKMARK8`,
}

// cmdSecretEnv sets the variables of leakySecrets (a newline cannot be written in a script's
// env line).
func cmdSecretEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: secretenv")
	}
	for k, v := range leakySecrets {
		ts.Setenv(k, v)
	}
}

// cmdEchoServe starts an HTTP server that answers every request with what it was sent, the
// credentials included, as a careless server does: {"path", "query" (raw), "authorization",
// "x_api_key", "x_auth_token", "args" (the JSON body)}; with ?fail=1 the same body comes with
// status 500, and with ?count=1 it adds "n", the request's number, so that no two answers are
// equal (every call executes). It sets NAME_URL.
func cmdEchoServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: echoserve NAME")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body any
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = json.Unmarshal(b, &body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("fail") == "1" {
			w.WriteHeader(http.StatusInternalServerError)
		}
		answer := map[string]any{
			"path": r.URL.Path, "query": r.URL.RawQuery, "authorization": r.Header.Get("Authorization"),
			"x_api_key": r.Header.Get("X-Api-Key"), "x_auth_token": r.Header.Get("X-Auth-Token"), "args": body,
		}
		if r.URL.Query().Get("count") == "1" {
			answer["n"] = n.Add(1)
		}
		json.NewEncoder(w).Encode(answer)
	})}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	ts.Setenv(args[0]+"_URL", "http://"+ln.Addr().String())
}

// cmdNoLeak checks that no FILE (or stdout, stderr: the last command's) shows MARKER or a value
// of leakySecrets: in its bytes, nor in any decoded form of them (JSON strings, Go and JSON
// backslash escapes, XML and HTML entities, %-escapes, Markdown escapes, with whitespace runs
// folded), nor one decoded inside another. "noleak MARKER FILE..."
func cmdNoLeak(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: noleak MARKER FILE...")
	}
	marker := args[0]
	for _, name := range args[1:] {
		text := ts.ReadFile(name)
		if text == "" && name != "stderr" {
			ts.Fatalf("noleak: %s is empty: nothing was checked", name)
		}
		for _, view := range decodedViews(text) {
			for _, s := range append([]string{marker}, secretValues()...) {
				if i := strings.Index(view.text, s); i >= 0 {
					ts.Fatalf("noleak: %s shows %q (%s): …%s…", name, s, view.how, view.text[max(0, i-60):min(len(view.text), i+len(s)+60)])
				}
			}
		}
	}
}

// secretValues are the values of leakySecrets, also with whitespace runs folded, and the part of
// each before its marker when that is 4 bytes or more: a report that cuts a long answer short
// may cut a secret before its marker.
func secretValues() []string {
	var out []string
	for _, v := range leakySecrets {
		out = append(out, v, strings.Join(strings.Fields(v), " "))
		if before, _, ok := strings.Cut(v, "LEAKMARK"); ok && len(before) >= 4 {
			out = append(out, before)
		}
	}
	return out
}

type view struct{ how, text string }

// decodedViews are text and its decodings, each applied to the others' results once more.
func decodedViews(text string) []view {
	decoders := []struct {
		how string
		f   func(string) string
	}{
		{"entities", html.UnescapeString},
		{"backslash escapes", unbackslash},
		{"%-escapes", unpercent},
		{"json strings", jsonStrings},
		{"folded whitespace", func(s string) string { return strings.Join(strings.Fields(s), " ") }},
	}
	views := []view{{"raw", text}}
	for round := 0; round < 2; round++ {
		n := len(views)
		for _, v := range views[:n] {
			for _, d := range decoders {
				if t := d.f(v.text); t != v.text {
					views = append(views, view{v.how + ", " + d.how, t})
				}
			}
		}
	}
	return views
}

var backslashed = regexp.MustCompile(`\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[nrt"'\\/` + "`" + `*_{}\[\]()#+\-.!|<>&~])`)

// unbackslash undoes Go, JSON, terminal and Markdown backslash escapes wherever they stand.
func unbackslash(s string) string {
	return backslashed.ReplaceAllStringFunc(s, func(m string) string {
		switch m[1] {
		case 'x', 'u', 'U':
			n, err := strconv.ParseUint(m[2:], 16, 32)
			if err != nil {
				return m
			}
			return string(rune(n))
		case 'n':
			return "\n"
		case 'r':
			return "\r"
		case 't':
			return "\t"
		}
		return m[1:]
	})
}

var percent = regexp.MustCompile(`(%[0-9a-fA-F]{2})+`)

func unpercent(s string) string {
	s = percent.ReplaceAllStringFunc(s, func(m string) string {
		u, err := url.PathUnescape(m)
		if err != nil {
			return m
		}
		return u
	})
	return s
}

// jsonStrings is every string (and object key) of the JSON documents of s, whole or one per
// line (a trace), one per line.
func jsonStrings(s string) string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	docs := []string{s}
	if strings.Count(s, "\n") > 1 {
		docs = append(docs, strings.Split(s, "\n")...)
	}
	for _, d := range docs {
		var v any
		if json.Unmarshal([]byte(d), &v) == nil {
			walk(v)
		}
	}
	return strings.Join(out, "\n")
}
