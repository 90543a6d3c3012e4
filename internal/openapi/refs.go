package openapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemtest/idemtest/internal/netguard"
	"github.com/idemtest/idemtest/internal/regularfile"
)

// refReader is the one way a document's external $refs are read (DESIGN §13: what comes from
// elsewhere is data). A document fetched over the network references only documents of its
// own origin (same scheme, host and port), fetched through the outbound policy; it never names
// a local file. A local document references files under its own directory (symlinks resolved,
// so neither "../" nor a link leads out), regular files only, and http(s) documents through the
// outbound policy. Every read is cancelled with ctx and counts against one byte budget shared
// by the whole load, so a document and all its references together stay under maxSpecBytes.
type refReader struct {
	ctx    context.Context
	policy *netguard.Policy
	// origin is set for a fetched document: "scheme://host:port".
	origin string
	// dir is set for a local document: its directory, symlinks resolved; lexDir is the same
	// directory as written, before symlinks are resolved.
	dir, lexDir string
	// budget is what is left of maxSpecBytes for the references still to read.
	budget int64
}

// RefError is a $ref that idemtest refuses to read, or could not read.
type RefError struct {
	// Ref is the reference, resolved against the document that holds it.
	Ref string
	// Reason says why, and what to do.
	Reason string
	// Err is the underlying error, nil for a refusal by rule.
	Err error
}

func (e *RefError) Error() string { return fmt.Sprintf("$ref %s: %s", e.Ref, e.Reason) }

func (e *RefError) Unwrap() error { return e.Err }

func newRefReader(ctx context.Context, policy *netguard.Policy, base *url.URL, used int) (*refReader, error) {
	r := &refReader{ctx: ctx, policy: policy, budget: maxSpecBytes - int64(used)}
	switch {
	case base == nil:
	case base.Scheme == "http" || base.Scheme == "https":
		r.origin = origin(base)
	case base.Scheme == "" || base.Scheme == "file":
		dir, err := filepath.EvalSymlinks(filepath.Dir(filepath.FromSlash(base.Path)))
		if err != nil {
			return nil, err
		}
		r.dir, r.lexDir = dir, filepath.Dir(filepath.FromSlash(base.Path))
	}
	return r, nil
}

func origin(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + host + ":" + port
}

// read is the loader's ReadFromURIFunc.
func (r *refReader) read(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	shown := u.Redacted()
	isHTTP := u.Scheme == "http" || u.Scheme == "https"
	switch {
	case r.origin != "":
		// The loader leaves an absolute path ("/schemas/a.yaml") without scheme or host:
		// from a fetched document it names a path on the same server.
		if u.Scheme == "" && u.Host == "" {
			o, _ := url.Parse(r.origin)
			u = &url.URL{Scheme: o.Scheme, Host: u.Host, Path: u.Path, RawQuery: u.RawQuery}
			u.Host = o.Host
			shown = u.Redacted()
			isHTTP = true
		}
		if !isHTTP || origin(u) != r.origin {
			return nil, &RefError{Ref: shown, Reason: "refused: a document fetched from " + r.origin + " may reference only documents of the same origin (same scheme, host and port); download the documents and load them from one directory"}
		}
		return r.fetch(u, shown)
	case isHTTP:
		if r.dir == "" {
			return nil, &RefError{Ref: shown, Reason: "refused: a document read from memory references nothing outside itself"}
		}
		return r.fetch(u, shown)
	case u.Scheme != "" && u.Scheme != "file" || u.Host != "" && u.Host != "localhost":
		return nil, &RefError{Ref: shown, Reason: "refused: only files and http(s) URLs are read"}
	case r.dir == "":
		return nil, &RefError{Ref: shown, Reason: "refused: a document read from memory references nothing outside itself"}
	}
	return r.readFile(filepath.FromSlash(u.Path), shown)
}

func (r *refReader) fetch(u *url.URL, shown string) ([]byte, error) {
	b, err := fetch(r.ctx, r.policy, u, r.budget)
	if err != nil {
		return nil, &RefError{Ref: shown, Reason: err.Error(), Err: err}
	}
	r.budget -= int64(len(b))
	return b, nil
}

// readFile reads a referenced file: under the document's directory, a regular file, within
// the budget. A refused file is never opened, so nothing of it can reach an error message.
func (r *refReader) readFile(name, shown string) ([]byte, error) {
	name = filepath.Clean(name)
	outside := &RefError{Ref: shown, Reason: "refused: outside the document's directory " + r.lexDir + "; a document references only files under its own directory"}
	if !under(r.lexDir, name) && !under(r.dir, name) {
		return nil, outside
	}
	real, err := filepath.EvalSymlinks(name)
	if err != nil {
		return nil, &RefError{Ref: shown, Reason: "cannot read: " + unwrapPath(err).Error(), Err: err}
	}
	if !under(r.dir, real) {
		outside.Reason = "refused: a symbolic link leads outside the document's directory " + r.lexDir + "; a document references only files under its own directory"
		return nil, outside
	}
	b, err := readRegular(r.ctx, real, r.budget)
	if err != nil {
		return nil, &RefError{Ref: shown, Reason: err.Error(), Err: err}
	}
	r.budget -= int64(len(b))
	return b, nil
}

// under reports whether name is dir or inside it (both clean, absolute).
func under(dir, name string) bool {
	rel, err := filepath.Rel(dir, name)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// errNotRegular is a file that is not a regular file: a FIFO would block, a device never ends.
var errNotRegular = errors.New("refused: not a regular file")

// readRegular reads at most limit bytes of the regular file name. Anything else is refused
// before it is opened (a FIFO would wait for a writer, a device never ends), and checked again
// once open. The file is opened without blocking, so a FIFO swapped
// in after the check cannot hang the read; a read still under way is abandoned when ctx ends.
func readRegular(ctx context.Context, name string, limit int64) ([]byte, error) {
	f, _, err := regularfile.Open(name)
	var nr *regularfile.NotRegularError
	if errors.As(err, &nr) {
		return nil, fmt.Errorf("%w (%s)", errNotRegular, regularfile.Kind(nr.Mode))
	}
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	b, err := regularfile.ReadAll(ctx, f, limit)
	var tl *regularfile.TooLargeError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &tl):
		return nil, fmt.Errorf("larger than %d bytes (a document and its references together are read up to %d bytes)", limit, maxSpecBytes)
	case err != nil:
		return nil, unwrapPath(err)
	}
	return b, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
