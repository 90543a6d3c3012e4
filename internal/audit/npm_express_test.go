//go:build unix

package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemtest/idemtest/cmd"
	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
	"github.com/idemtest/idemtest/internal/testenv"
)

// expressOTelPackages are the npm packages testdata/audit/express_otel.js needs, pinned: .ci/run
// installs them into .cache/npm (TestExpressOTelPinned checks it).
var expressOTelPackages = map[string]string{"express": "5.3.0", "express-idempotency": "1.0.6",
	"@opentelemetry/api": "1.9.1", "@opentelemetry/sdk-node": "0.223.0", "@opentelemetry/instrumentation-http": "0.223.0",
	"@opentelemetry/instrumentation-express": "0.71.1", "@opentelemetry/exporter-trace-otlp-proto": "0.223.0"}

// TestExpressOTelPinned: .ci/run installs every package the Express telemetry test needs, at
// its pinned version.
func TestExpressOTelPinned(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, f := range strings.Fields(string(ci)) {
		pinned[strings.TrimSuffix(f, ";")] = true
	}
	for pkg, version := range expressOTelPackages {
		if !pinned[pkg+"@"+version] {
			t.Errorf(".ci/run does not install %s@%s", pkg, version)
		}
	}
}

// syncBuffer is a writer read while it is written: it hands over the first match of re.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	re    *regexp.Regexp
	found chan string
	sent  bool
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if m := b.re.FindStringSubmatch(b.buf.String()); m != nil && !b.sent {
		b.sent = true
		b.found <- m[1]
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// auditListening starts idemtest audit --listen (in process) with args and returns the OTLP
// endpoint and finish, which ends the audit as Ctrl-C does and returns its exit code and its
// JSON report, checked against the schema.
func auditListening(t *testing.T, args ...string) (endpoint string, finish func() (cmd.ExitCode, []byte)) {
	t.Helper()
	ctx, interrupt := context.WithCancel(context.Background())
	t.Cleanup(interrupt)
	errOut := &syncBuffer{re: regexp.MustCompile(`traces at (http://\S+/v1/traces)`), found: make(chan string, 1)}
	var out bytes.Buffer
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: errOut, Getenv: func(string) string { return "" }}
	jsonPath := filepath.Join(t.TempDir(), "audit.json")
	done := make(chan cmd.ExitCode, 1)
	go func() {
		done <- cmd.Execute(ctx, &cmd.Factory{IO: ios, Version: "test"}, append([]string{"audit", "--listen", "127.0.0.1:0", "--json", jsonPath}, args...))
	}()
	select {
	case endpoint = <-errOut.found:
	case code := <-done:
		t.Fatalf("audit exited %d: %s", code, errOut.String())
	}
	return endpoint, func() (cmd.ExitCode, []byte) {
		interrupt()
		code := <-done
		t.Logf("audit --listen: exit %d\n%s%s", code, &out, errOut)
		b, err := os.ReadFile(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemacheck.Validate("audit", b); err != nil {
			t.Fatal(err)
		}
		return code, b
	}
}

// startExpressOTel starts testdata/audit/express_otel.js in mode, exporting spans to endpoint
// and its executions to ledger, and returns its URL and stop, which sends SIGTERM (the SDK
// flushes its spans, then the server exits) and waits for the exit. It is killed if the test
// ends first.
func startExpressOTel(t *testing.T, repo, mode, ledger, endpoint string) (base string, stop func()) {
	t.Helper()
	node := exec.Command("node", filepath.Join(repo, "testdata", "audit", "express_otel.js"))
	node.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(repo, ".cache", "npm", "node_modules"), "MODE="+mode, "LEDGER="+ledger,
		"WORK_MS=20", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+endpoint, "OTEL_TRACES_SAMPLER=always_on")
	node.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	nodeErr := &syncBuffer{re: regexp.MustCompile(`listening on (http://\S+)`), found: make(chan string, 1)}
	node.Stderr = nodeErr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- node.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = syscall.Kill(-node.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	select {
	case base = <-nodeErr.found:
	case err := <-exited:
		stopped = true
		t.Fatalf("the Express server exited (%v) before it listened:\n%s", err, nodeErr.String())
	}
	return base, func() {
		_ = node.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			stopped = true
			if err != nil {
				t.Fatalf("the Express server: %v\n%s", err, nodeErr.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("the Express server did not exit within a minute of SIGTERM:\n%s", nodeErr.String())
		}
	}
}

// TestAuditExpressOTelJS audits telemetry from a real npm stack: an Express server instrumented
// with the OpenTelemetry JS SDK exports over OTLP/HTTP (protobuf) to idemtest audit --listen.
// Under duplicate bursts, the naive handler executes some keys twice and express-idempotency
// none; the truth is the server's ledger (a line per execution, written apart from the spans),
// and audit must report exactly the keys it shows executed more than once, with the counts.
func TestAuditExpressOTelJS(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(repo, ".cache", "npm", "node_modules")
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Unmet(t, "node is not installed (.ci/run needs it)")
	}
	for pkg := range expressOTelPackages {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			testenv.Unmet(t, fmt.Sprintf("npm package %s is not installed in .cache/npm (.ci/run installs it)", pkg))
		}
	}
	for _, mode := range []string{"naive", "idempotent"} {
		t.Run(mode, func(t *testing.T) {
			endpoint, finish := auditListening(t, "--max-hit-rate", "off", "--execution-span", "refund.execute")
			// The Express server, exporting to it.
			ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
			base, stopNode := startExpressOTel(t, repo, mode, ledger, endpoint)
			var mu sync.Mutex
			refused := 0 // 409s: duplicates refused in flight, as the client saw them
			post := func(key string) {
				req, _ := http.NewRequest(http.MethodPost, base+"/tools/issue_refund", strings.NewReader(`{"accountId":"acct_js","amount":5}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusConflict {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			}
			sent := 0
			var truth map[string]int
			for round := 0; ; round++ {
				key := fmt.Sprintf("js-%s-%d", mode, round)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for range 6 {
					wg.Add(1)
					go func() { defer wg.Done(); <-start; post(key) }()
				}
				close(start)
				wg.Wait()
				post(key) // a retry after the answers: a replay on both servers
				sent += 7
				truth = readLedger(t, ledger)
				// The naive server's bursts go on until one double-executes (its pace decides
				// when); the idempotent server's must never.
				if mode == "naive" && truth[key] > 1 || mode == "idempotent" && round == 4 {
					break
				}
				if round == 20 {
					t.Fatal("the naive Express server never executed a key twice in 20 bursts")
				}
			}

			stopNode() // flushes every span to the audit
			code, b := finish()
			checkExpressAudit(t, mode, code, b, truth, sent, refused)
		})
	}
}

// checkExpressAudit compares the audit's JSON report b (exit code) with the truth: the ledger's
// executions per key, the keyed calls sent and the 409s the client got.
func checkExpressAudit(t *testing.T, mode string, code cmd.ExitCode, b []byte, truth map[string]int, sent, refused int) {
	t.Helper()
	var rep struct {
		Calls      int `json:"calls"`
		Keyed      int `json:"keyed"`
		Executions int `json:"executions"`
		Conflicts  int `json:"conflicts"`
		Findings   []struct {
			Kind  string `json:"kind"`
			Tool  string `json:"tool"`
			Key   string `json:"key"`
			Count int    `json:"count"`
			Calls []struct {
				TraceID string `json:"trace_id"`
				SpanID  string `json:"span_id"`
			} `json:"calls"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Keyed != sent {
		t.Errorf("audit saw %d keyed calls, the test sent %d", rep.Keyed, sent)
	}
	if rep.Conflicts != refused {
		t.Errorf("audit counted %d conflicts, the client got %d 409s", rep.Conflicts, refused)
	}
	total, doubled := 0, 0
	for _, n := range truth {
		total += n
		if n > 1 {
			doubled++
		}
	}
	if rep.Executions != total {
		t.Errorf("audit counted %d executions, the ledger has %d", rep.Executions, total)
	}
	found := map[string]int{}
	for _, f := range rep.Findings {
		if f.Kind != "double-execution" || f.Tool != "POST /tools/:tool" {
			t.Errorf("unexpected finding %+v", f)
			continue
		}
		found[f.Key] = f.Count
		for _, c := range f.Calls {
			if len(c.TraceID) != 32 || len(c.SpanID) != 16 {
				t.Errorf("finding call without trace and span ids: %+v", c)
			}
		}
	}
	for k, n := range truth {
		if (n > 1 || found[k] > 0) && found[k] != n {
			t.Errorf("key %s executed %d times (ledger); audit says %d", k, n, found[k])
		}
	}
	wantCode := cmd.ExitOK
	if mode == "naive" {
		wantCode = cmd.ExitFailed
		if doubled == 0 {
			t.Error("the naive server executed no key twice")
		}
	} else if doubled != 0 {
		t.Errorf("express-idempotency executed %d keys more than once: %v", doubled, truth)
	}
	if code != wantCode {
		t.Errorf("audit exit %d, want %d", code, wantCode)
	}
}

// readLedger counts the ledger's executions per key.
func readLedger(t *testing.T, path string) map[string]int {
	t.Helper()
	per := map[string]int{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return per
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("ledger line %q: %v", sc.Text(), err)
		}
		per[e.Key]++
	}
	return per
}
