package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestChargesOverHTTP(t *testing.T) {
	for _, storeName := range stores {
		t.Run(storeName, func(t *testing.T) {
			s := startServer(t, storeName, config{Charges: true})
			acct, other := randomID("acct_"), randomID("acct_")
			// Keys are unique per test run: the Redis and PostgreSQL stores outlive it.
			key := randomID("k_")
			args := map[string]any{"accountId": acct, "amount": 20}
			first := s.call(t, "create_charge", key, args)
			var ch struct{ ChargeID string }
			if err := json.Unmarshal(first.body, &ch); err != nil || first.status != 200 || ch.ChargeID == "" {
				t.Fatalf("create_charge: %d %s", first.status, first.body)
			}
			if again := s.call(t, "create_charge", key, args); !again.replayed || string(again.body) != string(first.body) {
				t.Errorf("create_charge retried with its key: %d replayed=%v %s", again.status, again.replayed, again.body)
			}
			if r := s.call(t, "create_charge", "", args); r.code != "idempotency_key_missing" {
				t.Errorf("create_charge without a key: %d %s", r.status, r.body)
			}

			refunded := s.call(t, "issue_refund", key, map[string]any{"accountId": acct, "amount": 5, "chargeId": ch.ChargeID})
			if refunded.status != 200 {
				t.Fatalf("issue_refund of the charge: %d %s", refunded.status, refunded.body)
			}
			for _, tc := range []struct {
				name string
				args map[string]any
				code string
			}{
				{"unknown charge", map[string]any{"accountId": acct, "amount": 5, "chargeId": "ch_nope"}, "unknown_charge"},
				{"another account's charge", map[string]any{"accountId": other, "amount": 5, "chargeId": ch.ChargeID}, "charge_account_mismatch"},
				{"empty chargeId", map[string]any{"accountId": acct, "amount": 5, "chargeId": ""}, "invalid_arguments"},
			} {
				if r := s.call(t, "issue_refund", key+tc.name, tc.args); r.status != 400 || r.code != tc.code {
					t.Errorf("%s: %d %s, want 400 %s", tc.name, r.status, r.body, tc.code)
				}
			}
			list, err := s.st.Refunds(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			var mine []refund
			for _, r := range list {
				if r.AccountID == acct || r.AccountID == other {
					mine = append(mine, r)
				}
			}
			if len(mine) != 1 || mine[0].ChargeID != ch.ChargeID {
				t.Errorf("refunds after one good and three refused: %+v, want one naming %s", mine, ch.ChargeID)
			}
		})
	}
}

func TestChargesOffByDefault(t *testing.T) {
	s := startServer(t, "memory", config{})
	if r := s.call(t, "create_charge", "k1", map[string]any{"accountId": "a", "amount": 1}); r.status != 404 || r.code != "unknown_tool" {
		t.Errorf("create_charge without --charges: %d %s", r.status, r.body)
	}
	if r := s.call(t, "issue_refund", "k2", map[string]any{"accountId": "a", "amount": 1, "chargeId": "ch_x"}); r.status != 400 || r.code != "invalid_arguments" {
		t.Errorf("chargeId without --charges: %d %s", r.status, r.body)
	}
}

func TestChargesOverMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transports := map[string]func(t *testing.T) mcp.Transport{
		"stdio": func(t *testing.T) mcp.Transport {
			cmd := exec.Command(os.Args[0], "--stdio", "--charges")
			cmd.Env = append(os.Environ(), "REFUNDSERVER_RUN_MAIN=1")
			cmd.Stderr = os.Stderr
			return &mcp.CommandTransport{Command: cmd}
		},
		"http": func(t *testing.T) mcp.Transport {
			s := startServer(t, "memory", config{Charges: true})
			return &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp"}
		},
	}
	for name, newTransport := range transports {
		t.Run(name, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, newTransport(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if len(names) != 4 || names[0] != "create_charge" {
				t.Errorf("tools %v, want create_charge and the three others", names)
			}
			call := func(tool string, args map[string]any) map[string]any {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil {
					t.Fatal(err)
				}
				out, _ := res.StructuredContent.(map[string]any)
				if res.IsError {
					out["isError"] = true
				}
				return out
			}
			acct := randomID("acct_")
			ch := call("create_charge", map[string]any{"accountId": acct, "amount": 9, "idempotencyKey": randomID("k_")})
			id, _ := ch["chargeId"].(string)
			if id == "" || ch["isError"] == true {
				t.Fatalf("create_charge: %v", ch)
			}
			if r := call("issue_refund", map[string]any{"accountId": acct, "amount": 9, "chargeId": id, "idempotencyKey": randomID("k_")}); r["chargeId"] != id {
				t.Errorf("issue_refund of %s: %v", id, r)
			}
			if r := call("issue_refund", map[string]any{"accountId": acct, "amount": 9, "chargeId": "ch_nope", "idempotencyKey": randomID("k_")}); r["isError"] != true || r["code"] != "unknown_charge" {
				t.Errorf("issue_refund of an unknown charge: %v", r)
			}
			list := call("list_refunds", map[string]any{"accountId": acct})["refunds"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["chargeId"] != id {
				t.Errorf("list_refunds: %v", list)
			}
		})
	}
}
