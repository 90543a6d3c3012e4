package sink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemtest/idemtest/internal/testenv"
)

func post(t *testing.T, url, key, body string, timeout time.Duration) (int, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.GetBody = nil // no silent re-send by net/http when a reused connection is reset
	req.Header.Set("Idempotency-Key", key)
	c := &http.Client{Timeout: timeout}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestRecordsAndFaults(t *testing.T) {
	s, err := Start(Config{Name: "pp", Routes: []Route{
		{Name: "refunds", Method: "POST", Path: "/v1/refunds", Status: 201, Body: map[string]any{"id": "pp_x"}, FailFirst: 1},
		{Name: "charges", Method: "POST", Path: "/v1/charges/{id}", DropResponseFirst: 1},
		{Name: "slow", Path: "/slow", HangFirst: 1},
	}, Render: func(body any, vars map[string]any) (any, error) {
		return map[string]any{"id": fmt.Sprintf("pp_%v", vars["seq"])}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if st, _, _ := post(t, s.URL()+"/v1/refunds", "k1", `{"accountId":"a","amount":5}`, time.Second); st != 500 {
		t.Errorf("fail_first: status %d, want 500", st)
	}
	if st, body, _ := post(t, s.URL()+"/v1/refunds", "k1", `{"accountId":"a","amount":5}`, time.Second); st != 201 || !strings.Contains(body, `"pp_2"`) {
		t.Errorf("second: %d %s", st, body)
	}
	if _, _, err := post(t, s.URL()+"/v1/charges/ch_9", "k2", `{}`, time.Second); err == nil {
		t.Error("drop_response_first answered")
	}
	if _, _, err := post(t, s.URL()+"/slow", "k3", `{}`, 200*time.Millisecond); err == nil {
		t.Error("hang_first answered")
	}
	if st, _, _ := post(t, s.URL()+"/nowhere", "k4", `{}`, time.Second); st != 404 {
		t.Errorf("unmatched: %d", st)
	}
	snap := s.Snapshot()
	refunds := snap["refunds"].([]any)
	if len(refunds) != 2 || refunds[0].(map[string]any)["accountId"] != "a" || refunds[1].(map[string]any)["key"] != "k1" {
		t.Errorf("refunds %v", refunds)
	}
	charges := snap["charges"].([]any)
	if len(charges) != 1 || charges[0].(map[string]any)["params"].(map[string]any)["id"] != "ch_9" {
		t.Errorf("charges %v", charges)
	}
	if n := len(snap["requests"].([]any)); n != 5 {
		t.Errorf("requests %d, want 5", n)
	}
	s.Reset()
	if n := len(s.Snapshot()["refunds"].([]any)); n != 0 {
		t.Errorf("after reset: %d", n)
	}
	// Counters reset too: the first request of the new trial fails again.
	if st, _, _ := post(t, s.URL()+"/v1/refunds", "k5", `{}`, time.Second); st != 500 {
		t.Errorf("fail_first after reset: %d", st)
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = Start(Config{Name: "pp", Port: port})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("sink pp: listen on port %d", port)) {
		t.Errorf("err = %v", err)
	}
}

func TestCloseReleasesHangingRequests(t *testing.T) {
	s, _ := Start(Config{Name: "pp", Routes: []Route{{Name: "h", Path: "/h", HangFirst: 5}}})
	done := make(chan struct{})
	go func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL()+"/h", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		close(done)
	}()
	// Close once the request is recorded, so it is hanging rather than not yet arrived.
	testenv.Eventually(t, time.Minute, func() bool { return len(s.Snapshot()["h"].([]any)) != 0 }, "the request reached the sink")
	s.Close()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("a hanging request outlived Close")
	}
}
