package regularfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"a regular file is read", small, ""},
		{"a file over the limit is refused", big, "larger than 10 bytes"},
		{"a directory is refused", dir, "not a regular file (a directory)"},
		{"a device behind a symlink is refused, never opened", link, "not a regular file (a device)"},
		{"a missing file is the os error", filepath.Join(dir, "none"), "no such file"},
	}
	if runtime.GOOS != "windows" {
		fifo := filepath.Join(dir, "fifo")
		mkfifo(t, fifo)
		tests = append(tests, struct{ name, path, want string }{"a named pipe without a writer is refused at once", fifo, "not a regular file (a named pipe)"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Read(context.Background(), tt.path, 10)
			b2, err2 := ReadSmall(tt.path, 10)
			if string(b2) != string(b) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
				t.Errorf("ReadSmall = %q, %v; Read = %q, %v", b2, err2, b, err)
			}
			if tt.want == "" {
				if err != nil || string(b) != `{"a":1}` {
					t.Fatalf("Read = %q, %v", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read error = %v, want %q", err, tt.want)
			}
		})
	}
	var nr *NotRegularError
	if _, err := Read(context.Background(), dir, 10); !errors.As(err, &nr) {
		t.Errorf("a directory: %T, want *NotRegularError", err)
	}
	var tl *TooLargeError
	if _, err := Read(context.Background(), big, 10); !errors.As(err, &tl) || tl.Limit != 10 {
		t.Errorf("a big file: %v, want *TooLargeError of 10", err)
	}
}

// TestReadAllEndsWithContext: a read blocked on something that never answers (a pipe with a
// writer that writes nothing) returns with the context's error once the context ends.
func TestReadAllEndsWithContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ReadAll(ctx, r, 1<<20)
		done <- err
	}()
	if _, err := w.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadAll after cancel = %v, want context.Canceled", err)
	}
}
