package endpoint

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2peer is a scripted HTTP/2 server on the other end of a net.Pipe: the test writes frames with
// its framer; every frame the client sends is passed on frames.
type h2peer struct {
	fr     *http2.Framer
	frames chan http2.Frame
	data   chan dataFrame // DATA frames, whose payload a copied DataFrame cannot hold
}

type dataFrame struct {
	stream uint32
	end    bool
	data   string
}

func newH2Peer(t *testing.T, conn net.Conn) *h2peer {
	t.Helper()
	p := &h2peer{frames: make(chan http2.Frame, 64), data: make(chan dataFrame, 64)}
	p.fr = http2.NewFramer(conn, conn)
	go func() {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
			close(p.frames)
			return
		}
		rd := http2.NewFramer(io.Discard, conn)
		rd.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		for {
			f, err := rd.ReadFrame()
			if err != nil {
				close(p.frames)
				return
			}
			// A frame's payload is only valid until the next read.
			switch f := f.(type) {
			case *http2.PingFrame:
				p.frames <- &http2.PingFrame{FrameHeader: f.FrameHeader, Data: f.Data}
			case *http2.WindowUpdateFrame:
				p.frames <- &http2.WindowUpdateFrame{FrameHeader: f.FrameHeader, Increment: f.Increment}
			case *http2.SettingsFrame:
				p.frames <- &http2.SettingsFrame{FrameHeader: f.FrameHeader}
			case *http2.MetaHeadersFrame:
				p.frames <- &http2.MetaHeadersFrame{HeadersFrame: &http2.HeadersFrame{FrameHeader: f.FrameHeader}, Fields: f.Fields}
			case *http2.DataFrame:
				p.data <- dataFrame{f.StreamID, f.StreamEnded(), string(f.Data())}
			}
		}
	}()
	return p
}

// next returns the next frame the client sent of type T, skipping others.
func next[T http2.Frame](t *testing.T, p *h2peer) T {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-p.frames:
			if !ok {
				t.Fatal("the client closed the connection")
			}
			if v, ok := f.(T); ok {
				return v
			}
		case <-timeout:
			var zero T
			t.Fatalf("no %T from the client", zero)
		}
	}
}

func headerBlock(fields ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return b.Bytes()
}

// TestH2ConnReadsFrames drives the frame reader with each frame type a server sends: SETTINGS,
// PING, HEADERS, DATA (answered with window updates), RST_STREAM and GOAWAY.
func TestH2ConnReadsFrames(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	c := newH2Conn(client, 4) // streams 1, 3, 5, 7
	peer := newH2Peer(t, server)
	if err := c.preface(); err != nil {
		t.Fatal(err)
	}
	go c.readFrames()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(peer.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 4}))
	if err := c.awaitSettings(ctx, 4); err != nil {
		t.Fatalf("4 streams within a limit of 4: %v", err)
	}
	// The client's own SETTINGS come first, then its ack of the server's.
	for !next[*http2.SettingsFrame](t, peer).IsAck() {
	}

	must(peer.fr.WritePing(false, [8]byte{1, 2, 3}))
	if ping := next[*http2.PingFrame](t, peer); !ping.IsAck() || ping.Data != [8]byte{1, 2, 3} {
		t.Errorf("ping answered with %+v, want an ack with the same data", ping)
	}

	// Stream 1: an answer in HEADERS then DATA with END_STREAM.
	must(peer.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
		BlockFragment: headerBlock(":status", "201", "x-request-id", "r1")}))
	must(peer.fr.WriteData(1, true, []byte(`{"ok":true}`)))
	if wu := next[*http2.WindowUpdateFrame](t, peer); wu.Increment != 11 {
		t.Errorf("window update of %d, want the 11 bytes read", wu.Increment)
	}
	// Stream 3: headers only, ended there. Stream 5: reset. Stream 7: beyond GOAWAY's last id.
	must(peer.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, EndHeaders: true, EndStream: true,
		BlockFragment: headerBlock(":status", "409")}))
	must(peer.fr.WriteRSTStream(5, http2.ErrCodeRefusedStream))
	must(peer.fr.WriteGoAway(5, http2.ErrCodeNo, nil))
	c.wait(ctx)

	c.mu.Lock()
	defer c.mu.Unlock()
	s1, s3, s5, s7 := c.byID[1], c.byID[3], c.byID[5], c.byID[7]
	if !s1.done || s1.status != 201 || s1.header.Get("X-Request-Id") != "r1" || s1.body.String() != `{"ok":true}` || s1.answered.IsZero() {
		t.Errorf("stream 1 = done %v status %d header %v body %q", s1.done, s1.status, s1.header, s1.body.String())
	}
	if !s3.done || s3.status != 409 || s3.reset {
		t.Errorf("stream 3 = done %v status %d reset %v", s3.done, s3.status, s3.reset)
	}
	if !s5.reset || !strings.Contains(s5.err.Error(), "REFUSED_STREAM") {
		t.Errorf("stream 5 = reset %v err %v, want reset by the server", s5.reset, s5.err)
	}
	if !s7.reset || s7.err == nil || s7.err.Error() != "refused by GOAWAY" {
		t.Errorf("stream 7 = reset %v err %v, want refused by GOAWAY", s7.reset, s7.err)
	}
}

