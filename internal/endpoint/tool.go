package endpoint

import "context"

// Tool is what a server says about one of its tools.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	ReadOnly    bool           `json:"readOnlyHint"`
	Idempotent  bool           `json:"idempotentHint"`
	Destructive *bool          `json:"destructiveHint,omitempty"`
	InputSchema map[string]any `json:"inputSchema,omitempty"`
	// Method and Path are set for an operation of an OpenAPI document (the annotations then
	// come from the method: GET, HEAD and OPTIONS read-only; PUT and DELETE idempotent).
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// KeyHeader is the idempotency key header the operation declares.
	KeyHeader string `json:"key_header,omitempty"`
	// Finding is what the document lacks for retry safety ("no idempotency key declared").
	Finding string `json:"finding,omitempty"`
	// TaskSupport is the tool's execution.taskSupport in tools/list ("required": it runs only
	// as an MCP task, which idemtest does not support).
	TaskSupport string `json:"taskSupport,omitempty"`
}

// AcceptsArg reports whether the input schema declares the argument name.
func (t Tool) AcceptsArg(name string) bool {
	props, _ := t.InputSchema["properties"].(map[string]any)
	_, ok := props[name]
	return ok
}

// ToolLister is implemented by endpoints that can list their tools.
type ToolLister interface {
	// Tools lists the tools, sorted by name; the slice is the caller's.
	Tools(ctx context.Context) ([]Tool, error)
	// Tool looks one tool up by name (ok false: the server has none of that name), without
	// copying the list: a run asks for every call it makes.
	Tool(ctx context.Context, name string) (t Tool, ok bool, err error)
}
