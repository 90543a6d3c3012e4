package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idemtest/idemtest/internal/endpoint"
	"github.com/idemtest/idemtest/internal/outcome"
)

// FuzzMCPResult feeds arbitrary JSON-RPC answers to tools/call through the decoding a client
// does (the SDK's message decoding, then CallToolResult) and idemtest's classification into a
// Result. No answer may panic, and the outcome must follow the answer: a JSON-RPC error is
// fail, isError is fail, anything else ok.
func FuzzMCPResult(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"refundId\":\"re_1\"}"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"plain"}],"structuredContent":{"refundId":"re_1","n":1e308}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true,"structuredContent":{"code":"in_progress","status":409}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"request in flight"}],"isError":true}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"\u001b[31m\u202e"}],"_meta":{"idempotentReplayed":true}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"t"}}],"_meta":{"replayed":"yes"}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool","data":{"x":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":"a","result":null}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32099,"message":"lost","data":{"content":[{"type":"text","text":"{\"refundId\":\"re_9\"}"}]}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32099,"message":"lost","data":[1]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[1,[2,[3]]]"}],"structuredContent":[1,2]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\xff\xfe"}]}}`,
	} {
		f.Add([]byte(seed))
	}
	e := New(Config{Command: []string{"unused"}})
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return
		}
		ctx := context.Background()
		if resp.Error != nil {
			var werr *jsonrpc.Error
			res := e.classifyError(ctx, endpoint.Result{Start: time.Now()}, resp.Error, time.Second, true)
			if errors.As(resp.Error, &werr) && werr.Code != lostCode && werr.Code != tooLargeCode && res.Outcome != outcome.Fail {
				t.Fatalf("json-rpc error %v is %s, want fail", werr, res.Outcome)
			}
			return
		}
		var out sdk.CallToolResult
		if json.Unmarshal(resp.Result, &out) != nil {
			return
		}
		res := e.classify(endpoint.Result{Start: time.Now()}, &out)
		switch {
		case out.IsError && res.Outcome != outcome.Fail:
			t.Fatalf("isError result is %s, want fail", res.Outcome)
		case !out.IsError && res.Outcome != outcome.OK:
			t.Fatalf("result is %s, want ok", res.Outcome)
		case !out.IsError && res.Conflict:
			t.Fatal("an ok result is a conflict")
		}
		if _, err := json.Marshal(res.Result); err != nil {
			t.Fatalf("result cannot be encoded for the report: %v", err)
		}
		if !utf8.ValidString(res.Error) && utf8.Valid(data) {
			t.Fatalf("error message %q is not UTF-8", res.Error)
		}
	})
}
