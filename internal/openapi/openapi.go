package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemtest/idemtest/internal/netguard"
)

// Spec is a loaded document, mapped to tools.
type Spec struct {
	// Source is the file or URL the document was read from.
	Source string
	// Version is the document's openapi field ("3.1.0").
	Version string
	// Servers are the server URLs, relative ones resolved against the document's URL.
	Servers []string
	// Operations are the operations in path, then method order.
	Operations []Operation
}

// Operation is one operation of the document, as a tool.
type Operation struct {
	// Tool is the operationId, else "METHOD /path".
	Tool    string `json:"tool"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Summary string `json:"summary,omitempty"`
	// ReadOnly is set for GET, HEAD and OPTIONS: safe methods, usable as state snapshots.
	ReadOnly bool `json:"read_only"`
	// Idempotent is set for PUT and DELETE (and the safe methods): idempotent by method.
	Idempotent bool `json:"idempotent"`
	// Mutating is set for every method that is not read-only.
	Mutating bool `json:"mutating"`
	// KeyHeader is the declared Idempotency-Key-like header parameter, "" when none is declared.
	KeyHeader string `json:"key_header,omitempty"`
	// PathParams and QueryParams name the arguments that go into the path and the query.
	PathParams  []string `json:"path_params,omitempty"`
	QueryParams []string `json:"query_params,omitempty"`
	// BodyArg is set when the request body is not a JSON object: the argument of that name is
	// the whole body. Otherwise the arguments that are neither path nor query make the body.
	BodyArg string `json:"body_arg,omitempty"`
	// HasBody reports whether the operation declares a request body.
	HasBody bool `json:"has_body"`
	// InputSchema is a JSON Schema object of the arguments: path, query and body together.
	InputSchema map[string]any `json:"input_schema,omitempty"`
}

// NoKeyDeclared is what is said of an operation that declares no idempotency key header.
const NoKeyDeclared = "no idempotency key declared"

// maxSpecBytes bounds what one load reads: the document and every document its $refs name,
// together, from files and URLs alike.
const maxSpecBytes = 64 << 20

// loadTimeout bounds one load, the document and all its references.
const loadTimeout = 60 * time.Second

// IsURL reports whether source is an http or https URL rather than a file path.
func IsURL(source string) bool {
	return strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://")
}

// Error is a document that does not load, with its position when the library gives one.
type Error struct {
	Source string
	// Line and Col are 1-based; 0 when unknown.
	Line, Col int
	Err       error
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("openapi %s:%d:%d: %v", e.Source, e.Line, e.Col, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("openapi %s:%d: %v", e.Source, e.Line, e.Err)
	}
	return fmt.Sprintf("openapi %s: %v", e.Source, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads the document at source (a file path or an http(s) URL) and maps it. URLs, the
// document's and those of external $refs, are fetched through policy (nil: loopback only).
// A fetched document references only documents of its own origin; a local one, files under its
// own directory (regular files) and URLs. Loading ends with ctx, after loadTimeout, or once
// maxSpecBytes have been read.
func Load(ctx context.Context, source string, policy *netguard.Policy) (*Spec, error) {
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	var loc *url.URL
	var data []byte
	var err error
	if IsURL(source) {
		if loc, err = url.Parse(source); err != nil {
			return nil, &Error{Source: source, Err: err}
		}
		data, err = fetch(ctx, policy, loc, maxSpecBytes)
	} else {
		abs, aerr := filepath.Abs(source)
		if aerr != nil {
			return nil, &Error{Source: source, Err: aerr}
		}
		loc = &url.URL{Path: filepath.ToSlash(abs)}
		// The document, like its references, is a regular file: a FIFO would wait for a
		// writer and read as an empty document, a device never ends. A document on the
		// network is named by its URL, or saved to a file first.
		data, err = readRegular(ctx, abs, maxSpecBytes)
		if errors.Is(err, errNotRegular) {
			err = fmt.Errorf("%w: save the document to a file first, or give its http(s) URL", err)
		}
	}
	if err != nil {
		return nil, &Error{Source: source, Err: err}
	}
	return parse(ctx, data, source, loc, policy)
}

// Parse maps a document held in memory; source names it in errors, base resolves relative
// server URLs and $refs (nil: none).
func Parse(data []byte, source string, base *url.URL) (*Spec, error) {
	return parse(context.Background(), data, source, base, nil)
}

func fetch(ctx context.Context, policy *netguard.Policy, u *url.URL, limit int64) ([]byte, error) {
	client := &http.Client{
		Transport: policy.Transport(),
		// A redirect could lead anywhere: the policy dials only allowed hosts, and a redirect
		// is reported rather than followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/yaml")
	req.Header.Set("User-Agent", "idemtest")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", u.Redacted(), resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("GET %s: larger than %d bytes (a document and its references together are read up to %d bytes)", u.Redacted(), limit, maxSpecBytes)
	}
	return b, nil
}

var lineCol = regexp.MustCompile(`line (\d+)(?:,? column (\d+))?`)

// smallDocument is the size up to which a document that starts with "{" but is not JSON is
// read as YAML (a flow mapping) instead of being refused as invalid JSON: YAML costs some hundred
// times a document's size in memory.
const smallDocument = 1 << 20

func parse(ctx context.Context, data []byte, source string, base *url.URL, policy *netguard.Policy) (*Spec, error) {
	refs, err := newRefReader(ctx, policy, base, len(data))
	if err != nil {
		return nil, &Error{Source: source, Err: err}
	}
	if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
		// JSON is read as JSON, pruned to what the operations need (see prune); the library's
		// own reading parses JSON as YAML, at about 115 times the document's size.
		small, perr := prune(data)
		if perr == nil {
			doc, err := loadJSON(ctx, small, base, refs)
			if err != nil && len(small) != len(data) {
				// What pruning could have broken (a $ref it missed) is read whole; an error
				// is then the document's, positioned in it.
				doc, err = loadJSON(ctx, data, base, refs)
			}
			if err != nil {
				return nil, positioned(data, source, err)
			}
			return mapDoc(doc, source, base)
		}
		if len(data) > smallDocument {
			return nil, positioned(data, source, fmt.Errorf("not valid JSON: %w", perr))
		}
	}
	loader := newLoader(ctx, refs)
	var doc *openapi3.T
	if base != nil {
		doc, err = loader.LoadFromDataWithPath(data, base)
	} else {
		doc, err = loader.LoadFromData(data)
	}
	if err != nil {
		return nil, positioned(data, source, err)
	}
	return mapDoc(doc, source, base)
}

func newLoader(ctx context.Context, refs *refReader) *openapi3.Loader {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = refs.read
	return loader
}

// loadJSON decodes a JSON document and resolves its $refs.
func loadJSON(ctx context.Context, data []byte, base *url.URL, refs *refReader) (*openapi3.T, error) {
	doc := &openapi3.T{}
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, err
	}
	if err := newLoader(ctx, refs).ResolveRefsIn(doc, base); err != nil {
		return nil, err
	}
	return doc, nil
}

// mapDoc maps a loaded document to a Spec.
func mapDoc(doc *openapi3.T, source string, base *url.URL) (*Spec, error) {
	if doc.OpenAPI == "" || !strings.HasPrefix(doc.OpenAPI, "3.") {
		if doc.OpenAPI == "" {
			return nil, &Error{Source: source, Err: errors.New(`no "openapi" version field: not an OpenAPI 3 document (Swagger 2.0 is not read)`)}
		}
		return nil, &Error{Source: source, Err: fmt.Errorf("openapi version %q: only 3.0, 3.1 and 3.2 are read", doc.OpenAPI)}
	}
	s := &Spec{Source: source, Version: doc.OpenAPI}
	for _, sv := range doc.Servers {
		if sv == nil || sv.URL == "" {
			continue
		}
		s.Servers = append(s.Servers, serverURL(sv, base))
	}
	if doc.Paths == nil {
		return s, nil
	}
	sm := schemaMapper{}
	paths := doc.Paths.Keys()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		if item == nil {
			continue
		}
		ops := item.Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		sort.Slice(methods, func(i, j int) bool { return methodOrder(methods[i]) < methodOrder(methods[j]) })
		for _, m := range methods {
			s.Operations = append(s.Operations, sm.mapOperation(path, m, item, ops[m]))
		}
	}
	return s, nil
}

// positioned adds the line and column to a load error: from the library's message, or from a
// JSON syntax error's offset.
func positioned(data []byte, source string, err error) error {
	e := &Error{Source: source, Err: err}
	// The library tries JSON, then YAML, and reports both; a document that starts with "{"
	// is JSON, and only the JSON error means anything.
	msg := err.Error()
	if i, j := strings.Index(msg, "json error: "), strings.Index(msg, ", yaml error: "); i >= 0 && j > i && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		e.Err = errors.New("not valid JSON: " + msg[i+len("json error: "):j])
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		e.Line, e.Col = offsetLineCol(data, se.Offset-1) // Offset is past the bad byte
		return e
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		e.Line, e.Col = offsetLineCol(data, te.Offset)
		return e
	}
	if m := lineCol.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		if m[2] != "" {
			e.Col, _ = strconv.Atoi(m[2])
		}
	}
	return e
}

func offsetLineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func methodOrder(m string) int {
	for i, x := range []string{"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "TRACE", "QUERY"} {
		if m == x {
			return i
		}
	}
	return 100
}

// serverURL substitutes the variables' defaults and resolves a relative URL against base.
func serverURL(sv *openapi3.Server, base *url.URL) string {
	u := sv.URL
	for name, v := range sv.Variables {
		if v != nil {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
	}
	if base != nil && (base.Scheme == "http" || base.Scheme == "https") {
		if ref, err := url.Parse(u); err == nil && !ref.IsAbs() {
			return base.ResolveReference(ref).String()
		}
	}
	return u
}

// IsKeyHeader reports whether a header parameter's name says it carries an idempotency key
// (Idempotency-Key, X-Idempotency-Key, Idempotency-Token, …), case-insensitively.
func IsKeyHeader(name string) bool {
	return strings.Contains(strings.ToLower(name), "idempotency")
}

func (sm schemaMapper) mapOperation(path, method string, item *openapi3.PathItem, op *openapi3.Operation) Operation {
	o := Operation{Method: method, Path: path, Summary: op.Summary, Tool: op.OperationID}
	if o.Tool == "" {
		o.Tool = method + " " + path
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		o.ReadOnly, o.Idempotent = true, true
	case http.MethodPut, http.MethodDelete:
		o.Idempotent, o.Mutating = true, true
	default:
		o.Mutating = true
	}
	props := map[string]any{}
	var required []string
	// Path-level parameters apply unless the operation overrides one (same name and place).
	params := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			k := pr.Value.In + "\x00" + pr.Value.Name
			if _, seen := params[k]; !seen {
				order = append(order, k)
			}
			params[k] = pr.Value
		}
	}
	for _, k := range order {
		p := params[k]
		switch p.In {
		case openapi3.ParameterInHeader:
			if o.KeyHeader == "" && IsKeyHeader(p.Name) {
				o.KeyHeader = p.Name
			}
			continue
		case openapi3.ParameterInPath:
			o.PathParams = append(o.PathParams, p.Name)
		case openapi3.ParameterInQuery:
			o.QueryParams = append(o.QueryParams, p.Name)
		default:
			continue
		}
		sch := map[string]any{}
		if p.Schema != nil {
			// A copy: the description and example below are this parameter's own.
			sch = maps.Clone(sm.schemaMap(p.Schema, 0))
		}
		if p.Description != "" {
			sch["description"] = p.Description
		}
		if p.Example != nil {
			sch["examples"] = []any{p.Example}
		}
		props[p.Name] = sch
		if p.Required || p.In == openapi3.ParameterInPath {
			required = append(required, p.Name)
		}
	}
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		o.HasBody = true
		var body *openapi3.SchemaRef
		for ct, mt := range rb.Value.Content {
			if mt != nil && (strings.Contains(ct, "json") || body == nil) {
				body = mt.Schema
				if strings.Contains(ct, "json") {
					break
				}
			}
		}
		bm := map[string]any{}
		if body != nil {
			bm = sm.schemaMap(body, 0)
		}
		if bp, ok := bm["properties"].(map[string]any); ok && isObject(bm) {
			for n, v := range bp {
				if _, clash := props[n]; !clash {
					props[n] = v
				}
			}
			if req, ok := bm["required"].([]any); ok {
				for _, r := range req {
					if s, ok := r.(string); ok {
						required = append(required, s)
					}
				}
			}
		} else if !isObject(bm) || len(bm) > 1 {
			o.BodyArg = "body"
			props["body"] = bm
			if rb.Value.Required {
				required = append(required, "body")
			}
		}
	}
	o.InputSchema = map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		r := make([]any, 0, len(required))
		for i, n := range required {
			if i == 0 || required[i-1] != n {
				r = append(r, n)
			}
		}
		o.InputSchema["required"] = r
	}
	return o
}

func isObject(m map[string]any) bool {
	t, ok := m["type"]
	if !ok {
		_, hasProps := m["properties"]
		return hasProps
	}
	return t == "object"
}

// maxDepth bounds how deep a schema is copied: recursive schemas (a tree of comments) and very
// large documents stay finite; arguments are synthesised from the top levels.
const maxDepth = 6

// schemaMapper maps schemas once per depth: a component that many operations reach through
// $refs is one map shared by their input schemas, not a copy each (a document of request
// bodies that reference each other held 12 times its size in copies). The maps are read-only
// once made.
type schemaMapper map[schemaAt]map[string]any

type schemaAt struct {
	s     *openapi3.Schema
	depth int
}

// schemaMap copies the parts of a schema that argument synthesis uses into a JSON Schema map,
// $refs already resolved by the loader.
func (sm schemaMapper) schemaMap(ref *openapi3.SchemaRef, depth int) map[string]any {
	if ref == nil || ref.Value == nil || depth > maxDepth {
		return map[string]any{}
	}
	s := ref.Value
	if m, ok := sm[schemaAt{s, depth}]; ok {
		return m
	}
	out := map[string]any{}
	sm[schemaAt{s, depth}] = out
	if s.Type != nil {
		types := s.Type.Slice()
		if len(types) == 1 {
			out["type"] = types[0]
		} else if len(types) > 1 {
			ts := make([]any, len(types))
			for i, t := range types {
				ts[i] = t
			}
			out["type"] = ts
		}
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if s.Description != "" && depth == 0 {
		out["description"] = s.Description
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	if s.Const != nil {
		out["const"] = s.Const
	}
	if s.Default != nil {
		out["default"] = s.Default
	}
	if s.Example != nil {
		out["examples"] = []any{s.Example}
	} else if len(s.Examples) > 0 {
		out["examples"] = s.Examples
	}
	if s.Min != nil {
		out["minimum"] = *s.Min
	}
	if s.Max != nil {
		out["maximum"] = *s.Max
	}
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	if s.Pattern != "" {
		out["pattern"] = s.Pattern
	}
	if len(s.Required) > 0 {
		r := make([]any, len(s.Required))
		for i, n := range s.Required {
			r[i] = n
		}
		out["required"] = r
	}
	if len(s.Properties) > 0 {
		props := make(map[string]any, len(s.Properties))
		for n, p := range s.Properties {
			props[n] = sm.schemaMap(p, depth+1)
		}
		out["properties"] = props
	}
	if s.Items != nil {
		out["items"] = sm.schemaMap(s.Items, depth+1)
	}
	for kw, list := range map[string]openapi3.SchemaRefs{"oneOf": s.OneOf, "anyOf": s.AnyOf, "allOf": s.AllOf} {
		if len(list) == 0 {
			continue
		}
		l := make([]any, len(list))
		for i, x := range list {
			l[i] = sm.schemaMap(x, depth+1)
		}
		out[kw] = l
	}
	return out
}

// Operation returns the operation named tool, or false (also on a nil Spec).
func (s *Spec) Operation(tool string) (Operation, bool) {
	if s == nil {
		return Operation{}, false
	}
	for _, o := range s.Operations {
		if o.Tool == tool {
			return o, true
		}
	}
	return Operation{}, false
}

// Split divides a call's arguments into path parameters, query parameters and the JSON body
// (nil when the operation has none).
func (o Operation) Split(args map[string]any) (path map[string]string, query url.Values, body any) {
	path = map[string]string{}
	query = url.Values{}
	rest := map[string]any{}
	inPath := set(o.PathParams)
	inQuery := set(o.QueryParams)
	for k, v := range args {
		switch {
		case inPath[k]:
			path[k] = scalar(v)
		case inQuery[k]:
			if list, ok := v.([]any); ok {
				for _, x := range list {
					query.Add(k, scalar(x))
				}
			} else {
				query.Set(k, scalar(v))
			}
		case o.BodyArg != "" && k == o.BodyArg:
			body = v
		default:
			rest[k] = v
		}
	}
	if o.BodyArg == "" && (o.HasBody || len(rest) > 0) && !o.ReadOnly {
		body = rest
	} else if o.BodyArg == "" && o.ReadOnly {
		// A safe method has no body: leftover arguments go to the query.
		for k, v := range rest {
			query.Set(k, scalar(v))
		}
	}
	return path, query, body
}

// URL is the operation's path with its path parameters substituted (each escaped), appended to
// base, with the query.
func (o Operation) URL(base string, path map[string]string, query url.Values) string {
	p := o.Path
	for k, v := range path {
		p = strings.ReplaceAll(p, "{"+k+"}", url.PathEscape(v))
	}
	u := strings.TrimRight(base, "/") + p
	if q := query.Encode(); q != "" {
		u += "?" + q
	}
	return u
}

func set(l []string) map[string]bool {
	m := make(map[string]bool, len(l))
	for _, s := range l {
		m[s] = true
	}
	return m
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
