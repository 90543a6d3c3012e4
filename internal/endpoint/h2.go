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

	"github.com/idemtest/idemtest/internal/outcome"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

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
	hr, err := e.newRequest(context.Background(), req)
	if err != nil {
		return FanoutResult{}, err
	}
	body, _ := io.ReadAll(hr.Body)
	timeout := e.timeout(req)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	conn, err := e.dialH2(ctx, hr.URL)
	if err != nil {
		return FanoutResult{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	c := newH2Conn(conn, n)
	if err := c.preface(); err != nil {
		return FanoutResult{}, fmt.Errorf("send preface: %w", err)
	}
	go c.readFrames()
	if err := c.awaitSettings(ctx, n); err != nil {
		return FanoutResult{}, err
	}
	start := time.Now()
	if err := c.sendHeads(hr, body); err != nil {
		return FanoutResult{}, err
	}
	sent, werr := c.release()
	c.wait(ctx)
	fo := e.collect(ctx, c, req, timeout, start, sent, werr)
	// The copies of one fan-out share the request, and so its traceparent.
	for i := range fo.Results {
		fo.Results[i].TraceID = TraceIDOf(hr.Header.Get(TraceParentHeader))
	}
	return fo, nil
}

// dialH2 connects to the URL's host through the outbound policy; for https:// it negotiates h2
// by ALPN.
func (e *HTTP) dialH2(ctx context.Context, u *url.URL) (net.Conn, error) {
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
		return nil, fmt.Errorf("connect: %w", err)
	}
	if u.Scheme != "https" {
		return conn, nil
	}
	tc := tls.Client(conn, &tls.Config{ServerName: u.Hostname(), NextProtos: []string{"h2"}})
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	if tc.ConnectionState().NegotiatedProtocol != "h2" {
		conn.Close()
		return nil, errors.New("the server does not speak HTTP/2 (ALPN h2); use sync: last-byte")
	}
	return tc, nil
}

// h2conn is the client side of one HTTP/2 connection carrying a fan-out's n streams (ids 1, 3,
// 5, …): the writes, and the frame reader that fills the streams in.
type h2conn struct {
	conn net.Conn
	bw   *bufio.Writer
	fr   *http2.Framer
	wmu  sync.Mutex // serialises writes of the sender and the reader (acks, window updates)

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a stream is done
	streams []*h2Stream
	byID    map[uint32]*h2Stream

	settings    chan uint32 // the server's max concurrent streams; closed if none came
	readErr     chan error  // why the reader stopped
	gotSettings bool        // read by the reader goroutine only
}

func newH2Conn(conn net.Conn, n int) *h2conn {
	c := &h2conn{conn: conn, bw: bufio.NewWriter(conn), byID: map[uint32]*h2Stream{},
		settings: make(chan uint32, 1), readErr: make(chan error, 1)}
	c.fr = http2.NewFramer(c.bw, bufio.NewReader(conn))
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.cond = sync.NewCond(&c.mu)
	c.streams = make([]*h2Stream, n)
	for i := range c.streams {
		s := &h2Stream{id: uint32(2*i + 1), header: http.Header{}}
		c.streams[i], c.byID[s.id] = s, s
	}
	return c
}

// write runs f's frame writes under the write lock and flushes them.
func (c *h2conn) write(f func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := f(); err != nil {
		return err
	}
	return c.bw.Flush()
}

// preface sends the client preface and the client's SETTINGS.
func (c *h2conn) preface() error {
	return c.write(func() error {
		if _, err := c.bw.WriteString(http2.ClientPreface); err != nil {
			return err
		}
		return c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 24})
	})
}

// readFrames reads frames until the connection fails, then ends every open stream with that
// error.
func (c *h2conn) readFrames() {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.endOpen(func(*h2Stream) bool { return true }, err, false)
			if !c.gotSettings {
				close(c.settings)
			}
			c.readErr <- err
			return
		}
		c.handle(f)
	}
}

