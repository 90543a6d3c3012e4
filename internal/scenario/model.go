package scenario

import (
	"regexp"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
	"github.com/idemtest/idemtest/internal/dispatch"
	"github.com/idemtest/idemtest/internal/openapi"
	"github.com/idemtest/idemtest/internal/outcome"
	"github.com/idemtest/idemtest/internal/redact"
)

// ConfigName is the shared config file looked up next to the scenarios and above them.
const ConfigName = "idemtest.yaml"

// Scenario is one loaded, validated scenario file with its config merged in.
type Scenario struct {
	Name   string
	Tags   []string
	Trials int
	// Endpoint is the default endpoint of the scenario's call steps; EndpointPos is where it is
	// written (in the scenario or its config).
	Endpoint    string
	EndpointPos Pos
	File        string
	Pos         Pos
	Steps       []*Step
	// Endpoints and Services are the config's, overridden by the scenario's own by name.
	Endpoints map[string]*Endpoint
	Services  map[string]*Service
	Sinks     map[string]*Sink
	Probes    map[string]*Probe
	// AllowHosts are the non-loopback hosts calls may go to (scenario, config and --allow-host).
	AllowHosts []string
	// Config is the path of the idemtest.yaml merged in, or "".
	Config string
	// Check is the config's check: section (only for commands that load the config alone).
	Check *CheckConfig
	// Coverage is the config's coverage: section (nil when it has none).
	Coverage *CoverageConfig
	// Audit is the config's audit: section (nil when it has none).
	Audit *AuditConfig
	// Secrets are what reports must not show, of the scenario and its config: URL and DSN
	// passwords, credential header values, and the values of variables named like secrets or
	// listed under secrets: (see package redact). Ordinary values are not among them.
	Secrets *redact.Secrets
}

// StepKind says what a step does.
type StepKind int

// The kinds of step.
const (
	CallStep StepKind = iota
	AssertStep
	SleepStep
)

// Step is one step in either written form; after loading nothing knows which form it was.
type Step struct {
	Kind StepKind
	// Index is the step's place in the scenario, from 0.
	Index int
	// ID names the step in assertions; steps without one get "step<N>" (1-based).
	ID  string
	Pos Pos

	// Call steps.
	Tool     string
	Endpoint string
	Args     any // plain values; strings with {{ }} are *assert.Template
	Key      *assert.Template
	RetryOf  string
	Fanout   int
	Sync     dispatch.Sync
	// StaggerMin and StaggerMax spread a fan-out's releases over random offsets in the range.
	StaggerMin, StaggerMax time.Duration
	Timeout                time.Duration
	LoseResponse           bool
	Retry                  *Retry
	Expect                 outcome.Outcome
	WithoutKey             bool
	// VerdictOff exempts the step's calls from the exactly-once verdict (verdict: off).
	VerdictOff bool

	// Assert steps.
	Assert     *assert.Program
	Eventually time.Duration

	// Sleep steps.
	Sleep time.Duration

	// Positions of fields that validation may complain about.
	EndpointPos, RetryOfPos Pos
	// SyncPos is where sync: was written; zero when it was not.
	SyncPos Pos
}

// Retry is the agent framework's retry loop: the same key on every attempt.
type Retry struct {
	Attempts int
	// On lists what is retried.
	On      []RetryOn
	Backoff time.Duration
}

// RetryOn is a condition on which a retry loop tries again.
type RetryOn string

const (
	// RetryInfo: the outcome was indeterminate.
	RetryInfo RetryOn = "info"
	// RetryConflict: the server said a request with this key is in progress.
	RetryConflict RetryOn = "conflict"
	// Retry5xx: the server answered with a 5xx status.
	Retry5xx RetryOn = "5xx"
	// RetryFail: the call failed.
	RetryFail RetryOn = "fail"
)

// RetryOns are the conditions retry.on may list.
var RetryOns = []RetryOn{RetryInfo, RetryConflict, Retry5xx, RetryFail}

