package mcp

import (
	"encoding/json"
	"testing"
)

// The Go SDK's Tool type has no execution field: the raw tools/list answer is where idemtest
// learns that a tool runs only as an MCP task.
func TestNoteTasks(t *testing.T) {
	c := &losingConn{}
	c.noteTasks(json.RawMessage(`{"tools":[{"name":"research","execution":{"taskSupport":"required"}},{"name":"echo"},{"name":"maybe","execution":{"taskSupport":"optional"}}]}`))
	for name, want := range map[string]string{"research": "required", "echo": "", "maybe": "optional", "unknown": ""} {
		if got := c.taskSupport(name); got != want {
			t.Errorf("taskSupport(%s) = %q, want %q", name, got, want)
		}
	}
	var none *losingConn
	if got := none.taskSupport("research"); got != "" {
		t.Errorf("nil conn: %q", got)
	}
}
