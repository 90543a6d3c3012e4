package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
)

// addGiantTool adds "giant", which answers args.n bytes of text, and "many", which answers a
// list of args.n numbers, to the stdio test server (the other tests count the tools of
// testMCPServer, so only with ENDPOINT_TEST_MCP_GIANT=1).
func addGiantTool(srv *sdk.Server) {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}}}`)
	srv.AddTool(&sdk.Tool{Name: "giant", InputSchema: schema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args struct{ N int }
		json.Unmarshal(req.Params.Arguments, &args)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", args.N)}}}, nil
	})
	srv.AddTool(&sdk.Tool{Name: "many", InputSchema: schema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args struct{ N int }
		json.Unmarshal(req.Params.Arguments, &args)
		return &sdk.CallToolResult{StructuredContent: map[string]any{"items": make([]int, args.N)}}, nil
	})
}

// indentWriter writes each message of an MCP server indented, over many lines, as a server
// that breaks the stdio framing does.
type indentWriter struct{ io.WriteCloser }

func (w indentWriter) Write(p []byte) (int, error) {
	var b bytes.Buffer
	if json.Indent(&b, bytes.TrimSpace(p), "", "  ") != nil {
		return w.WriteCloser.Write(p)
	}
	b.WriteByte('\n')
	_, err := w.WriteCloser.Write(b.Bytes())
	return len(p), err
}

// A message spread over many lines passes the line cap piece by piece; past a bound the session
// ends, and the call says why instead of blaming the server for closing the connection.
func TestMCPStdioMessageOverManyLines(t *testing.T) {
	ctx := context.Background()
	ep := stdioMCP(t, Config{MaxResponseBytes: 100, Env: []string{"ENDPOINT_TEST_MCP_GIANT=1", "ENDPOINT_TEST_MCP_PRETTY=1"}})
	if res := ep.Call(ctx, endpoint.Request{Tool: "many", Args: map[string]any{"n": 3}}); res.Outcome != outcome.OK {
		t.Fatalf("a small indented answer: %s %s", res.Outcome, res.Error)
	}
	res := ep.Call(ctx, endpoint.Request{Tool: "many", Args: map[string]any{"n": 400 << 10}})
	if res.Outcome != outcome.Info || !strings.Contains(res.Error, "one message spread over several lines passed 1048976 bytes") {
		t.Fatalf("a long indented answer: %s %q", res.Outcome, res.Error)
	}
}

func TestLineCap(t *testing.T) {
	long := strings.Repeat("y", 40)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short lines pass", "{\"id\":1}\n{\"id\":2}\n", "{\"id\":1}\n{\"id\":2}\n"},
		{"exactly the limit", `{"id":1,"r":"` + strings.Repeat("y", 12) + "\"}\n", `{"id":1,"r":"` + strings.Repeat("y", 12) + "\"}\n"},
		{"last line without newline", `{"id":1}`, `{"id":1}`},
		{"id first", `{"jsonrpc":"2.0","id":7,"result":"` + long + "\"}\n{\"id\":8}\n",
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32098,"message":"answer larger than 32 bytes"}}` + "\n{\"id\":8}\n"},
		{"id last, after strings holding quotes and braces", `{"result":{"t":"a\"},\"id\":9,{` + long + `"},"jsonrpc":"2.0","id":"k"}` + "\n",
			`{"jsonrpc":"2.0","id":"k","error":{"code":-32098,"message":"answer larger than 32 bytes"}}` + "\n"},
		{"id after a string that ends in an escaped backslash", `{"result":"` + long + `\\\\","id":6}` + "\n",
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32098,"message":"answer larger than 32 bytes"}}` + "\n"},
		{"a request is dropped", `{"method":"x","id":3,"params":"` + long + "\"}\n{\"id\":4}\n", "{\"id\":4}\n"},
		{"no id is dropped", `{"result":"` + long + "\"}\n", ""},
		{"unfinished long line is dropped", `{"id":5,"result":"` + long, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := io.ReadAll(newLineCap(r, 32))
				if err != nil || string(got) != tc.want {
					t.Errorf("got %q %v\nwant %q", got, err, tc.want)
				}
			}
		})
	}
}

// An answer over max_response_bytes from a stdio server is one call's info outcome; the
// session carries on with the same server process.
func TestMCPStdioAnswerTooLarge(t *testing.T) {
	ctx := context.Background()
	ep := stdioMCP(t, Config{MaxResponseBytes: 64 << 10, Env: []string{"ENDPOINT_TEST_MCP_GIANT=1"}})
	if res := ep.Call(ctx, endpoint.Request{Tool: "giant", Args: map[string]any{"n": 1000}}); res.Outcome != outcome.OK {
		t.Fatalf("small answer: %s %s", res.Outcome, res.Error)
	}
	pid := ep.cmd.Process.Pid
	res := ep.Call(ctx, endpoint.Request{Tool: "giant", Args: map[string]any{"n": 4 << 20}})
	if res.Outcome != outcome.Info || !strings.Contains(res.Error, "answer larger than 65536 bytes") {
		t.Fatalf("giant answer: %s %q", res.Outcome, res.Error)
	}
	// Calls in flight beside a giant answer, and after it, get their own answers.
	var wg sync.WaitGroup
	results := make([]endpoint.Result, 6)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				results[i] = ep.Call(ctx, endpoint.Request{Tool: "giant", Args: map[string]any{"n": 1 << 20}})
			} else {
				results[i] = ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k", Args: map[string]any{"n": i}})
			}
		}()
	}
	wg.Wait()
	for i, r := range results {
		want := outcome.OK
		if i%2 == 0 {
			want = outcome.Info
		}
		if r.Outcome != want {
			t.Errorf("concurrent call %d: %s %q", i, r.Outcome, r.Error)
		}
		if want == outcome.OK && r.Result.(map[string]any)["args"].(map[string]any)["n"] != float64(i) {
			t.Errorf("call %d got another call's answer: %v", i, r.Result)
		}
	}
	if res := ep.Call(ctx, endpoint.Request{Tool: "echo", Key: "k2"}); res.Outcome != outcome.OK {
		t.Errorf("after the giant answers: %s %s", res.Outcome, res.Error)
	}
	if ep.cmd.Process.Pid != pid {
		t.Errorf("the server was restarted")
	}
}