// Endpoint is a named tool server.
type Endpoint struct {
	Name string
	Pos  Pos
	HTTP *HTTPEndpoint
	MCP  *MCPEndpoint
	Key  KeySpec
	// Mutating lists the tools that get an idempotency key; nil means every tool.
	Mutating []string
	// AllowHosts lists the non-loopback hosts this endpoint may be sent duplicates on.
	AllowHosts []string
	// Ignore lists the dotted paths of answer fields that change on every answer (requestId,
	// meta.at), left out when the verdict compares answers (compare: {ignore: [...]}).
	Ignore []string
	// Natural lists tools idempotent by nature: their answers are not judged by the verdict.
	Natural []string
	// Refusal lists the error-shaped successes the server refuses a call with, beside the
	// usual ones: each maps dotted paths of the answer to the values that make it a refusal
	// (refusal: [{status: failed}]).
	Refusal []map[string]any
	// URLPos is where the endpoint's URL (or OpenAPI document) is written, for the host policy.
	URLPos Pos
	// URLsPos are where each entry of urls: is written, for the host policy.
	URLsPos []Pos
	// Spread is how calls are spread over the endpoint's instances when it has several (urls:,
	// or a URL naming a service with replicas); "" means round-robin.
	Spread dispatch.Spread
}

// IsMutating reports whether tool gets an idempotency key, when the config says; an MCP
// endpoint without a mutating list asks the server (tools without readOnlyHint).
func (e *Endpoint) IsMutating(tool string) bool {
	if e.Mutating == nil {
		return true
	}
	for _, t := range e.Mutating {
		if t == tool {
			return true
		}
	}
	return false
}

// IsNatural reports whether the config names tool as idempotent by nature.
func (e *Endpoint) IsNatural(tool string) bool {
	for _, t := range e.Natural {
		if t == tool {
			return true
		}
	}
	return false
}

// HTTPEndpoint is a JSON-over-HTTP tool server.
type HTTPEndpoint struct {
	// URL may contain {tool} and {{ }} parts (services.NAME.port).
	URL *assert.Template
	// URLs, instead of URL, name the instances of a deployment idemtest does not start: one
	// endpoint of several instances.
	URLs    []*assert.Template
	Method  string
	Headers map[string]*assert.Template
	// Timeout bounds every call that sets no timeout of its own.
	Timeout time.Duration
	// MaxResponseBytes caps a response body.
	MaxResponseBytes int64
	// OpenAPI is the document the tools come from (a file or an http(s) URL), nil when the
	// tools are configured by hand; with it, URL (optional) overrides the document's server.
	OpenAPI *assert.Template
	// Spec is the document, loaded with the config when OpenAPI names a file; a URL (perhaps
	// served by a service) is read when the endpoint is first used.
	Spec *openapi.Spec
	// OpenAPIPos is where openapi: is written, for errors found when the document is read.
	OpenAPIPos Pos
}

// MCPEndpoint is an MCP server, started as a command (stdio) or reached at a streamable HTTP URL.
type MCPEndpoint struct {
	Command []*assert.Template
	Env     map[string]*assert.Template
	Dir     string
	URL     *assert.Template
	// URLs, instead of URL, name the instances of a streamable HTTP server idemtest does not
	// start, each called on an MCP session of its own.
	URLs        []*assert.Template
	Headers     map[string]*assert.Template
	Timeout     time.Duration
	InitTimeout time.Duration
	// ConflictMatch recognises an isError result that reports an in-flight duplicate; nil uses
	// the default pattern.
	ConflictMatch *regexp.Regexp
	// MaxResponseBytes caps an answer: an HTTP body (JSON or SSE) or a line from a stdio server.
	MaxResponseBytes int64
}

// KeySpec says where the idempotency key goes: exactly one field is set.
type KeySpec struct {
	Header string
	Arg    string
	// Meta is the _meta entry of an MCP request.
	Meta string
	// Format is the shape of the keys idemtest makes (zero: <session>-<index>).
	Format KeyFormat
}

