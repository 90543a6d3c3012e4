package scenario

import (
	"context"

	"fmt"
	"github.com/idemtest/idemtest/internal/assert"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/idemtest/idemtest/internal/openapi"
)

// openAPI decodes an http endpoint's openapi: source. A file is read now (relative to the file
// that names it), so a document that does not load is a load error at this position; a URL is
// checked as any endpoint URL and read when the endpoint is first used (a service may serve it).
func (f *file) openAPI(h *HTTPEndpoint, n *yaml.Node) {
	h.OpenAPIPos = f.pos(n)
	src := f.str(n, "openapi")
	if src == "" {
		if n.Kind == yaml.ScalarNode {
			f.errf(n, "write openapi: openapi.yaml or openapi: http://127.0.0.1:8080/openapi.json", "openapi must name a file or a URL")
		}
		return
	}
	if openapi.IsURL(src) || strings.Contains(src, "{{") {
		h.OpenAPI = f.template(n, "openapi", configEnv())
		f.checkURL(n, "openapi")
		f.checkServiceRefs(n)
		return
	}
	if !filepath.IsAbs(src) {
		src = filepath.Join(filepath.Dir(f.path), src)
	}
	h.OpenAPI = f.template(n, "openapi", configEnv())
	spec, err := openapi.Load(context.Background(), src, nil)
	if err != nil {
		f.errf(n, "fix the document, or point openapi: at another one", "%v", err)
		return
	}
	h.Spec = spec
}

// adHocOpenAPI is the HTTP endpoint of --openapi: a file is loaded now (a bad document is bad
// input); a URL is checked against the outbound policy and read when the endpoint is used.
func adHocOpenAPI(a AdHoc, lit func(string) *assert.Template) (*HTTPEndpoint, error) {
	h := newHTTPEndpoint()
	h.OpenAPI = lit(a.OpenAPI)
	if a.HTTPURL != "" {
		h.URL = lit(a.HTTPURL)
	}
	if openapi.IsURL(a.OpenAPI) {
		if err := CheckURL(a.OpenAPI); err != nil {
			return nil, fmt.Errorf("--openapi: %w", err)
		}
		if herr := CheckHost(a.OpenAPI, a.AllowHosts); herr != nil {
			return nil, fmt.Errorf("--openapi: %v; allow it with --allow-host %s", herr, herr.Host)
		}
		return h, nil
	}
	spec, err := openapi.Load(context.Background(), a.OpenAPI, nil)
	if err != nil {
		return nil, err
	}
	h.Spec = spec
	return h, nil
}
