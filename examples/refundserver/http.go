package main

import (
	_ "embed"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// openAPIDoc describes the HTTP tools as OpenAPI 3.1; main_test.go calls every operation it names.
//
//go:embed openapi.json
var openAPIDoc []byte

// maxBody bounds a request body; refunds are small.
const maxBody = 1 << 20

// handler serves the tools over HTTP, the ledger, the health check and MCP at /mcp.
func (s *service) handler() http.Handler {
	mux := http.NewServeMux()
	tools := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			write(w, problem(http.StatusRequestEntityTooLarge, "body_too_large", err.Error()))
			return
		}
		tool := r.PathValue("name")
		key := parseKeyHeader(r.Header.Get("Idempotency-Key"))
		ctx, span := s.httpSpan(r, tool, key)
		resp := s.call(ctx, tool, key, body) //nolint:contextcheck // ctx is r.Context() with the caller's trace (httpSpan)
		s.logCall(tool, key, resp)
		if s.cfg.ShapedRefusals {
			resp = resp.shaped()
		}
		endHTTPSpan(span, resp)
		write(w, resp)
	}
	mux.HandleFunc("POST /tools/{name}", tools)
	// Setting a status is idempotent by nature, which HTTP says with PUT: the OpenAPI document
	// describes it so (POST is still served, for plain HTTP endpoints that POST every tool).
	mux.HandleFunc("PUT /tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "set_account_status" {
			w.Header().Set("Allow", http.MethodPost)
			write(w, problem(http.StatusMethodNotAllowed, "method_not_allowed", "only set_account_status takes PUT"))
			return
		}
		tools(w, r)
	})
	mux.HandleFunc("GET /refunds", func(w http.ResponseWriter, r *http.Request) {
		list, err := s.store.Refunds(r.Context(), r.URL.Query().Get("accountId"))
		if err != nil {
			write(w, problem(http.StatusInternalServerError, "store_error", err.Error()))
			return
		}
		write(w, jsonResponse(map[string]any{"refunds": list}))
	})
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPIDoc)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		st := s.stats
		s.mu.Unlock()
		write(w, jsonResponse(st))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		write(w, jsonResponse(map[string]any{"status": "ok", "mode": s.cfg.Mode}))
	})
	srv := s.mcpServer()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	return mux
}

func write(w http.ResponseWriter, resp response) {
	ct := "application/json"
	if !resp.ok() {
		ct = "application/problem+json"
	}
	w.Header().Set("Content-Type", ct)
	if resp.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// parseKeyHeader accepts a bare key or the draft's structured-field string form ("key").
func parseKeyHeader(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var b strings.Builder
		inner := v[1 : len(v)-1]
		for i := 0; i < len(inner); i++ {
			if inner[i] == '\\' && i+1 < len(inner) {
				i++
			}
			b.WriteByte(inner[i])
		}
		return b.String()
	}
	return v
}

func (s *service) logCall(tool, key string, resp response) {
	outcome := "executed"
	if !resp.ok() {
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(resp.Body, &p)
		outcome = p.Code
	}
	s.log.Info("call", "tool", tool, "key", key, "status", resp.Status, "outcome", outcome, "replayed", resp.Replayed)
}
