package schema

import "github.com/idemtest/idemtest/internal/scenario"

// This file is the one list of the keys each mapping of a scenario file or idemtest.yaml may
// have, with everything the JSON Schema says of them. The decoder accepts exactly these keys (an
// unknown one gets "did you mean"), and schema.json is generated from them. To add a field: add
// its line to its section here (name, kind, required, doc, further JSON Schema keywords), decode
// it in its section's file of package decode, then run go generate ./internal/scenario/schema.
// The tests fail while schema.json is stale or the decoder reads a key no section lists (or a
// listed key is never read).

// kind is the shape of a field's value; it gives the property's type (or $ref).
type kind string

const (
	kString    kind = "string"    // a scalar string (or one of an enum of strings)
	kInteger   kind = "integer"   // a whole number
	kBoolean   kind = "boolean"   // true or false
	kDuration  kind = "duration"  // a Go duration: 500ms, 2s
	kTemplate  kind = "template"  // text with {{ expr }} parts
	kStringMap kind = "stringMap" // names to strings (headers, env)
	kList      kind = "list"      // a sequence
	kMapping   kind = "mapping"   // a nested mapping: a section (ref) or names to sections (mapOf)
	kAny       kind = "any"       // any YAML value (a JSON body)
)

// p is a JSON Schema object: the keywords a field or section adds to what its kind says.
type p = map[string]any

// field is one key of a mapping.
type field struct {
	name     string
	kind     kind
	required bool
	doc      string
	more     p // further keywords: enum, pattern, minimum, items, the section it holds, …
}

// Section is a mapping's allowed keys, generated as $defs/def of schema.json.
type Section struct {
	def string
	doc string
	// open leaves other keys to another section (the hosted-runner step form is renamed to
	// a native step, which the decoder then checks).
	open bool
	// more are keywords over the whole mapping: anyOf, oneOf, dependentRequired, allOf.
	more   p
	fields []field
}

// Names returns the section's keys in order, as the decoder accepts them.
func (s Section) Names() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.name
	}
	return out
}

// ref is the keyword of a field holding the section def; mapOf of one holding names to them;
// listOf of a list of them.
func ref(def string) p    { return p{"$ref": "#/$defs/" + def} }
func mapOf(def string) p  { return p{"additionalProperties": ref(def)} }
func listOf(def string) p { return p{"items": ref(def)} }

// Keywords several fields share.
var (
	stringItems     = p{"items": p{"type": "string"}}
	nonEmptyStrings = p{"items": p{"type": "string"}, "minItems": 1}
	nonNegative     = p{"minimum": 0}
	positive        = p{"minimum": 1}
	keyFormat       = p{"anyOf": []any{p{"enum": []any{"uuid", "uuidv7", "ulid"}}, p{"pattern": `\{(random|index)\}`}}}
	keyLength       = p{"minimum": 1, "maximum": 255}
	rate            = p{"pattern": `^(off|[0-9]+(\.[0-9]+)?%?)$`}
)

func enum(values ...any) p { return p{"enum": values} }

