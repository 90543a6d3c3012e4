//go:build unix

// Command openapigen measures the memory of loading a large OpenAPI document. It writes a
// generated JSON document of -mb megabytes (internal/openapi/openapigen), loads it as idemtest
// tools --openapi does, and prints the document's size, the bytes allocated while loading, the
// peak heap and the process's peak RSS, each also as a multiple of the document's size. One
// load per process, so the RSS is that load's. Run from the repository root:
//
//	go run ./bench/openapigen -mb 38
//	go run ./bench/openapigen -mb 38 -o /tmp/spec.json   # also keep the document
//	go run ./bench/openapigen -mb 38 -bodies             # no responses: nothing to drop
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/openapi/openapigen"
)

func main() {
	mb := flag.Int("mb", 4, "size of the generated document in MB")
	bodies := flag.Bool("bodies", false, "generate operations and request bodies only, no responses (nothing for the loader to drop)")
	out := flag.String("o", "", "write the document to `FILE` (default: a temporary file, removed)")
	flag.Parse()
	doc := openapigen.Generate(*mb << 20)
	if *bodies {
		doc = openapigen.GenerateBodies(*mb << 20)
	}
	path := *out
	if path == "" {
		dir, err := os.MkdirTemp("", "openapigen")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "spec.json")
	}
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		fail(err)
	}
	size := len(doc)
	runtime.GC()

	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	spec, err := openapi.Load(context.Background(), path, nil)
	runtime.ReadMemStats(&after)
	close(stop)
	<-sampled
	if err != nil {
		fail(err)
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	rss := uint64(ru.Maxrss) << 10
	alloc := after.TotalAlloc - before.TotalAlloc
	x := func(n uint64) float64 { return float64(n) / float64(size) }
	fmt.Printf("document %.1f MB, %d operations: allocated %.0f MB (%.1f×), peak heap %.0f MB (%.1f×), peak RSS %.0f MB (%.1f×)\n",
		float64(size)/(1<<20), len(spec.Operations), float64(alloc)/(1<<20), x(alloc),
		float64(peak.Load())/(1<<20), x(peak.Load()), float64(rss)/(1<<20), x(rss))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "openapigen:", err)
	os.Exit(1)
}
