// Command badserver is a deliberately broken refund tool server for red-team tests of idemtest:
// each --mode is a way a real server executes a side effect twice (or misbehaves) while its
// answers may look fine. It serves plain HTTP (POST /tools/{tool}, key in Idempotency-Key), MCP
// over streamable HTTP at /mcp, or MCP over stdio with --stdio (key in the idempotencyKey
// argument, or --keyarg NAME, or the _meta entry).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	mode   = flag.String("mode", "correct", "correct|rejectafter|lease|fpexec|replayexec|noid|statusflag|commit500|hang|giant|globalscope|cacheerr|clock|volatile")
	addr   = flag.String("addr", "127.0.0.1:0", "HTTP listen address")
	stdio  = flag.Bool("stdio", false, "serve MCP over stdio")
	keyArg = flag.String("keyarg", "idempotencyKey", "MCP argument carrying the key")
	extra  = flag.String("extra-tools", "", "comma-separated names of more mutating tools (hostile names)")
	hint   = flag.Bool("idempotent-hint", false, "annotate the mutating tools idempotentHint: true")
	view   = flag.String("view", "", "accounts: list_refunds shows the refunded accounts, not the refunds")
	noList = flag.Bool("nolist", false, "serve no read-only tool")
	work   = flag.Duration("work", 0, "how long the side effect takes")
	lease  = flag.Duration("lease", 10*time.Millisecond, "lease mode: how long an in-flight reservation holds")
	giant  = flag.Int("giant-bytes", 64<<20, "giant mode: how long the refundId of an answer is")
)

type answer struct {
	args   map[string]any
	status int
	body   map[string]any
	at     time.Time
}

type server struct {
	mu     sync.Mutex
	ledger []map[string]any
	stored map[string]answer
	seen   map[string]int
	fails  int
	// hits counts the refund requests served, replays included (volatile mode).
	hits int
}

func id() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "re_" + hex.EncodeToString(b)
}

// execute appends a refund to the ledger: the side effect.
func (s *server) execute(args map[string]any, key string) map[string]any {
	time.Sleep(*work)
	r := map[string]any{"refundId": id(), "accountId": args["accountId"], "amount": args["amount"], "status": "succeeded"}
	if *mode == "noid" {
		r = map[string]any{"accountId": args["accountId"], "amount": args["amount"], "status": "succeeded"}
	}
	s.mu.Lock()
	s.ledger = append(s.ledger, map[string]any{"refundId": r["refundId"], "accountId": args["accountId"], "key": key})
	s.mu.Unlock()
	return r
}

// call runs a tool: status, body, replayed. In volatile mode, a correct server whose every
// answer carries the count of refund requests served so far, replays included, in a map
// (stats.count) and in a list (items.n): fields that change on every answer, as a request
// counter does, and that compare.ignore must leave out.
func (s *server) call(ctx context.Context, tool, key string, args map[string]any) (int, map[string]any, bool) {
	st, body, replayed := s.run(ctx, tool, key, args)
	if *mode != "volatile" || st != 200 {
		return st, body, replayed
	}
	s.mu.Lock()
	if tool != "list_refunds" {
		s.hits++
	}
	n := s.hits
	s.mu.Unlock()
	out := map[string]any{"stats": map[string]any{"count": n}, "items": []any{map[string]any{"n": n}}}
	for k, v := range body {
		out[k] = v
	}
	return st, out, replayed
}

