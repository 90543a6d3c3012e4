package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/iostreams"
)

func TestAuditFlags(t *testing.T) {
	io, _, _ := iostreams.Test()
	var got *AuditOptions
	f := &Factory{IO: io, Version: "test"}
	root := NewCmdRoot(f)
	root.RemoveCommand(root.Commands()...)
	root.AddCommand(NewCmdAudit(f, func(_ context.Context, o *AuditOptions) error { got = o; return nil }))
	root.SetArgs([]string{"audit", "--ttl", "24h", "--window", "48h", "--max-hit-rate", "2%", "--max-conflict-rate", "0.01",
		"--mutating", "a,b", "--key-arg", "requestKey", "--key-attr", "x.key", "--session-attr", "x.session", "--replay-attr", "x.replayed",
		"--json", "a.json", "--junit", "a.xml", "one.jsonl", "two.jsonl.gz"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.TTL != 24*time.Hour || got.Window != 48*time.Hour || got.MaxHitRate != "2%" || got.MaxConflictRate != "0.01" ||
		strings.Join(got.Mutating, ",") != "a,b" || got.Mapping.KeyArgs[0] != "requestKey" || got.Mapping.KeyAttrs[0] != "x.key" ||
		got.Mapping.SessionAttrs[0] != "x.session" || got.Mapping.ReplayAttrs[0] != "x.replayed" || got.JSON != "a.json" || got.JUnit != "a.xml" ||
		strings.Join(got.Paths, ",") != "one.jsonl,two.jsonl.gz" {
		t.Errorf("options %+v", got)
	}
}

func TestParseRate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		bad  bool
	}{{"5%", 0.05, false}, {"0.05", 0.05, false}, {"off", -1, false}, {"0", 0, false}, {"150%", 0, true}, {"lots", 0, true}, {"-1", 0, true}} {
		got, err := parseRate("--max-hit-rate", tt.in)
		if (err != nil) != tt.bad || !tt.bad && got != tt.want {
			t.Errorf("%q: %v, %v", tt.in, got, err)
		}
	}
}

// TestAuditInputs: bad usage exits 2 before anything is read.
func TestAuditInputs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"report over its input", []string{"audit", "x.jsonl", "--json", "./x.jsonl"}, "is also an input"},
		{"stdin twice", []string{"audit", "-", "-"}, "given twice"},
		{"window shorter than ttl", []string{"audit", "--ttl", "2h", "--window", "1h", "x"}, "shorter than --ttl"},
		{"missing file", []string{"audit", "does-not-exist.jsonl"}, "does-not-exist.jsonl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			io, _, errOut := iostreams.Test()
			code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, tt.args)
			if code != ExitUsage || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d: %s", code, errOut)
			}
		})
	}
}

// TestAuditInterrupted: a run whose context ends writes the report of what was read, marked
// interrupted, and exits 130.
func TestAuditInterrupted(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(in, []byte(`{"resourceSpans":[]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	io, _, _ := iostreams.Test()
	code := Execute(ctx, &Factory{IO: io, Version: "test"}, []string{"audit", in, "--json", out})
	if code != ExitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	if rep := readReport[struct{ Interrupted bool }](t, "audit", out); !rep.Interrupted {
		t.Errorf("report %+v: interrupted not set", rep)
	}
}

// TestAuditListenUsage: --listen takes a loopback address only, and --duration and --idle need
// it; each mistake is exit 2 before anything listens.
func TestAuditListenUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:4318"},
		{"--listen", ":4318"},
		{"--listen", "nohost"},
		{"--duration", "1s"},
		{"--idle", "1s", "x.jsonl"},
		{"--listen", "127.0.0.1:0", "--idle", "-1s"},
	} {
		io, _, errOut := iostreams.Test()
		code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, append([]string{"audit"}, args...))
		if code != ExitUsage || strings.Contains(errOut.String(), "receiving") {
			t.Errorf("audit %v: exit %d, want 2 before listening (%s)", args, code, errOut)
		}
	}
}

func TestAuditExecutionSpanUsage(t *testing.T) {
	io, _, errOut := iostreams.Test()
	if code := Execute(context.Background(), &Factory{IO: io, Version: "test"}, []string{"audit", "--execution-span", "[x", "x.jsonl"}); code != ExitUsage ||
		!strings.Contains(errOut.String(), "--execution-span") {
		t.Errorf("exit %d (%s), want 2 naming the flag", code, errOut)
	}
}
