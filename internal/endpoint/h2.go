package endpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// SyncSinglePacket releases HTTP/2 copies with one write: every stream's headers and body are
// sent beforehand on one connection, and the final (END_STREAM) frames of all streams go out
// together, so the server reads them from one packet.
const SyncSinglePacket = "single-packet"

// h2Stream is one copy's stream.
type h2Stream struct {
	id       uint32
	status   int
	header   http.Header
	body     bytes.Buffer
	answered time.Time
	done     bool
	err      error
	reset    bool
}

// singlePacket runs a fan-out over one HTTP/2 connection (h2c with prior knowledge for http://,
// ALPN h2 for https://).
func (e *HTTP) singlePacket(ctx context.Context, req Request, n int) (FanoutResult, error) {
	u, err := url.Parse(strings.ReplaceAll(e.cfg.URL, "{tool}", url.PathEscape(req.Tool)))
	if err != nil {
		return FanoutResult{}, err
	}
	hr, err := e.newRequest(context.Background(), req)
	if err != nil {
		return FanoutResult{}, err
	}
	body, _ := io.ReadAll(hr.Body)
	timeout := e.timeout(req)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	conn, err := e.cfg.Policy.DialContext(ctx, "tcp", addr)
	if err != nil {
		return FanoutResult{}, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if u.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: u.Hostname(), NextProtos: []string{"h2"}})
		if err := tc.HandshakeContext(ctx); err != nil {
			return FanoutResult{}, fmt.Errorf("tls handshake: %w", err)
		}
		if tc.ConnectionState().NegotiatedProtocol != "h2" {
			return FanoutResult{}, errors.New("the server does not speak HTTP/2 (ALPN h2); use sync: last-byte")
		}
		conn = tc
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	var wmu sync.Mutex
	bw := bufio.NewWriter(conn)
	fr := http2.NewFramer(bw, bufio.NewReader(conn))
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	write := func(f func() error) error {
		wmu.Lock()
		defer wmu.Unlock()
		if err := f(); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := write(func() error {
		if _, err := bw.WriteString(http2.ClientPreface); err != nil {
			return err
		}
		return fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 24})
	}); err != nil {
		return FanoutResult{}, fmt.Errorf("send preface: %w", err)
	}

	streams := make([]*h2Stream, n)
	byID := map[uint32]*h2Stream{}
	for i := range streams {
		s := &h2Stream{id: uint32(2*i + 1), header: http.Header{}}
		streams[i], byID[s.id] = s, s
	}
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	settings := make(chan uint32, 1) // the server's max concurrent streams
	readErr := make(chan error, 1)
	go func() {
		gotSettings := false
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				mu.Lock()
				for _, s := range streams {
					if !s.done {
						s.done, s.err = true, err
					}
				}
				cond.Broadcast()
				mu.Unlock()
				if !gotSettings {
					close(settings)
				}
				readErr <- err
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if f.IsAck() {
					continue
				}
				_ = write(fr.WriteSettingsAck)
				if !gotSettings {
					gotSettings = true
					max := uint32(1 << 31)
					if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
						max = v
					}
					settings <- max
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					_ = write(func() error { return fr.WritePing(true, f.Data) })
				}
			case *http2.MetaHeadersFrame:
				mu.Lock()
				if s := byID[f.StreamID]; s != nil {
					if s.status == 0 {
						s.answered = time.Now()
						s.status, _ = strconv.Atoi(f.PseudoValue("status"))
					}
					for _, hf := range f.RegularFields() {
						s.header.Add(hf.Name, hf.Value)
					}
					if f.StreamEnded() {
						s.done = true
						cond.Broadcast()
					}
				}
				mu.Unlock()
			case *http2.DataFrame:
				mu.Lock()
				if s := byID[f.StreamID]; s != nil {
					s.body.Write(f.Data())
					if f.StreamEnded() {
						s.done = true
						cond.Broadcast()
					}
				}
				mu.Unlock()
				if l := uint32(len(f.Data())); l > 0 {
					_ = write(func() error {
						if err := fr.WriteWindowUpdate(0, l); err != nil {
							return err
						}
						return fr.WriteWindowUpdate(f.StreamID, l)
					})
				}
			case *http2.RSTStreamFrame:
				mu.Lock()
				if s := byID[f.StreamID]; s != nil && !s.done {
					s.done, s.reset, s.err = true, true, fmt.Errorf("stream reset by the server: %v", f.ErrCode)
					cond.Broadcast()
				}
				mu.Unlock()
			case *http2.GoAwayFrame:
				mu.Lock()
				for _, s := range streams {
					if s.id > f.LastStreamID && !s.done {
						s.done, s.reset, s.err = true, true, errors.New("refused by GOAWAY")
					}
				}
				cond.Broadcast()
				mu.Unlock()
			}
		}
	}()

	var max uint32
	select {
	case v, ok := <-settings:
		if !ok {
			return FanoutResult{}, fmt.Errorf("the server does not speak HTTP/2 (no SETTINGS after the preface: %v); use sync: last-byte", <-readErr)
		}
		max = v
	case <-ctx.Done():
		return FanoutResult{}, errors.New("no HTTP/2 SETTINGS from the server; use sync: last-byte")
	}
	if uint32(n) > max {
		return FanoutResult{}, fmt.Errorf("%d copies exceed the server's %d concurrent HTTP/2 streams", n, max)
	}

	// Everything but the end of each stream.
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	start := time.Now()
	for _, s := range streams {
		hbuf.Reset()
		fields := [][2]string{{":method", hr.Method}, {":scheme", u.Scheme}, {":authority", u.Host}, {":path", u.RequestURI()},
			{"content-length", strconv.Itoa(len(body))}}
		for k, vs := range hr.Header {
			for _, v := range vs {
				fields = append(fields, [2]string{strings.ToLower(k), v})
			}
		}
		for _, f := range fields {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		block := append([]byte(nil), hbuf.Bytes()...)
		id := s.id
		if err := write(func() error {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true}); err != nil {
				return err
			}
			return fr.WriteData(id, false, body)
		}); err != nil {
			return FanoutResult{}, fmt.Errorf("send stream %d: %w", id, err)
		}
	}
	// The release: every stream's END_STREAM in one write.
	var final bytes.Buffer
	ff := http2.NewFramer(&final, nil)
	for _, s := range streams {
		_ = ff.WriteData(s.id, true, nil)
	}
	wmu.Lock()
	sent := time.Now() // before the write, as in the HTTP/1 release: no answer precedes it
	_, werr := conn.Write(final.Bytes())
	wmu.Unlock()

	mu.Lock()
	for {
		all := true
		for _, s := range streams {
			all = all && s.done
		}
		if all || ctx.Err() != nil {
			break
		}
		cond.Wait()
	}
	mu.Unlock()

	out := FanoutResult{Results: make([]Result, n), Offsets: make([]time.Duration, n)}
	mu.Lock()
	defer mu.Unlock()
	for i, s := range streams {
		res := Result{Start: start, Sent: sent}
		switch {
		case werr != nil:
			out.Results[i] = finish(res, Info, "send: "+werr.Error())
		case s.reset && s.status == 0:
			out.Results[i] = finish(res, Fail, s.err.Error())
		case !s.done || s.status == 0:
			msg := "no response"
			if s.err != nil {
				msg = "connection lost after sending: " + s.err.Error()
			} else if ctx.Err() != nil {
				msg = fmt.Sprintf("no response within %s (timeout)", timeout)
			}
			out.Results[i] = finish(res, Info, msg)
		default:
			res.Answered = s.answered
			resp := &http.Response{StatusCode: s.status, Header: s.header, Body: io.NopCloser(bytes.NewReader(s.body.Bytes()))}
			out.Results[i] = lose(e.read(ctx, res, resp, timeout), req.LoseResponse)
		}
	}
	out.SpreadUS, out.Overlapped = 0, overlapped(out.Results)
	return out, nil
}