func (s *server) run(ctx context.Context, tool, key string, args map[string]any) (int, map[string]any, bool) {
	switch tool {
	case "list_refunds":
		s.mu.Lock()
		defer s.mu.Unlock()
		if *mode == "statusflag" || *mode == "fpexec" || *view == "accounts" {
			// A read model that shows whether an account was refunded, not how often.
			seen := map[string]bool{}
			var names []string
			for _, r := range s.ledger {
				if a := fmt.Sprint(r["accountId"]); !seen[a] {
					seen[a] = true
					names = append(names, a)
				}
			}
			sort.Strings(names)
			accounts := []any{}
			for _, a := range names {
				accounts = append(accounts, map[string]any{"accountId": a, "status": "refunded"})
			}
			return 200, map[string]any{"accounts": accounts}, false
		}
		if *mode == "clock" {
			return 200, map[string]any{"refunds": append([]map[string]any{}, s.ledger...), "at": time.Now().Format(time.RFC3339Nano)}, false
		}
		return 200, map[string]any{"refunds": append([]map[string]any{}, s.ledger...)}, false
	case "issue_refund", "issue_credit":
	default:
		if *extra != "" && strings.Contains(","+*extra+",", ","+tool+",") {
			break
		}
		return 404, map[string]any{"error": "no such tool"}, false
	}
	if *mode == "hang" {
		<-ctx.Done()
		return 504, map[string]any{"error": "cancelled"}, false
	}
	if *mode == "giant" {
		big := strings.Repeat("x", *giant)
		return 200, map[string]any{"refundId": big}, false
	}
	if key == "" {
		if *mode == "rejectafter" {
			s.execute(args, key)
		}
		return 400, map[string]any{"error": "missing key"}, false
	}
	sk := tool + "\x00" + key
	if *mode == "globalscope" {
		sk = key
	}
	s.mu.Lock()
	s.seen[sk]++
	n := s.seen[sk]
	st, ok := s.stored[sk]
	s.mu.Unlock()
	switch *mode {
	case "replayexec":
		// Replays the stored answer, marked, but executes the side effect again first.
		if ok {
			s.execute(args, key)
			return st.status, st.body, true
		}
	case "commit500":
		// The first attempt commits, then fails with a 500 and stores nothing; the retry
		// executes again.
		if n == 1 {
			s.execute(args, key)
			return 500, map[string]any{"error": "internal error after commit"}, false
		}
	case "cacheerr":
		// The first attempt fails downstream (nothing executed) and the error is cached forever.
		if ok {
			return st.status, st.body, true
		}
		if n == 1 {
			a := answer{args, 502, map[string]any{"error": "payment processor down"}, time.Now()}
			s.mu.Lock()
			s.stored[sk] = a
			s.mu.Unlock()
			return a.status, a.body, false
		}
	case "fpexec":
		// Remembers each key's payload and refuses another payload under it, but never the
		// result: the same payload again executes again.
		s.mu.Lock()
		defer s.mu.Unlock()
		if ok && fmt.Sprint(st.args) != fmt.Sprint(args) {
			return 422, map[string]any{"error": "key reused with another payload"}, false
		}
		s.stored[sk] = answer{args: args}
		s.mu.Unlock()
		r := s.execute(args, key)
		s.mu.Lock()
		return 200, r, false
	case "noid", "statusflag":
		// Keys ignored.
		return 200, s.execute(args, key), false
	}
	if *mode == "lease" && ok && st.body == nil && time.Since(st.at) > *lease {
		// The reservation's lease ran out while the first request still works: execute again.
		s.mu.Lock()
		s.stored[sk] = answer{args: args, at: time.Now()}
		s.mu.Unlock()
		r := s.execute(args, key)
		s.mu.Lock()
		s.stored[sk] = answer{args, 200, r, time.Now()}
		s.mu.Unlock()
		return 200, r, false
	}
	if ok && st.body == nil && *mode != "replayexec" {
		return 409, map[string]any{"error": "in flight"}, false
	}
	if ok && st.body != nil && fmt.Sprint(st.args) != fmt.Sprint(args) {
		if *mode == "rejectafter" {
			// Validates the payload after the side effect: the refund happens, the answer says no.
			s.execute(args, key)
		}
		return 422, map[string]any{"error": "key reused with another payload"}, false
	}
	if ok {
		return st.status, st.body, true
	}
	// correct: reserve under the lock.
	s.mu.Lock()
	if _, ok := s.stored[sk]; ok || (n > 1 && *mode != "commit500") {
		s.mu.Unlock()
		return 409, map[string]any{"error": "in flight"}, false
	}
	s.stored[sk] = answer{args, 0, nil, time.Now()}
	s.mu.Unlock()
	r := s.execute(args, key)
	s.mu.Lock()
	s.stored[sk] = answer{args, 200, r, time.Now()}
	s.mu.Unlock()
	return 200, r, false
}

func (s *server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/{tool}", func(w http.ResponseWriter, r *http.Request) {
		var args map[string]any
		json.NewDecoder(r.Body).Decode(&args)
		st, body, replayed := s.call(r.Context(), r.PathValue("tool"), r.Header.Get("Idempotency-Key"), args)
		w.Header().Set("Content-Type", "application/json")
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.WriteHeader(st)
		json.NewEncoder(w).Encode(body)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := s.mcpServer()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	return mux
}

func (s *server) mcpServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "badserver", Version: "1"}, nil)
	f := false
	tools := []string{"issue_refund", "issue_credit"}
	if *extra != "" {
		tools = append(tools, strings.Split(*extra, ",")...)
	}
	for _, tool := range tools {
		srv.AddTool(&mcp.Tool{
			Name: tool,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"accountId":{"type":"string","examples":["acct_1"]},
				"amount":{"type":"number","examples":[5]},"` + *keyArg + `":{"type":"string"}},"required":["accountId","amount"]}`),
			Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, IdempotentHint: *hint},
		}, s.mcpHandler(tool))
	}
	if !*noList {
		srv.AddTool(&mcp.Tool{Name: "list_refunds", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.mcpHandler("list_refunds"))
	}
	return srv
}

func (s *server) mcpHandler(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		json.Unmarshal(req.Params.Arguments, &args)
		key, _ := args[*keyArg].(string)
		if k, ok := req.Params.Meta["idempotencyKey"].(string); ok && key == "" {
			key = k
		}
		delete(args, *keyArg)
		st, body, replayed := s.call(ctx, tool, key, args)
		res := &mcp.CallToolResult{StructuredContent: body}
		b, _ := json.Marshal(body)
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		if st >= 300 {
			res.IsError = true
		}
		if replayed {
			res.Meta = mcp.Meta{"idempotentReplayed": true}
		}
		return res, nil
	}
}

func main() {
	flag.Parse()
	s := &server{stored: map[string]answer{}, seen: map[string]int{}}
	if *stdio {
		if err := s.mcpServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "badserver:", err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "badserver:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "badserver: listening on http://%s (mode %s)\n", ln.Addr(), *mode)
	http.Serve(ln, s.httpHandler())
}