// Service is a process started before the scenarios that use it and stopped after the run.
type Service struct {
	Name    string
	Pos     Pos
	Command []*assert.Template
	Env     map[string]*assert.Template
	Dir     string
	Ready   Ready
	// Replicas is how many processes of the service run, each with its own {{ port }} and
	// {{ replica }} (1 to Replicas); at least 1.
	Replicas int
	// Config is the file that declared it; services are shared by identity (file, name).
	Config string
}

// Ready says how to tell that a service is up; at most one of HTTP, TCP and Log is set.
type Ready struct {
	HTTP    *assert.Template
	TCP     *assert.Template
	Log     *regexp.Regexp
	Timeout time.Duration
}

// MaxReplicas bounds a service's replicas.
const MaxReplicas = 64

// MaxFanout bounds a fan-out step's copies.
const MaxFanout = 1000

// MaxTrials bounds a scenario's trials.
const MaxTrials = 100000

// Sink is a recording fake of a downstream system, served by idemtest on loopback.
type Sink struct {
	Name   string
	Pos    Pos
	Port   int
	Routes []*SinkRoute
	// KeyHeader is recorded as each entry's key besides Idempotency-Key.
	KeyHeader string
	// Config is the file that declared it; sinks are shared by identity (file, name).
	Config string
}

// SinkRoute is one route of a sink and how it answers.
type SinkRoute struct {
	Name    string
	Method  string
	Path    string
	Status  int
	JSON    any // plain values; strings with {{ }} are *assert.Template (seq, body, params, …)
	Headers map[string]string
	Delay   time.Duration
	// Faults, counted per trial.
	FailFirst, HangFirst, DropResponseFirst int
}

// Probe is a named read-only observation, evaluated fresh whenever an assertion uses it.
type Probe struct {
	Name     string
	Pos      Pos
	HTTP     *HTTPProbe
	CallTool *ToolProbe
	SQL      *SQLProbe
	Redis    *RedisProbe
	File     *FileProbe
	Config   string
}

// HTTPProbe reads a URL; a JSON body is decoded.
type HTTPProbe struct {
	URL     *assert.Template
	Method  string
	Headers map[string]*assert.Template
}

// ToolProbe calls a read-only tool.
type ToolProbe struct {
	Tool     string
	Endpoint string
	Args     any
}

// SQLProbe runs a query on PostgreSQL; its value is the list of rows, each a map.
type SQLProbe struct {
	DSN   *assert.Template
	Query string
	Args  []*assert.Template
}

// RedisProbe runs a Redis command; its value is the reply.
type RedisProbe struct {
	Addr    *assert.Template
	Command []*assert.Template
}

// FileProbe reads a file a tool server keeps its state in (DESIGN §9): JSON, its value the
// decoded document, JSON Lines, its value the list of decoded lines, or an SQLite database,
// its value the rows of Query, each a map.
type FileProbe struct {
	// Path is the file; a relative path is relative to Dir.
	Path *assert.Template
	// Dir is the directory of the file that defined the probe.
	Dir string
	// Format is FileJSON, FileJSONLines or FileSQLite.
	Format string
	// Query is the SELECT an SQLite probe runs, with Args for its ? placeholders.
	Query string
	Args  []*assert.Template
	// Optional reads a missing file as null (JSON) or [] (JSON Lines, SQLite), for a server that
	// creates its file on its first write; otherwise a missing file is an error, so that a
	// misspelt path cannot read as a state that never changes.
	Optional bool
}

// The formats of a file probe.
const (
	FileJSON      = "json"
	FileJSONLines = "jsonl"
	FileSQLite    = "sqlite"
)

// ProbeEndpoint is the endpoint a call_tool probe calls in this scenario: its own, else the
// scenario's default, else the only one; "" when none of these applies.
func (s *Scenario) ProbeEndpoint(p *Probe) string {
	switch {
	case p.CallTool == nil:
		return ""
	case p.CallTool.Endpoint != "":
		return p.CallTool.Endpoint
	case s.Endpoint != "":
		return s.Endpoint
	case len(s.Endpoints) == 1:
		for name := range s.Endpoints {
			return name
		}
	}
	return ""
}
