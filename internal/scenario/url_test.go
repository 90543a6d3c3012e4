package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	tests := []struct{ url, err string }{
		{"http://127.0.0.1:8080/tools/{tool}", ""},
		{"https://[::1]:8443/mcp", ""},
		{"http://127.0.0.1:{{ services.rs.port }}/tools/{tool}", ""},
		{"{{ sinks.pp.url }}/tools/{tool}", ""},
		{"http://[::1/x", "is not a valid URL: missing ']' in host"},
		{"http://127.0.0.1:port/x", "is not a valid URL: invalid port"},
		{"127.0.0.1:8080/x", "is not a valid URL"},
		{"localhost:8080/x", "is not an http:// or https:// URL"},
		{"ftp://127.0.0.1/x", "is not an http:// or https:// URL"},
		{"http:///x", "has no host"},
		{"/tools/{tool}", "is not an http:// or https:// URL"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckURL(tc.url)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("CheckURL(%q) = %v", tc.url, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("CheckURL(%q) = %v, want %q", tc.url, err, tc.err)
			}
		})
	}
}

// TestLongLineExcerpt checks that an error on a 100 KB line shows a window of it around the
// column, once, with the caret under the mistake.
func TestLongLineExcerpt(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	path := filepath.Join(t.TempDir(), "long.yaml")
	src := "name: long\nsteps:\n  - call_tool: t\n    args: {a: " + long + "}\n    timeout: " + long + "\n    fanuot: 1 # " + long + "\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]string{path}, Options{})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) > 2000 {
		t.Errorf("the errors are %d bytes long:\n%.3000s", len(msg), msg)
	}
	for _, want := range []string{path + ":5:14: timeout must be a duration", path + `:6:5: unknown field "fanuot"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
	// The caret points at the column in the excerpt.
	line, caret := excerpt("abc"+long+"def", len(long)+3)
	if r := []rune(line); len(r) > excerptWidth+2 || r[caret] != 'd' || !strings.HasPrefix(line, "…") {
		t.Errorf("excerpt %q caret %d", line, caret)
	}
	if line, caret := excerpt("short line", 6); line != "short line" || caret != 6 {
		t.Errorf("short excerpt %q %d", line, caret)
	}
}