// handle applies one frame from the server.
func (c *h2conn) handle(f http2.Frame) {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return
		}
		_ = c.write(c.fr.WriteSettingsAck)
		if !c.gotSettings {
			c.gotSettings = true
			max := uint32(1 << 31)
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
				max = v
			}
			c.settings <- max
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			_ = c.write(func() error { return c.fr.WritePing(true, f.Data) })
		}
	case *http2.MetaHeadersFrame:
		c.update(f.StreamID, f.StreamEnded(), func(s *h2Stream) {
			if s.status == 0 {
				s.answered = time.Now()
				s.status, _ = strconv.Atoi(f.PseudoValue("status"))
			}
			for _, hf := range f.RegularFields() {
				s.header.Add(hf.Name, hf.Value)
			}
		})
	case *http2.DataFrame:
		c.update(f.StreamID, f.StreamEnded(), func(s *h2Stream) { s.body.Write(f.Data()) })
		if l := uint32(len(f.Data())); l > 0 {
			_ = c.write(func() error {
				if err := c.fr.WriteWindowUpdate(0, l); err != nil {
					return err
				}
				return c.fr.WriteWindowUpdate(f.StreamID, l)
			})
		}
	case *http2.RSTStreamFrame:
		c.endOpen(func(s *h2Stream) bool { return s.id == f.StreamID }, fmt.Errorf("stream reset by the server: %v", f.ErrCode), true)
	case *http2.GoAwayFrame:
		c.endOpen(func(s *h2Stream) bool { return s.id > f.LastStreamID }, errors.New("refused by GOAWAY"), true)
	}
}

// update applies fill to stream id (if it is one of ours) and marks it done when ended.
func (c *h2conn) update(id uint32, ended bool, fill func(*h2Stream)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.byID[id]; s != nil {
		fill(s)
		if ended {
			s.done = true
			c.cond.Broadcast()
		}
	}
}

// endOpen ends the streams not yet done that match with err; reset says the server refused them.
func (c *h2conn) endOpen(match func(*h2Stream) bool, err error, reset bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.streams {
		if match(s) && !s.done {
			s.done, s.err = true, err
			s.reset = reset
		}
	}
	c.cond.Broadcast()
}

// awaitSettings waits for the server's first SETTINGS and checks that n streams fit in it.
func (c *h2conn) awaitSettings(ctx context.Context, n int) error {
	var max uint32
	select {
	case v, ok := <-c.settings:
		if !ok {
			return fmt.Errorf("the server does not speak HTTP/2 (no SETTINGS after the preface: %w); use sync: last-byte", <-c.readErr)
		}
		max = v
	case <-ctx.Done():
		return errors.New("no HTTP/2 SETTINGS from the server; use sync: last-byte")
	}
	if uint32(n) > max {
		return fmt.Errorf("%d copies exceed the server's %d concurrent HTTP/2 streams", n, max)
	}
	return nil
}

// sendHeads sends everything but the end of each stream: the HPACK-encoded request headers and
// the body without END_STREAM.
func (c *h2conn) sendHeads(hr *http.Request, body []byte) error {
	u := hr.URL
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for _, s := range c.streams {
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
		if err := c.write(func() error {
			if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true}); err != nil {
				return err
			}
			return c.fr.WriteData(id, false, body)
		}); err != nil {
			return fmt.Errorf("send stream %d: %w", id, err)
		}
	}
	return nil
}

// release sends every stream's END_STREAM in one write. sent is taken before the write, as in
// the HTTP/1 release: no answer precedes it.
func (c *h2conn) release() (sent time.Time, err error) {
	var final bytes.Buffer
	ff := http2.NewFramer(&final, nil)
	for _, s := range c.streams {
		_ = ff.WriteData(s.id, true, nil)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	sent = time.Now()
	_, err = c.conn.Write(final.Bytes())
	return sent, err
}

// wait blocks until every stream is done or ctx ends.
func (c *h2conn) wait(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		all := true
		for _, s := range c.streams {
			all = all && s.done
		}
		if all || ctx.Err() != nil {
			return
		}
		c.cond.Wait()
	}
}

// collect turns the streams into the fan-out's results; werr is the release's write error.
func (e *HTTP) collect(ctx context.Context, c *h2conn, req Request, timeout time.Duration, start, sent time.Time, werr error) FanoutResult {
	n := len(c.streams)
	out := FanoutResult{Results: make([]Result, n), Offsets: make([]time.Duration, n)}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.streams {
		res := Result{Start: start, Sent: sent}
		switch {
		case werr != nil:
			out.Results[i] = Finish(res, outcome.Info, "send: "+werr.Error())
		case s.reset && s.status == 0:
			out.Results[i] = Finish(res, outcome.Fail, s.err.Error())
		case !s.done || s.status == 0:
			msg := "no response"
			if s.err != nil {
				msg = "connection lost after sending: " + s.err.Error()
			} else if ctx.Err() != nil {
				msg = fmt.Sprintf("no response within %s (timeout)", timeout)
			}
			out.Results[i] = Finish(res, outcome.Info, msg)
		default:
			res.Answered = s.answered
			resp := &http.Response{StatusCode: s.status, Header: s.header, Body: io.NopCloser(bytes.NewReader(s.body.Bytes()))}
			out.Results[i] = lose(e.read(ctx, res, resp, timeout), req.LoseResponse)
		}
	}
	settle(out.Results)
	out.SpreadUS, out.Overlapped = 0, overlapped(out.Results)
	return out
}