// TestH2ConnLimits: a server that allows fewer streams than copies, or that closes without
// SETTINGS (HTTP/1 only), is refused before anything is sent.
func TestH2ConnLimits(t *testing.T) {
	t.Run("max concurrent streams", func(t *testing.T) {
		client, server := net.Pipe()
		defer client.Close()
		defer server.Close()
		c := newH2Conn(client, 3)
		peer := newH2Peer(t, server)
		c.preface()
		go c.readFrames()
		peer.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 2})
		err := c.awaitSettings(context.Background(), 3)
		if err == nil || err.Error() != "3 copies exceed the server's 2 concurrent HTTP/2 streams" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no settings", func(t *testing.T) {
		client, server := net.Pipe()
		defer client.Close()
		c := newH2Conn(client, 2)
		go io.Copy(io.Discard, server)
		go func() {
			server.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			server.Close()
		}()
		c.preface()
		go c.readFrames()
		err := c.awaitSettings(context.Background(), 2)
		if err == nil || !strings.Contains(err.Error(), "does not speak HTTP/2") {
			t.Errorf("err = %v", err)
		}
		c.wait(context.Background()) // every stream ended by the read error
	})
}

// writeCounter counts the writes made to a connection.
type writeCounter struct {
	net.Conn
	writes atomic.Int32
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(b)
}

// TestH2ConnSendsHeadsThenReleases reads what the client sends as the peer: each stream's
// HPACK-encoded request and body without END_STREAM, then, in one write, every stream's end.
func TestH2ConnSendsHeadsThenReleases(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	wc := &writeCounter{Conn: client}
	c := newH2Conn(wc, 3)
	peer := newH2Peer(t, server)
	if err := c.preface(); err != nil {
		t.Fatal(err)
	}
	hr, _ := http.NewRequest("POST", "http://127.0.0.1:8080/tools/issue_refund?x=1", nil)
	hr.Header.Set("Idempotency-Key", "k1")
	body := []byte(`{"amount":10}`)
	if err := c.sendHeads(hr, body); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{1, 3, 5} {
		h := next[*http2.MetaHeadersFrame](t, peer)
		got := map[string]string{}
		for _, f := range h.Fields {
			got[f.Name] = f.Value
		}
		want := map[string]string{":method": "POST", ":scheme": "http", ":authority": "127.0.0.1:8080",
			":path": "/tools/issue_refund?x=1", "content-length": "13", "idempotency-key": "k1"}
		if h.StreamID != id || !reflect.DeepEqual(got, want) {
			t.Errorf("stream %d headers = %v, want %v on stream %d", h.StreamID, got, want, id)
		}
		if d := <-peer.data; d.stream != id || d.end || d.data != string(body) {
			t.Errorf("stream %d body = %+v, want the body without END_STREAM", id, d)
		}
	}
	before := wc.writes.Load()
	if _, err := c.release(); err != nil {
		t.Fatal(err)
	}
	if n := wc.writes.Load() - before; n != 1 {
		t.Errorf("the release took %d writes, want 1", n)
	}
	for _, id := range []uint32{1, 3, 5} {
		if d := <-peer.data; d.stream != id || !d.end || d.data != "" {
			t.Errorf("release frame = %+v, want an empty END_STREAM on stream %d", d, id)
		}
	}
}
