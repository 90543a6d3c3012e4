package openapi

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const spec30 = `openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "http://127.0.0.1:{port}/api", variables: {port: {default: "9000"}}}]
paths:
  /orders:
    post:
      operationId: createOrder
      parameters:
        - {name: X-Idempotency-Key, in: header, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Order"}
    get:
      parameters:
        - {name: status, in: query, schema: {type: string, enum: [open, closed]}}
  /orders/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}}
    put:
      operationId: replaceOrder
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Order"}
    delete:
      operationId: deleteOrder
components:
  schemas:
    Order:
      type: object
      required: [item]
      properties:
        item: {type: string, example: widget}
        qty: {type: integer, minimum: 1}
`

const spec31 = `{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
 "servers": [{"url": "/v1"}],
 "paths": {"/tags": {"post": {"operationId": "addTags",
   "requestBody": {"content": {"application/json": {"schema": {"type": "array", "items": {"type": ["string", "null"]}}}}}}}}}`

func TestMapping(t *testing.T) {
	s, err := Parse([]byte(spec30), "spec30.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://127.0.0.1:9000/api"}; !reflect.DeepEqual(s.Servers, want) {
		t.Errorf("servers = %v, want %v", s.Servers, want)
	}
	tests := []struct {
		tool, method, path, key string
		readOnly, idem, mut     bool
		pathParams, query       []string
		required                []any
	}{
		{tool: "GET /orders", method: "GET", path: "/orders", readOnly: true, idem: true, query: []string{"status"}},
		{tool: "createOrder", method: "POST", path: "/orders", key: "X-Idempotency-Key", mut: true, required: []any{"item"}},
		{tool: "replaceOrder", method: "PUT", path: "/orders/{id}", idem: true, mut: true, pathParams: []string{"id"}, required: []any{"id", "item"}},
		{tool: "deleteOrder", method: "DELETE", path: "/orders/{id}", idem: true, mut: true, pathParams: []string{"id"}, required: []any{"id"}},
	}
	if len(s.Operations) != len(tests) {
		t.Fatalf("%d operations, want %d: %+v", len(s.Operations), len(tests), s.Operations)
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			o, ok := s.Operation(tt.tool)
			if !ok {
				t.Fatalf("no operation %q", tt.tool)
			}
			if o.Method != tt.method || o.Path != tt.path || o.KeyHeader != tt.key || o.ReadOnly != tt.readOnly || o.Idempotent != tt.idem || o.Mutating != tt.mut {
				t.Errorf("got %+v", o)
			}
			if !reflect.DeepEqual(o.PathParams, tt.pathParams) || !reflect.DeepEqual(o.QueryParams, tt.query) {
				t.Errorf("params path %v query %v", o.PathParams, o.QueryParams)
			}
			if got, _ := o.InputSchema["required"].([]any); !reflect.DeepEqual(got, tt.required) {
				t.Errorf("required = %v, want %v", got, tt.required)
			}
		})
	}
	// The $ref'd body schema is resolved into the arguments.
	o, _ := s.Operation("createOrder")
	item := o.InputSchema["properties"].(map[string]any)["item"].(map[string]any)
	if item["type"] != "string" || !reflect.DeepEqual(item["examples"], []any{"widget"}) {
		t.Errorf("item schema = %v", item)
	}
}

func TestSplit(t *testing.T) {
	s, err := Parse([]byte(spec30), "spec30.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	put, _ := s.Operation("replaceOrder")
	path, query, body := put.Split(map[string]any{"id": "a/b", "item": "w", "qty": 2.0})
	if got := put.URL("http://h/api/", path, query); got != "http://h/api/orders/a%2Fb" {
		t.Errorf("url = %s", got)
	}
	if !reflect.DeepEqual(body, map[string]any{"item": "w", "qty": 2.0}) {
		t.Errorf("body = %v", body)
	}
	get, _ := s.Operation("GET /orders")
	path, query, body = get.Split(map[string]any{"status": "open"})
	if got := get.URL("http://h", path, query); got != "http://h/orders?status=open" || body != nil {
		t.Errorf("url = %s body %v", got, body)
	}
}

func TestOpenAPI31(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:8080/docs/openapi.json")
	s, err := Parse([]byte(spec31), "spec31.json", base)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://127.0.0.1:8080/v1"}; !reflect.DeepEqual(s.Servers, want) {
		t.Errorf("servers = %v, want %v (relative to the document's URL)", s.Servers, want)
	}
	o, ok := s.Operation("addTags")
	if !ok || o.BodyArg != "body" || o.KeyHeader != "" || !o.Mutating {
		t.Fatalf("got %+v", o)
	}
	_, _, body := o.Split(map[string]any{"body": []any{"a"}})
	if !reflect.DeepEqual(body, []any{"a"}) {
		t.Errorf("body = %v", body)
	}
}

func TestBadSpecs(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, data string
		line, col        int
	}{
		{name: "json syntax", file: "a.json", data: "{\"openapi\": \"3.1.0\",\n  \"paths\": {,}}", line: 2, col: 13},
		{name: "yaml syntax", file: "b.yaml", data: "openapi: 3.0.0\npaths:\n  - a\n - b\n", line: 4},
		{name: "swagger 2", file: "c.yaml", data: "swagger: \"2.0\"\ninfo: {title: t, version: \"1\"}\npaths: {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.file)
			if err := os.WriteFile(p, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(t.Context(), p, nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			t.Log(err)
			if e.Source != p || e.Line != tt.line || (tt.col != 0 && e.Col != tt.col) {
				t.Errorf("error at %d:%d, want %d:%d: %v", e.Line, e.Col, tt.line, tt.col, err)
			}
		})
	}
	if _, err := Load(t.Context(), filepath.Join(dir, "missing.yaml"), nil); err == nil {
		t.Error("a missing file loaded")
	}
}
