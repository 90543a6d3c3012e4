// Command refundserver is the reference tool server for idemtest: it serves issue_refund,
// list_refunds and set_account_status over HTTP (POST /tools/{name}) and MCP (streamable HTTP at
// /mcp, or stdio with --stdio), with a correct idempotency implementation and two broken ones.
// With --charges it also serves create_charge, whose chargeId issue_refund takes.
//
//	go run ./examples/refundserver --addr 127.0.0.1:8080
//	go run ./examples/refundserver --store redis --idempotency naive
//	go run ./examples/refundserver --store sqlite --sqlite refunds.db
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

const usage = `refundserver: the reference refund tool server for idemtest.

Tools: issue_refund {accountId, amount, currency?} (needs an idempotency key),
list_refunds {accountId?} (read-only), set_account_status {accountId, status}
(naturally idempotent). With --charges also create_charge {accountId, amount,
currency?} (needs a key; returns a chargeId), and issue_refund takes chargeId?,
which must name an existing charge of the account.

HTTP: POST /tools/{name} with the JSON arguments as body and the key in the
Idempotency-Key header; GET /refunds?accountId=; GET /stats (keyed calls,
executions, replays and in-flight conflicts, as the server counts them);
GET /healthz.
MCP: streamable HTTP at /mcp, or stdio with --stdio; the key in the
idempotencyKey argument or the idempotencyKey entry of _meta.

--idempotency selects the implementation:
  locked  correct: an atomic in-flight reservation, 409 while in flight,
          422 on a reused key with another payload, stored replay (default)
  naive   BROKEN on purpose: check, execute, then store; concurrent
          duplicates both execute
  none    BROKEN on purpose: keys are ignored; every call executes
  refuse  locked, but a retry after completion is refused with 409
          {"error":"duplicate request"} (over MCP an isError "duplicate
          request") instead of answered: safe, yet the agent never learns
          the outcome
The broken modes exist so idemtest's tests and demos can show what it catches.

--otel-file and --otel-endpoint export OpenTelemetry spans (the official Go SDK):
an http.server span per HTTP tool call, a tools/call span per MCP call, and a
refund.execute (charge.execute) child span per real execution, with the trace
context of the caller's traceparent (over MCP, params._meta.traceparent).

--refusals shaped answers every refusal (400, 409, 422) as a success whose body
says error: HTTP 200, or an MCP result without isError, holding
{"status":"error","code":…,"message":…}. It is still correct.

Flags:
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("refundserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	addr := fs.String("addr", "127.0.0.1:8080", "HTTP listen address (with --stdio: served only when given)")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin/stdout")
	storeName := fs.String("store", "memory", "where keys and refunds live: memory, redis, postgres or sqlite")
	sqlitePath := fs.String("sqlite", "refundserver.db", "SQLite database file for --store sqlite (created if missing; WAL mode)")
	redisAddr := fs.String("redis-addr", envOr("REDIS_ADDR", "127.0.0.1:6379"), "Redis address for --store redis (env REDIS_ADDR)")
	redisPrefix := fs.String("redis-prefix", "refundserver:", "prefix of every Redis key the server writes")
	dbURL := fs.String("database-url", envOr("DATABASE_URL", "postgres://127.0.0.1:5432/test"), "PostgreSQL URL for --store postgres (env DATABASE_URL)")
	mode := fs.String("idempotency", modeLocked, "locked (correct), naive or none (both broken on purpose), or refuse (retries after completion refused)")
	refusals := fs.String("refusals", "status", "status (an error status, or isError over MCP) or shaped (200 or isError false, with {\"status\":\"error\"})")
	keyTTL := fs.Duration("key-ttl", 48*time.Hour, "how long a completed key is remembered")
	lease := fs.Duration("lease", 30*time.Second, "how long an in-flight reservation blocks its key if the request never finishes")
	work := fs.Duration("work", 2*time.Millisecond, "how long the side effect takes (the race window)")
	checkDelay := fs.Duration("check-delay", 0, "how long a keyed request waits before its key is checked: the race window opens this late (for benchmarks)")
	downstreamTimeout := fs.Duration("downstream-timeout", 10*time.Second, "how long to wait for the payment processor")
	h2c := fs.Bool("h2c", false, "also serve HTTP/2 without TLS (prior knowledge), for single-packet fan-outs")
	charges := fs.Bool("charges", false, "also serve create_charge, and accept issue_refund's chargeId (a multi-step session's example)")
	keyFormat := fs.String("key-format", "any", "any, or uuid: refuse keys that are not UUIDs with 500 \"invalid idempotency key\" (as libraries that parse keys do)")
	traceChecks := fs.Bool("trace-checks", false, `print "check KEY UNIXNANO" to stderr at every key check (for benchmarks)`)
	otelFile := fs.String("otel-file", "", "append OpenTelemetry spans to `PATH` as OTLP JSON, one ExportTraceServiceRequest per line (what idemtest audit reads)")
	otelEndpoint := fs.String("otel-endpoint", "", "export OpenTelemetry spans over OTLP/HTTP to `URL` (e.g. http://127.0.0.1:4318/v1/traces, or idemtest audit --listen)")
	logLevel := fs.String("log-level", envOr("LOG_LEVEL", "warn"), "debug, info (a line per request), warn or error (env LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "refundserver: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	switch *mode {
	case modeLocked, modeNaive, modeNone, modeRefuse:
	default:
		fmt.Fprintf(stderr, "refundserver: --idempotency %q: want locked, naive, none or refuse\n", *mode)
		return 2
	}
	if *refusals != "status" && *refusals != "shaped" {
		fmt.Fprintf(stderr, "refundserver: --refusals %q: want status or shaped\n", *refusals)
		return 2
	}

	if *work < 0 || *checkDelay < 0 {
		fmt.Fprintf(stderr, "refundserver: --work and --check-delay must not be negative\n")
		return 2
	}
	if *keyFormat != "any" && *keyFormat != "uuid" {
		fmt.Fprintf(stderr, "refundserver: --key-format %q: want any or uuid\n", *keyFormat)
		return 2
	}

	tracer, shutdownTracing, err := setupTracing(ctx, *otelFile, *otelEndpoint)
	if err != nil {
		fmt.Fprintf(stderr, "refundserver: %v\n", err)
		return 2
	}
	defer func() {
		// Every span of a finished call is exported before the server exits.
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := shutdownTracing(flushCtx); err != nil {
			fmt.Fprintf(stderr, "refundserver: export spans: %v\n", err)
		}
	}()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := openStore(ctx, *storeName, *redisAddr, *redisPrefix, *dbURL, *sqlitePath)
	if err != nil {
		fmt.Fprintf(stderr, "refundserver: %v\n", err)
		return 1
	}
	defer st.Close()
	cfg := config{
		Mode: *mode, KeyTTL: *keyTTL, Lease: *lease, Work: *work, CheckDelay: *checkDelay, DownstreamTimeout: *downstreamTimeout,
		Downstream: strings.TrimRight(os.Getenv("PAYMENT_PROCESSOR_URL"), "/"), Charges: *charges,
		UUIDKeys: *keyFormat == "uuid", ShapedRefusals: *refusals == "shaped",
	}
	if *traceChecks {
		cfg.TraceChecks = stderr
	}
	svc := newService(cfg, st, log)
	svc.tracer = tracer

	serveHTTP := !*stdio || flagSet(fs, "addr")
	errc := make(chan error, 2)
	var srv *http.Server
	if serveHTTP {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			fmt.Fprintf(stderr, "refundserver: listen: %v\n", err)
			return 1
		}
		srv = &http.Server{Handler: svc.handler(), ReadHeaderTimeout: 10 * time.Second}
		if *h2c {
			var p http.Protocols
			p.SetHTTP1(true)
			p.SetUnencryptedHTTP2(true)
			srv.Protocols = &p
		}
		fmt.Fprintf(stderr, "refundserver: listening on http://%s (store %s, idempotency %s)\n", ln.Addr(), *storeName, *mode)
		go func() { errc <- srv.Serve(ln) }()
	}
	if *stdio {
		go func() {
			t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
			errc <- svc.mcpServer().Run(ctx, t)
		}()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "refundserver: %v\n", err)
			return 1
		}
	}
	if srv != nil {
		// Finish what is in flight, briefly; long-lived MCP streams are then cut.
		shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(shutdownCtx) != nil {
			_ = srv.Close()
		}
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func openStore(ctx context.Context, name, redisAddr, redisPrefix, dbURL, sqlitePath string) (store, error) {
	switch name {
	case "memory":
		return newMemStore(), nil
	case "redis":
		return newRedisStore(ctx, redisAddr, redisPrefix)
	case "postgres":
		return newPGStore(ctx, dbURL)
	case "sqlite":
		return newSQLiteStore(ctx, sqlitePath)
	}
	return nil, fmt.Errorf("--store %q: want memory, redis, postgres or sqlite", name)
}
