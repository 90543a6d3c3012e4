//go:build unix

// Command proxyrss measures the peak resident memory of "idemtest proxy --http" over sessions of
// 1k, 10k and 100k calls, loopback only: it starts the reference server and the proxy in front
// of it, sends the calls (each issue_refund with its own key, 4 at a time, keep-alive), stops
// the proxy with SIGTERM (its verdict included in the peak) and reads the proxy's maximum RSS
// from wait4. With -record the proxy also writes the trace (--record, to a file in a temporary
// directory). Build the two binaries first:
//
//	go build -o /tmp/rss/ . ./examples/refundserver
//	go run ./bench/proxyrss -bin /tmp/rss [-record]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var listening = regexp.MustCompile(`listening on (http://[^ ]+)`)

// start runs a program and returns it with the URL it says it listens on.
func start(path string, args ...string) (*exec.Cmd, string, error) {
	c := exec.Command(path, args...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := c.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := c.Start(); err != nil {
		return nil, "", err
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, pipe) }()
			return c, m[1], nil
		}
	}
	_ = c.Wait()
	return nil, "", fmt.Errorf("%s exited before listening", path)
}

// session sends n calls through a fresh proxy and returns its peak RSS in KiB and the time.
func session(bin string, n int, record bool) (int64, time.Duration, error) {
	srv, srvURL, err := start(filepath.Join(bin, "refundserver"), "--addr", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL); _ = srv.Wait() }()
	args := []string{"proxy", "--http", "--listen", "127.0.0.1:0", "--upstream", srvURL, "--fault-rate", "0.01", "--seed", "1"}
	if record {
		dir, err := os.MkdirTemp("", "proxyrss")
		if err != nil {
			return 0, 0, err
		}
		defer os.RemoveAll(dir)
		args = append(args, "--record", filepath.Join(dir, "trace.jsonl"))
	}
	px, pxURL, err := start(filepath.Join(bin, "idemtest"), args...)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				body := fmt.Sprintf(`{"accountId":"acct_%d","amount":%d.5}`, i%97, i%1000)
				req, _ := http.NewRequest(http.MethodPost, pxURL+"/tools/issue_refund", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "rss-"+strconv.Itoa(i))
				resp, err := client.Do(req)
				if err != nil {
					// A lost response (--fault-rate) resets the connection: that is the point.
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 300 {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("call %d: status %d", i, resp.StatusCode)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	_ = px.Process.Signal(syscall.SIGTERM)
	_ = px.Wait()
	took := time.Since(t0)
	ru, _ := px.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return 0, took, fmt.Errorf("no rusage")
	}
	return ru.Maxrss, took, firstErr
}

func main() {
	bin := flag.String("bin", "", "directory holding the idemtest and refundserver binaries")
	sizes := flag.String("calls", "1000,10000,100000", "session sizes, comma-separated")
	record := flag.Bool("record", false, "make the proxy write the trace too (--record)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/proxyrss -bin DIR [-calls 1000,10000,100000] [-record]")
		os.Exit(2)
	}
	fmt.Println("| calls | proxy peak RSS | time |")
	fmt.Println("|---|---|---|")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		rss, took, err := session(*bin, n, *record)
		if err != nil {
			fmt.Fprintln(os.Stderr, "proxyrss:", err)
			os.Exit(1)
		}
		fmt.Printf("| %d | %.1f MiB | %s |\n", n, float64(rss)/1024, took.Round(100*time.Millisecond))
	}
}
