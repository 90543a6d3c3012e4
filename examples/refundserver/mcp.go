package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replayedMeta is the result _meta entry set on a replayed response, the MCP counterpart of the
// Idempotent-Replayed header.
const replayedMeta = "idempotentReplayed"

func boolPtr(b bool) *bool { return &b }

// mcpServer serves the same tools over MCP. The idempotency key comes from the idempotencyKey
// argument, or from the idempotencyKey entry of the request's _meta.
func (s *service) mcpServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "refundserver", Version: "1.0.0"}, nil)
	refund := &mcp.Tool{
		Name:        "issue_refund",
		Description: "Refund an amount to an account. Requires an idempotency key; retries with the same key return the first result.",
		InputSchema: moneySchema(""),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(true)},
	}
	if s.cfg.Charges {
		s.addChargeTools(srv, refund)
	}
	srv.AddTool(refund, s.mcpHandler("issue_refund"))
	srv.AddTool(&mcp.Tool{
		Name:        "list_refunds",
		Description: "List executed refunds, optionally for one account.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"accountId":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.mcpHandler("list_refunds"))
	srv.AddTool(&mcp.Tool{
		Name:        "set_account_status",
		Description: "Set an account's status. Setting the same status twice changes nothing.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"accountId":{"type":"string"},"status":{"type":"string","enum":["active","suspended","closed"]}},
			"required":["accountId","status"]}`),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, s.mcpHandler("set_account_status"))
	return srv
}

// addChargeTools serves create_charge and lets refund (issue_refund) name a chargeId.
func (s *service) addChargeTools(srv *mcp.Server, refund *mcp.Tool) {
	srv.AddTool(&mcp.Tool{
		Name:        "create_charge",
		Description: "Charge an amount to an account; returns the chargeId that issue_refund takes. Requires an idempotency key; retries with the same key return the first result.",
		InputSchema: moneySchema(""),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(true)},
	}, s.mcpHandler("create_charge"))
	refund.InputSchema = moneySchema(`
			"chargeId":{"type":"string","description":"the charge refunded: a chargeId create_charge returned"},`)
}

// moneySchema is the input schema of the tools that move money (issue_refund, create_charge):
// an account, an amount, a currency and the key, plus the properties in extra (each followed by
// a comma).
func moneySchema(extra string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{
			"accountId":{"type":"string","examples":["acct_1"]},
			"amount":{"type":"number","exclusiveMinimum":0,"examples":[49.99]},
			"currency":{"type":"string","default":"USD","minLength":3,"maxLength":3},` + extra + `
			"idempotencyKey":{"type":"string","description":"reuse on retry"}},
			"required":["accountId","amount"]}`)
}

func (s *service) mcpHandler(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		key := ""
		if k, ok := req.Params.Meta[keyArg].(string); ok {
			key = k
		}
		sessionID := ""
		if req.Session != nil {
			sessionID = req.Session.ID()
		}
		ctx, span := s.mcpSpan(ctx, req.Params.Meta, tool, sessionID, req.Params.Arguments, key)
		resp := s.call(ctx, tool, key, req.Params.Arguments)
		s.logCall(tool, key, resp)
		if s.cfg.ShapedRefusals {
			resp = resp.shaped()
		}
		var structured any
		if err := json.Unmarshal(resp.Body, &structured); err != nil {
			endMCPSpan(span, resp, true)
			return nil, fmt.Errorf("encode %s result: %w", tool, err)
		}
		res := &mcp.CallToolResult{StructuredContent: structured}
		if resp.ok() {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(resp.Body)}}
		} else {
			p, _ := structured.(map[string]any)
			res.IsError = true
			text := fmt.Sprintf("%v: %v", p["code"], p["detail"])
			if e, ok := p["error"].(string); ok && p["code"] == nil {
				text = e // a bare error ({"error": "duplicate request"}) says only that
			}
			res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
		}
		if resp.Replayed {
			res.Meta = mcp.Meta{replayedMeta: true}
		}
		endMCPSpan(span, resp, res.IsError)
		return res, nil
	}
}
