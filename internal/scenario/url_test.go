package scenario

import (
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
