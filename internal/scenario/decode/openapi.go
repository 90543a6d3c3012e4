package decode

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/scenario"
)

// openAPI decodes an http endpoint's openapi: source. A file is read now (relative to the file
// that names it), so a document that does not load is a load error at this position; a URL is
// checked as any endpoint URL and read when the endpoint is first used (a service may serve it).
func (f *file) openAPI(h *scenario.HTTPEndpoint, n *yaml.Node) {
	h.OpenAPIPos = f.Pos(n)
	src := f.Str(n, "openapi")
	if src == "" {
		if n.Kind == yaml.ScalarNode {
			f.Errf(n, "write openapi: openapi.yaml or openapi: http://127.0.0.1:8080/openapi.json", "openapi must name a file or a URL")
		}
		return
	}
	if openapi.IsURL(src) || strings.Contains(src, "{{") {
		h.OpenAPI = f.Template(n, "openapi", configEnv())
		f.checkURL(n, "openapi")
		f.checkServiceRefs(n)
		return
	}
	if !filepath.IsAbs(src) {
		src = filepath.Join(filepath.Dir(f.Path), src)
	}
	h.OpenAPI = f.Template(n, "openapi", configEnv())
	spec, err := openapi.Load(f.ctx, src, nil)
	if err != nil {
		f.Errf(n, "fix the document, or point openapi: at another one", "%v", err)
		return
	}
	h.Spec = spec
}
