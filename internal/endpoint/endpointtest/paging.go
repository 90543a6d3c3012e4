package endpointtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PagingMCP is an MCP server over streamable HTTP whose tools/list answers are written by page:
// every other message goes to real (an MCP SDK handler), and page(n) returns the tools of the
// n-th page (from 0, read from a cursor "n" or "cn") and its nextCursor, "" to end; a nil page
// hangs each listing until the client goes away. It is closed when the test ends.
func PagingMCP(t *testing.T, real http.Handler, page func(n int) (tools []map[string]any, next string)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tools/list" {
			real.ServeHTTP(w, r)
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(msg.Params.Cursor, "c"))
		if page == nil {
			<-r.Context().Done()
			return
		}
		tools, next := page(n)
		res := map[string]any{"tools": tools}
		if next != "" {
			res["nextCursor"] = next
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": res})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// ServeMCP serves srv over streamable HTTP on loopback until the test ends and returns its URL:
// the one way the package tests stand up a real MCP server of the official Go SDK.
func ServeMCP(t *testing.T, srv *mcp.Server) string {
	t.Helper()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}
