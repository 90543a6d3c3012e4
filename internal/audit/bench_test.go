package audit

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkAuditFile audits the export named by AUDIT_BENCH_FILE (go run ./bench/auditgen
// writes one); BENCHMARKS.md records the whole command on 100 MB and 1 GB.
func BenchmarkAuditFile(b *testing.B) {
	path := os.Getenv("AUDIT_BENCH_FILE")
	if path == "" {
		b.Skip("AUDIT_BENCH_FILE is not set: write an export with go run ./bench/auditgen")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		a := New(Options{TTL: time.Minute, MaxHitRate: -1, MaxConflictRate: -1})
		if err := ReadFile(context.Background(), path, Mapping{}, a.Add); err != nil {
			b.Fatal(err)
		}
		a.Report()
	}
}
