package openapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// refSpec is a document whose one operation takes its body schema from ref.
func refSpec(ref string) string {
	return `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /orders:
    post:
      operationId: createOrder
      requestBody:
        content:
          application/json:
            schema: {$ref: "` + ref + `"}
`
}

const orderSchema = "type: object\nproperties:\n  item: {type: string}\n"

// TestFetchedRefs: a document fetched over the network references documents of its own origin
// only; a file named by it is never opened, so nothing of it reaches the error.
func TestFetchedRefs(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(orderSchema))
	}))
	defer other.Close()
	docs := map[string]string{
		"/order.yaml":    orderSchema,
		"/passwd.yaml":   refSpec("file:///etc/passwd"),
		"/zero.yaml":     refSpec("file:///dev/zero"),
		"/abs.yaml":      refSpec("/etc/passwd"),
		"/other.yaml":    refSpec(strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/order.yaml"),
		"/relative.yaml": refSpec("order.yaml"),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(d))
	}))
	defer srv.Close()
	tests := []struct {
		name, path string
		// refused: the error is a *RefError whose reason says "refused"; else an error
		// naming the ref; none when ok.
		ok, refused bool
	}{
		{name: "same origin", path: "/relative.yaml", ok: true},
		{name: "file URL", path: "/passwd.yaml", refused: true},
		{name: "device", path: "/zero.yaml", refused: true},
		// An absolute path names a path on the same server, which has none.
		{name: "absolute path", path: "/abs.yaml"},
		{name: "other origin", path: "/other.yaml", refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(t.Context(), srv.URL+tt.path, nil)
			checkRefResult(t, s, err, tt.ok, tt.refused)
		})
	}
}

// TestLocalRefs: a local document references regular files under its own directory only.
func TestLocalRefs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "spec")
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "schemas", "order.yaml"), orderSchema)
	write(filepath.Join(root, "secret.yaml"), "token: hunter2\n")
	if err := os.Symlink(filepath.Join(root, "secret.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "schemas", "order.yaml"), filepath.Join(dir, "inside.yaml")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ref   string
		ok, refused bool
	}{
		{name: "under the directory", ref: "schemas/order.yaml", ok: true},
		{name: "link inside", ref: "inside.yaml", ok: true},
		{name: "dot-dot", ref: "../secret.yaml", refused: true},
		{name: "dot-dot inside the path", ref: "schemas/../../secret.yaml", refused: true},
		{name: "link out", ref: "link.yaml", refused: true},
		{name: "absolute file URL", ref: "file://" + filepath.ToSlash(filepath.Join(root, "secret.yaml")), refused: true},
		{name: "passwd", ref: "/etc/passwd", refused: true},
		{name: "missing", ref: "schemas/none.yaml"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "api"+string(rune('a'+i))+".yaml")
			write(p, refSpec(tt.ref))
			s, err := Load(t.Context(), p, nil)
			checkRefResult(t, s, err, tt.ok, tt.refused)
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the refused file's content: %v", err)
			}
		})
	}
}

// TestFIFORef: a FIFO under the document's directory is refused at once: reading it would wait
// for a writer that never comes.
func TestFIFORef(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.yaml")
	mkfifo(t, fifo)
	p := filepath.Join(dir, "api.yaml")
	if err := os.WriteFile(p, []byte(refSpec("pipe.yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(context.Background(), p, nil)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		// A watchdog, not a speed check: release the blocked reader so the test ends.
		if w, werr := os.OpenFile(fifo, os.O_WRONLY, 0); werr == nil {
			_, _ = w.WriteString(orderSchema)
			_ = w.Close()
		}
		err = <-done
		t.Fatalf("the load waited on the FIFO until a writer came (err %v)", err)
	}
	var re *RefError
	if !errors.As(err, &re) || !errors.Is(err, errNotRegular) {
		t.Fatalf("err = %v, want a refused non-regular file", err)
	}
	t.Log(err)
}

// TestLoadCancelled: a reference on a server that never answers ends with the context.
func TestLoadCancelled(t *testing.T) {
	release, asked := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api.yaml" {
			_, _ = w.Write([]byte(refSpec("stall.yaml")))
			return
		}
		close(asked)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Load(ctx, srv.URL+"/api.yaml", nil)
		done <- err
	}()
	<-asked
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func checkRefResult(t *testing.T, s *Spec, err error, ok, refused bool) {
	t.Helper()
	if ok {
		if err != nil {
			t.Fatal(err)
		}
		o, _ := s.Operation("createOrder")
		if _, has := o.InputSchema["properties"].(map[string]any)["item"]; !has {
			t.Errorf("the referenced schema was not read: %v", o.InputSchema)
		}
		return
	}
	var re *RefError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a *RefError", err)
	}
	t.Log(err)
	if got := strings.HasPrefix(re.Reason, "refused"); got != refused {
		t.Errorf("refused = %v, want %v: %v", got, refused, err)
	}
	if strings.Contains(err.Error(), "root:") {
		t.Errorf("the error shows a local file's content: %v", err)
	}
}

// TestSpecialMainDocument: the document itself is held to regular files as its references are:
// a FIFO is refused at once instead of read as an empty document, a device before a byte of it
// is read.
func TestSpecialMainDocument(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "api.yaml")
	mkfifo(t, fifo)
	for _, name := range []string{fifo, "/dev/zero", "/dev/null"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			_, err := Load(context.Background(), name, nil)
			if !errors.Is(err, errNotRegular) {
				t.Fatalf("err = %v, want a refused non-regular file", err)
			}
			if !strings.Contains(err.Error(), "save the document to a file") {
				t.Errorf("err = %v: does not say what to do", err)
			}
		})
	}
}
