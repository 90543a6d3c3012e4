package scenario

import (
	"errors"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/idemtest/idemtest/internal/netguard"
)

// DSNHosts returns a PostgreSQL connection string's hosts as URLs for CheckHost: the URL form
// (postgres://u@h1:5432,h2/db) and the keyword form (host=h1,h2 port=5432). Unix socket
// directories are local and left out.
func DSNHosts(dsn string) []string {
	var hosts []string
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if j := strings.IndexAny(rest, "/?"); j >= 0 {
			rest = rest[:j]
		}
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[at+1:]
		}
		hosts = strings.Split(rest, ",")
	} else {
		for _, field := range strings.Fields(dsn) {
			if v, ok := strings.CutPrefix(field, "host="); ok {
				hosts = strings.Split(strings.Trim(v, "'"), ",")
			}
		}
	}
	var out []string
	for _, h := range hosts {
		if h == "" || strings.HasPrefix(h, "/") || strings.HasPrefix(h, "%2F") || strings.HasPrefix(h, "%2f") {
			continue
		}
		out = append(out, "postgres://"+h)
	}
	return out
}

// CheckHost checks the host of a URL (which may contain {{ }} and {tool}) against the loopback
// rule and the allowed hosts (netguard's policy). A host that is itself templated is checked
// when it is rendered, before the trial's first call.
func CheckHost(rawURL string, allowed []string) *netguard.HostError {
	tpl := regexp.MustCompile(`\{\{.*?\}\}`)
	if h := hostOf(rawURL); h != "" && !tpl.MatchString(h) {
		u := tpl.ReplaceAllString(strings.ReplaceAll(rawURL, "{tool}", "tool"), "0")
		return checkHost(u, allowed)
	}
	return nil
}

func hostOf(raw string) string {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if h, _, err := net.SplitHostPort(rest); err == nil {
		return h
	}
	return rest
}

func checkHost(rawURL string, allowed []string) *netguard.HostError {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	var he *netguard.HostError
	if errors.As(netguard.New(allowed).Check(u.Hostname(), u.Port()), &he) {
		return he
	}
	return nil
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool { return netguard.IsLoopback(host) }
