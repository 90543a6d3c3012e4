package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy decides which hosts idemtest may connect to: loopback, and the allowed hosts. The zero
// value (and a nil *Policy) allows loopback only.
type Policy struct {
	allow []string
}

// New returns the policy that allows loopback and the given hosts. An entry is a host name or
// address ("payments.internal", "10.0.0.5"), or a host and port ("payments.internal:8443") that
// allows that port only.
func New(allow []string) *Policy {
	return &Policy{allow: append([]string(nil), allow...)}
}

// HostError is a connection the policy refused.
type HostError struct {
	// Host is the host name or address asked for.
	Host string
	// IP is the address it resolved to, when the name passed and the address did not.
	IP string
}

func (e *HostError) Error() string {
	if e.IP != "" {
		return fmt.Sprintf("host %s resolved to %s, which is not loopback and not in allow_hosts", e.Host, e.IP)
	}
	return fmt.Sprintf("host %s is not loopback and not in allow_hosts", e.Host)
}

// RedirectError is a redirect idemtest did not follow.
type RedirectError struct {
	Status int
	// Location is the redirect's target, resolved against the request's URL.
	Location string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server redirected (%d) to %s; idemtest never follows redirects (use the final URL)", e.Status, e.Location)
}

// Redirect returns the error for a redirect response, nil for any other.
func Redirect(resp *http.Response) *RedirectError {
	if resp == nil || resp.StatusCode < 300 || resp.StatusCode >= 400 || resp.Header.Get("Location") == "" {
		return nil
	}
	loc := resp.Header.Get("Location")
	if u, err := resp.Location(); err == nil {
		loc = u.String()
	}
	return &RedirectError{Status: resp.StatusCode, Location: loc}
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListen refuses an address to listen on that is not loopback: the proxy forwards
// duplicates and injects faults, and is not meant to be reachable from elsewhere.
func CheckListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if !IsLoopback(host) {
		return errors.New("not a loopback address (use 127.0.0.1:PORT)")
	}
	return nil
}

// Allowed reports whether host (with port, when known) is in the allowed list.
func Allowed(host, port string, allowed []string) bool {
	host = strings.Trim(host, "[]")
	hostport := host
	if port != "" {
		hostport = net.JoinHostPort(host, port)
	}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if strings.EqualFold(strings.Trim(a, "[]"), host) || strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

// Check checks a host name (and port, "" when unknown) before anything is resolved.
func (p *Policy) Check(host, port string) error {
	if IsLoopback(host) || Allowed(host, port, p.list()) {
		return nil
	}
	return &HostError{Host: strings.Trim(host, "[]")}
}

// CheckURL checks the host of a URL. A URL without a host is left to the client to refuse.
func (p *Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil
	}
	return p.Check(u.Hostname(), u.Port())
}

func (p *Policy) list() []string {
	if p == nil {
		return nil
	}
	return p.allow
}

// DialContext connects as net.Dialer does, if the policy allows it: a host in the allowed list
// is dialled as it resolves; any other must be a loopback name or address, and every address it
// resolves to must be loopback too (checked on the socket before it connects). Unix sockets are
// local and always allowed.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if strings.HasPrefix(network, "unix") {
		return d.DialContext(ctx, network, address)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	if !Allowed(host, port, p.list()) {
		if !IsLoopback(host) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &HostError{Host: host}}
		}
		d.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			return loopbackOnly(host, address)
		}
	}
	return d.DialContext(ctx, network, address)
}

// loopbackOnly refuses a resolved address that is not loopback.
func loopbackOnly(host, address string) error {
	ip, _, err := net.SplitHostPort(address)
	if err != nil {
		ip = address
	}
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() {
		return &HostError{Host: host, IP: ip}
	}
	return nil
}

// Lookup is a pgx LookupFunc that leaves a host name unresolved, so that DialContext sees the
// name the user wrote (an allowed name is matched by name) and resolves it itself.
func (p *Policy) Lookup(_ context.Context, host string) ([]string, error) {
	return []string{host}, nil
}

// Transport returns an HTTP transport that dials through the policy and never uses a proxy
// (duplicates go where the scenario says).
func (p *Policy) Transport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         p.DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// Client returns an HTTP client on Transport that never follows a redirect: the redirect comes
// back as a *RedirectError (wrapped in a *url.Error), before anything is sent to its target.
func (p *Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: p.Transport(), Timeout: timeout, CheckRedirect: RefuseRedirect}
}

// RefuseRedirect is an http.Client CheckRedirect that follows no redirect.
func RefuseRedirect(req *http.Request, _ []*http.Request) error {
	if e := Redirect(req.Response); e != nil {
		return e
	}
	return &RedirectError{Location: req.URL.String()}
}

// Refused reports whether err is a connection or redirect the policy refused.
func Refused(err error) bool {
	var he *HostError
	var re *RedirectError
	return errors.As(err, &he) || errors.As(err, &re)
}