// shapes are the $defs that are no section: the value kinds and a step's forms.
var shapes = map[string]p{
	"duration":  {"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, "description": "a Go duration: 500ms, 2s, 1m30s"},
	"template":  {"type": "string", "description": "text; {{ expr }} parts are evaluated"},
	"stringMap": {"type": "object", "additionalProperties": p{"type": "string"}},
	"step":      {"anyOf": []any{ref("seedStep"), ref("callStep"), ref("assertStep"), ref("sleepStep")}, "description": "a call, an assertion or a sleep, or the hosted-runner form of one"},
}

// The keys the roots of idemtest.yaml and of a scenario share.
var (
	defaultEndpointField = field{"endpoint", kString, false, "the default endpoint of call steps that name none", nil}
	endpointsField       = field{"endpoints", kMapping, false, "the tool servers, by name", mapOf("endpoint")}
	servicesField        = field{"services", kMapping, false, "processes idemtest starts before the scenario and stops after, by name", mapOf("service")}
	sinksField           = field{"sinks", kMapping, false, "HTTP servers idemtest runs to record the webhooks and downstream calls a tool makes, by name", mapOf("sink")}
	probesField          = field{"probes", kMapping, false, "reads of the system of record that assertions name, by name", mapOf("probe")}
	secretsField         = field{"secrets", kList, false, "environment variables whose values are secrets: hidden, shown as ${NAME}, in everything idemtest prints or writes (variables named like API_TOKEN, DB_PASSWORD or STRIPE_KEY are without being listed)", p{"items": p{"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}}}
	allowHostsField      = field{"allow_hosts", kList, false, "hosts other than loopback that idemtest may connect to (endpoints, probes); a host:port entry allows that port only", stringItems}
)

// The sections, one for each kind of mapping: the document roots of idemtest.yaml and of a
// scenario, then what they hold.
var (
	Config = Section{def: "config", doc: "idemtest.yaml: what every scenario under it inherits", fields: []field{
		defaultEndpointField,
		endpointsField,
		servicesField,
		allowHostsField,
		secretsField,
		sinksField,
		probesField,
		{"check", kMapping, false, "", ref("check")},
		{"coverage", kMapping, false, "", ref("coverage")},
		{"audit", kMapping, false, "", ref("audit")},
	}}
	Scenario = Section{def: "scenario", doc: "a scenario: steps that call tools and assert on what they did", fields: []field{
		{"name", kString, true, "", nil},
		{"description", kString, false, "", nil},
		{"tags", kList, false, "", stringItems},
		{"trials", kInteger, false, "", p{"minimum": 1, "maximum": scenario.MaxTrials}},
		defaultEndpointField,
		{"steps", kList, true, "", p{"minItems": 1, "items": ref("step")}},
		endpointsField,
		servicesField,
		sinksField,
		probesField,
		allowHostsField,
		secretsField,
	}}

	Endpoint = Section{def: "endpoint", doc: "a tool server: an HTTP JSON API or an MCP server, and how its calls carry keys", fields: []field{
		{"http", kMapping, false, "", ref("httpEndpoint")},
		{"mcp", kMapping, false, "", ref("mcpEndpoint")},
		{"key", kMapping, false, "", ref("key")},
		{"mutating", kList, false, "", stringItems},
		{"allow_hosts", kList, false, "", stringItems},
		{"compare", kMapping, false, "", ref("compare")},
		{"natural", kList, false, "tools idempotent by nature: their answers are not judged by the verdict", stringItems},
		{"refusal", kList, false, "error-shaped successes this server refuses with, beside the usual ones ({status: error}, {success: false}, {ok: false}, a lone {error: …}): each a mapping of dotted paths to values, all of which an answer must hold to be a refusal", p{"items": p{"type": "object", "minProperties": 1}}},
		{"spread", kString, false, "how calls are spread over the endpoint's instances (urls:, or a service with replicas): round-robin (default: a retry or a fan-out copy goes to the next instance), same or random (seeded by the trial)", enum("round-robin", "same", "random")},
	}}
	HTTPEndpoint = Section{def: "httpEndpoint", doc: "an HTTP JSON API: each tool a URL (or an OpenAPI operation)", more: p{"anyOf": []any{p{"required": []any{"url"}}, p{"required": []any{"urls"}}, p{"required": []any{"openapi"}}}}, fields: []field{
		{"url", kTemplate, false, "{tool} is replaced with the tool name; with openapi, the base URL that overrides the document's servers", nil},
		{"urls", kList, false, "instead of url: the URLs of several instances of one deployment, each call going to one of them (see spread)", p{"items": ref("template"), "minItems": 1}},
		{"method", kString, false, "", nil},
		{"headers", kStringMap, false, "", nil},
		{"timeout", kDuration, false, "", nil},
		{"max_response_bytes", kInteger, false, "", positive},
		{"openapi", kTemplate, false, "an OpenAPI 3.0/3.1 document (a file, relative to this one, or an http(s) URL): each operation is a tool", nil},
	}}
	MCPEndpoint = Section{def: "mcpEndpoint", doc: "an MCP server: a command over stdio, or streamable HTTP URLs", fields: []field{
		{"command", kList, false, "", nonEmptyStrings},
		{"env", kStringMap, false, "", nil},
		{"dir", kString, false, "", nil},
		{"url", kString, false, "", nil},
		{"urls", kList, false, "instead of url: the streamable HTTP URLs of several instances of one server, each with an MCP session of its own (see spread)", nonEmptyStrings},
		{"headers", kStringMap, false, "", nil},
		{"timeout", kDuration, false, "", nil},
		{"init_timeout", kDuration, false, "", nil},
		{"conflict_match", kString, false, "", nil},
		{"max_response_bytes", kInteger, false, "", positive},
	}}
	Key = Section{def: "key", doc: "where a call carries its idempotency key: one of header, arg or meta", more: p{"oneOf": []any{p{"required": []any{"header"}}, p{"required": []any{"arg"}}, p{"required": []any{"meta"}}}}, fields: []field{
		{"header", kString, false, "", nil},
		{"arg", kString, false, "", nil},
		{"meta", kString, false, "", nil},
		{"format", kString, false, "the shape of the keys idemtest makes: uuid (v4), uuidv7, ulid, or a template with {session}, {index} and {random}", keyFormat},
		{"length", kInteger, false, "the length of a template's keys: {random} fills them to it", keyLength},
	}}
	Compare = Section{def: "compare", doc: "how the verdict compares a tool's answers", fields: []field{
		{"ignore", kList, false, "dotted paths of answer fields that change on every answer (requestId, meta.at), left out of the verdict's comparisons", stringItems},
	}}

	Service = Section{def: "service", doc: "a process idemtest starts, waits for and stops", fields: []field{
		{"command", kList, true, "", nonEmptyStrings},
		{"env", kStringMap, false, "", nil},
		{"dir", kString, false, "", nil},
		{"ready", kMapping, false, "", ref("ready")},
		{"replicas", kInteger, false, "how many processes of the service to start, each with its own {{ port }} and {{ replica }} (1 to N); an endpoint whose URL names the service then has N instances", p{"minimum": 1, "maximum": 64}},
	}}
	Ready = Section{def: "ready", doc: "when a service is ready: an HTTP answer, an open port or a log line", fields: []field{
		{"http", kString, false, "", nil},
		{"tcp", kString, false, "", nil},
		{"log", kString, false, "", nil},
		{"timeout", kDuration, false, "", nil},
	}}

	Sink = Section{def: "sink", doc: "an HTTP server that records what a tool sends downstream", fields: []field{
		{"routes", kMapping, true, "", mapOf("route")},
		{"port", kInteger, false, "", p{"minimum": 0, "maximum": 65535}},
		{"key_header", kString, false, "", nil},
	}}
	Route = Section{def: "route", doc: "a path a sink answers, and how", fields: []field{
		{"method", kString, false, "", nil},
		{"path", kString, true, "", p{"pattern": "^/"}},
		{"respond", kMapping, false, "", ref("respond")},
		{"delay", kDuration, false, "", nil},
		{"fail_first", kInteger, false, "", nonNegative},
		{"hang_first", kInteger, false, "", nonNegative},
		{"drop_response_first", kInteger, false, "", nonNegative},
	}}
	Respond = Section{def: "respond", doc: "a sink route's answer", fields: []field{
		{"status", kInteger, false, "", nil},
		{"json", kAny, false, "", nil},
		{"headers", kStringMap, false, "", nil},
	}}

	Probe = Section{def: "probe", doc: "a read of the system of record: an HTTP GET, a tool call, SQL, Redis or a file", fields: []field{
		{"http", kMapping, false, "", ref("httpProbe")},
		{"call_tool", kString, false, "", nil},
		{"endpoint", kString, false, "", nil},
		{"args", kMapping, false, "", nil},
		{"sql", kMapping, false, "", ref("sqlProbe")},
		{"redis", kMapping, false, "", ref("redisProbe")},
		{"file", kMapping, false, "a file the server keeps its state in: {path: data/state.json, format: json}, format: jsonl, or format: sqlite with a query", ref("fileProbe")},
	}}
	HTTPProbe = Section{def: "httpProbe", doc: "a probe that reads a JSON answer over HTTP", fields: []field{
		{"url", kString, true, "", nil},
		{"method", kString, false, "", enum("GET", "HEAD")},
		{"headers", kStringMap, false, "", nil},
	}}
	SQLProbe = Section{def: "sqlProbe", doc: "a probe that runs a query on PostgreSQL", fields: []field{
		{"dsn", kString, true, "", nil},
		{"query", kString, true, "", nil},
		{"args", kList, false, "", nil},
	}}
	FileProbe = Section{def: "fileProbe", doc: "a probe that reads the JSON, JSON Lines or SQLite file a server keeps its state in", more: fileProbeRules, fields: []field{
		{"path", kString, true, "the file; a relative path is relative to the file that defines the probe", nil},
		{"format", kString, false, "json (default: the value is the document), jsonl (the value is the list of lines, each decoded) or sqlite (the value is the query's rows, each a map)", enum("json", "jsonl", "sqlite")},
		{"query", kString, false, "with format: sqlite, the SELECT to run (the database is opened read-only)", nil},
		{"args", kList, false, "with format: sqlite, the values of the query's ? placeholders", nil},
		{"optional", kBoolean, false, "read a missing file as null (json) or [] (jsonl, sqlite) rather than fail", nil},
	}}
	RedisProbe = Section{def: "redisProbe", doc: "a probe that runs a read command on Redis", fields: []field{
		{"addr", kString, false, "", nil},
		{"command", kList, true, "", nonEmptyStrings},
	}}

	Check = Section{def: "check", doc: "settings of idemtest check (the conformance battery)", fields: []field{
		{"missing_key", kString, false, "a mutating call without a key must be rejected with a 4xx (reject, default) or is only reported (accept)", enum("reject", "accept")},
		{"key", kMapping, false, "the shape of the keys check makes, for a server that accepts only some: {format: uuid} (or uuidv7, ulid, a template with {random} and a length)", ref("checkKey")},
		{"key_ttl", kDuration, false, "how long keys must be remembered: the expiry check retries after this long (without it, expiry is skipped)", nil},
		{"snapshot", kList, false, "read-only calls whose answers are the server's state, read before and after each retry (instead of the read-only tools found by listing)", listOf("checkSnapshot")},
		{"tools", kMapping, false, "per tool; for a plain HTTP endpoint also the tools to check", mapOf("checkTool")},
	}}
	CheckKey = Section{def: "checkKey", doc: "the shape of the keys check makes", fields: []field{
		{"format", kString, true, "uuid (v4), uuidv7, ulid, or a template with {session}, {index} and {random}", keyFormat},
		{"length", kInteger, false, "the length of a template's keys: {random} fills them to it", keyLength},
	}}
	Coverage = Section{def: "coverage", doc: "what --require-coverage (run, check) does not ask to be tested", fields: []field{
		{"exempt", kStringMap, false, "mutating tools that --require-coverage does not ask a scenario or check for, each with the reason, which reports print: {create_charge: tested by the payments suite}", nil},
	}}
	Audit = Section{def: "audit", doc: "settings of idemtest audit: where spans carry what it reads, and its thresholds (its flags override them)", fields: []field{
		{"key_args", kList, false, "argument names that hold the idempotency key (default idempotencyKey, idempotency_key, idempotency-key, idempotentKey)", nonEmptyStrings},
		{"key_attrs", kList, false, "span attributes that hold the key (default idempotency.key, http.request.header.idempotency-key)", nonEmptyStrings},
		{"session_attrs", kList, false, "span attributes that name the session (default gen_ai.conversation.id, mcp.session.id, session.id)", nonEmptyStrings},
		{"replay_attrs", kList, false, "span attributes whose true value marks a replay (default idempotency.replayed, http.response.header.idempotent-replayed)", nonEmptyStrings},
		{"execution_span", kString, false, "a glob of span names: a call executed once per child span matching it that did not fail (e.g. refund.execute); default: an ok answer that is no replay", nil},
		{"ttl", kDuration, false, "the keys' lifetime: a key executed again later than it is an expiry collision", nil},
		{"window", kDuration, false, "how long a key is remembered after its last call (default twice ttl)", nil},
		{"max_hit_rate", kString, false, "fail when more than this share of the keyed calls are replays: 5% or 0.05, or off (default 5%)", rate},
		{"max_conflict_rate", kString, false, "fail when more than this share of the keyed calls are refused in flight: 1% or 0.01, or off (default off)", rate},
		{"mutating", kList, false, "tools that must carry a key even when none of their calls has one", nonEmptyStrings},
		{"natural", kList, false, "tools idempotent by nature (a set, an upsert): one executed twice under a key is no double execution", nonEmptyStrings},
	}}
	CheckSnapshot = Section{def: "checkSnapshot", doc: "a read-only call whose answer is the server's state", fields: []field{
		{"tool", kString, true, "a read-only tool of the endpoint", nil},
		{"args", kMapping, false, "its arguments; {{ session }} is the trial's session", nil},
	}}
	CheckTool = Section{def: "checkTool", doc: "how check calls one tool, or that it leaves it out", fields: []field{
		{"args", kMapping, false, "the arguments to call the tool with, instead of ones built from its input schema; {{ session }} makes a value unique per trial", nil},
		{"skip", kString, false, "leave the tool out of the battery, with this reason", nil},
		{"effects", kString, false, "an expression over probes and sinks counting the side effects of this trial's calls of the tool, e.g. len(refunds.refunds) with a probe refunds filtered by {{ session }}", nil},
	}}

	CallStep = Section{def: "callStep", doc: "a step that calls a tool, or retries an earlier call", more: callStepRules, fields: []field{
		{"id", kString, false, "", p{"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
		{"call_tool", kString, false, "the tool to call", nil},
		{"endpoint", kString, false, "", nil},
		{"args", kMapping, false, "the tool's arguments; strings may contain {{ expr }}", nil},
		{"key", kTemplate, false, "an explicit idempotency key", nil},
		{"retry_of", kString, false, "repeat an earlier call step: same key, same args unless given", nil},
		{"fanout", kInteger, false, "copies sent at once with one key; not with retry", p{"minimum": 1, "maximum": 1000}},
		{"sync", kString, false, "how a fan-out's copies are released (needs fanout of 2 or more; single-packet needs an HTTP endpoint that speaks HTTP/2)", enum("last-byte", "barrier", "single-packet")},
		{"stagger", kString, false, "2ms or 100us..2ms; needs fanout of 2 or more", nil},
		{"timeout", kDuration, false, "", nil},
		{"lose_response", kBoolean, false, "", nil},
		{"retry", kMapping, false, "", ref("retry")},
		{"expect", kString, false, "", enum("ok", "fail", "info", "any")},
		{"expect_error", kBoolean, false, "", nil},
		{"without_key", kBoolean, false, "", nil},
		{"verdict", kString, false, "off: this step's calls are not judged for exactly-once", enum("on", "off")},
	}}
	Retry = Section{def: "retry", doc: "how a call step retries by itself: attempts, on which outcomes, after what backoff", fields: []field{
		{"attempts", kInteger, false, "", p{"minimum": 1, "maximum": 100}},
		{"on", kList, false, "", p{"items": enum("info", "conflict", "5xx", "fail")}},
		{"backoff", kDuration, false, "", nil},
	}}
	AssertStep = Section{def: "assertStep", doc: "a step whose expression must be true", fields: []field{
		{"id", kString, false, "", nil},
		{"assert", kString, true, "an expr-lang expression that must be true", nil},
		{"eventually", kDuration, false, "", nil},
	}}
	SleepStep = Section{def: "sleepStep", doc: "a step that waits", fields: []field{
		{"id", kString, false, "", nil},
		{"sleep", kDuration, true, "", nil},
	}}
	// SeedStep are the hosted-runner form's own keys; seedStep renames them (tool to
	// call_tool, check to assert, duration to sleep) and the native Section then decodes the step.
	SeedStep = Section{def: "seedStep", doc: "the hosted-runner form: action call_tool with tool, assert with check", open: true, fields: []field{
		{"action", kString, true, "", enum("call_tool", "assert", "sleep")},
		{"tool", kString, false, "", nil},
		{"check", kString, false, "", nil},
		{"duration", kDuration, false, "", nil},
		{"args", kMapping, false, "", nil},
	}}
)

// callStepRules are what a call step needs beyond its keys: a tool or an earlier call, and a
// fan-out of two or more for sync and stagger, never with retry.
var callStepRules = p{
	"anyOf":             []any{p{"required": []any{"call_tool"}}, p{"required": []any{"retry_of"}}},
	"dependentRequired": p{"sync": []any{"fanout"}, "stagger": []any{"fanout"}},
	"allOf": []any{
		p{"if": p{"required": []any{"sync"}}, "then": p{"properties": p{"fanout": p{"minimum": 2}}}},
		p{"if": p{"required": []any{"stagger"}}, "then": p{"properties": p{"fanout": p{"minimum": 2}}}},
		p{"if": p{"required": []any{"retry", "fanout"}}, "then": p{"properties": p{"fanout": p{"maximum": 1}}}},
	},
}

// fileProbeRules: format: sqlite needs a query, and query and args are only for it.
var fileProbeRules = p{
	"if":   p{"properties": p{"format": p{"const": "sqlite"}}, "required": []any{"format"}},
	"then": p{"required": []any{"query"}},
	"else": p{"not": p{"anyOf": []any{p{"required": []any{"query"}}, p{"required": []any{"args"}}}}},
}

// sections lists every section by its Go name, for tests and the generator.
var sections = map[string]Section{
	"Config": Config, "Scenario": Scenario,
	"Endpoint": Endpoint, "HTTPEndpoint": HTTPEndpoint, "MCPEndpoint": MCPEndpoint,
	"Key": Key, "Compare": Compare,
	"Service": Service, "Ready": Ready,
	"Sink": Sink, "Route": Route, "Respond": Respond,
	"Probe": Probe, "HTTPProbe": HTTPProbe, "SQLProbe": SQLProbe, "RedisProbe": RedisProbe, "FileProbe": FileProbe,
	"Check": Check, "Coverage": Coverage, "Audit": Audit, "CheckTool": CheckTool, "CheckSnapshot": CheckSnapshot, "CheckKey": CheckKey,
	"CallStep": CallStep, "Retry": Retry, "AssertStep": AssertStep, "SleepStep": SleepStep, "SeedStep": SeedStep,
}
