package schema

import "strings"

// This file is the one list of the keys each mapping of a scenario file or idemtest.yaml may
// have. The decoder accepts exactly these (an unknown key gets "did you mean"), JSON writes
// their docs into the JSON Schema, and the schema test checks that schema.json has the same
// properties, required keys and kinds for every section. A new field is added here, decoded in
// its section's file of package decode, and given its constraints in schema.json.

// kind is the shape of a field's value, as the schema test compares it with schema.json.
type kind string

const (
	kString    kind = "string"    // a scalar string (or one of an enum of strings)
	kInteger   kind = "integer"   // a whole number
	kBoolean   kind = "boolean"   // true or false
	kDuration  kind = "duration"  // a Go duration: 500ms, 2s
	kTemplate  kind = "template"  // text with {{ expr }} parts
	kStringMap kind = "stringMap" // names to strings (headers, env)
	kList      kind = "list"      // a sequence
	kMapping   kind = "mapping"   // a nested mapping
	kAny       kind = "any"       // any YAML value (a JSON body)
)

// field is one key of a mapping.
type field struct {
	name     string
	kind     kind
	required bool
	doc      string
}

// Section is a mapping's allowed keys and where schema.json describes it: a path under $defs, or
// "" for the document roots, which JSON builds.
type Section struct {
	schema string
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

var defaultEndpointField = field{"endpoint", kString, false, "the default endpoint of call steps that name none"}

// The sections, one for each kind of mapping: the document roots of idemtest.yaml and of a
// scenario, then what they hold.
var (
	Config = Section{"", []field{
		defaultEndpointField,
		{"endpoints", kMapping, false, ""},
		{"services", kMapping, false, ""},
		{"allow_hosts", kList, false, ""},
		{"sinks", kMapping, false, ""},
		{"probes", kMapping, false, ""},
		{"check", kMapping, false, ""},
		{"coverage", kMapping, false, ""},
	}}
	Scenario = Section{"", []field{
		{"name", kString, true, ""},
		{"description", kString, false, ""},
		{"tags", kList, false, ""},
		{"trials", kInteger, false, ""},
		defaultEndpointField,
		{"steps", kList, true, ""},
		{"endpoints", kMapping, false, ""},
		{"services", kMapping, false, ""},
		{"sinks", kMapping, false, ""},
		{"probes", kMapping, false, ""},
		{"allow_hosts", kList, false, ""},
	}}

	Endpoint = Section{"endpoint", []field{
		{"http", kMapping, false, ""},
		{"mcp", kMapping, false, ""},
		{"key", kMapping, false, ""},
		{"mutating", kList, false, ""},
		{"allow_hosts", kList, false, ""},
		{"compare", kMapping, false, ""},
		{"natural", kList, false, "tools idempotent by nature: their answers are not judged by the verdict"},
		{"spread", kString, false, "how calls are spread over the endpoint's instances (urls:, or a service with replicas): round-robin (default: a retry or a fan-out copy goes to the next instance), same or random (seeded by the trial)"},
	}}
	HTTPEndpoint = Section{"endpoint/properties/http", []field{
		{"url", kTemplate, false, "{tool} is replaced with the tool name; with openapi, the base URL that overrides the document's servers"},
		{"urls", kList, false, "instead of url: the URLs of several instances of one deployment, each call going to one of them (see spread)"},
		{"method", kString, false, ""},
		{"headers", kStringMap, false, ""},
		{"timeout", kDuration, false, ""},
		{"max_response_bytes", kInteger, false, ""},
		{"openapi", kTemplate, false, "an OpenAPI 3.0/3.1 document (a file, relative to this one, or an http(s) URL): each operation is a tool"},
	}}
	MCPEndpoint = Section{"endpoint/properties/mcp", []field{
		{"command", kList, false, ""},
		{"env", kStringMap, false, ""},
		{"dir", kString, false, ""},
		{"url", kString, false, ""},
		{"urls", kList, false, "instead of url: the streamable HTTP URLs of several instances of one server, each with an MCP session of its own (see spread)"},
		{"headers", kStringMap, false, ""},
		{"timeout", kDuration, false, ""},
		{"init_timeout", kDuration, false, ""},
		{"conflict_match", kString, false, ""},
		{"max_response_bytes", kInteger, false, ""},
	}}
	Key = Section{"key", []field{
		{"header", kString, false, ""},
		{"arg", kString, false, ""},
		{"meta", kString, false, ""},
		{"format", kString, false, "the shape of the keys idemtest makes: uuid (v4), uuidv7, ulid, or a template with {session}, {index} and {random}"},
		{"length", kInteger, false, "the length of a template's keys: {random} fills them to it"},
	}}
	Compare = Section{"endpoint/properties/compare", []field{
		{"ignore", kList, false, "dotted paths of answer fields that change on every answer (requestId, meta.at), left out of the verdict's comparisons"},
	}}

	Service = Section{"service", []field{
		{"command", kList, true, ""},
		{"env", kStringMap, false, ""},
		{"dir", kString, false, ""},
		{"ready", kMapping, false, ""},
		{"replicas", kInteger, false, "how many processes of the service to start, each with its own {{ port }} and {{ replica }} (1 to N); an endpoint whose URL names the service then has N instances"},
	}}
	Ready = Section{"service/properties/ready", []field{
		{"http", kString, false, ""},
		{"tcp", kString, false, ""},
		{"log", kString, false, ""},
		{"timeout", kDuration, false, ""},
	}}

	Sink = Section{"sink", []field{
		{"routes", kMapping, true, ""},
		{"port", kInteger, false, ""},
		{"key_header", kString, false, ""},
	}}
	Route = Section{"sink/properties/routes/additionalProperties", []field{
		{"method", kString, false, ""},
		{"path", kString, true, ""},
		{"respond", kMapping, false, ""},
		{"delay", kDuration, false, ""},
		{"fail_first", kInteger, false, ""},
		{"hang_first", kInteger, false, ""},
		{"drop_response_first", kInteger, false, ""},
	}}
	Respond = Section{"sink/properties/routes/additionalProperties/properties/respond", []field{
		{"status", kInteger, false, ""},
		{"json", kAny, false, ""},
		{"headers", kStringMap, false, ""},
	}}

	Probe = Section{"probe", []field{
		{"http", kMapping, false, ""},
		{"call_tool", kString, false, ""},
		{"endpoint", kString, false, ""},
		{"args", kMapping, false, ""},
		{"sql", kMapping, false, ""},
		{"redis", kMapping, false, ""},
		{"file", kMapping, false, "a file the server keeps its state in: {path: data/state.json, format: json}, format: jsonl, or format: sqlite with a query"},
	}}
	HTTPProbe = Section{"probe/properties/http", []field{
		{"url", kString, true, ""},
		{"method", kString, false, ""},
		{"headers", kStringMap, false, ""},
	}}
	SQLProbe = Section{"probe/properties/sql", []field{
		{"dsn", kString, true, ""},
		{"query", kString, true, ""},
		{"args", kList, false, ""},
	}}
	FileProbe = Section{"probe/properties/file", []field{
		{"path", kString, true, "the file; a relative path is relative to the file that defines the probe"},
		{"format", kString, false, "json (default: the value is the document), jsonl (the value is the list of lines, each decoded) or sqlite (the value is the query's rows, each a map)"},
		{"query", kString, false, "with format: sqlite, the SELECT to run (the database is opened read-only)"},
		{"args", kList, false, "with format: sqlite, the values of the query's ? placeholders"},
		{"optional", kBoolean, false, "read a missing file as null (json) or [] (jsonl, sqlite) rather than fail"},
	}}
	RedisProbe = Section{"probe/properties/redis", []field{
		{"addr", kString, false, ""},
		{"command", kList, true, ""},
	}}

	Check = Section{"check", []field{
		{"missing_key", kString, false, "a mutating call without a key must be rejected with a 4xx (reject, default) or is only reported (accept)"},
		{"key", kMapping, false, "the shape of the keys check makes, for a server that accepts only some: {format: uuid} (or uuidv7, ulid, a template with {random} and a length)"},
		{"key_ttl", kDuration, false, "how long keys must be remembered: the expiry check retries after this long (without it, expiry is skipped)"},
		{"snapshot", kList, false, "read-only calls whose answers are the server's state, read before and after each retry (instead of the read-only tools found by listing)"},
		{"tools", kMapping, false, "per tool; for a plain HTTP endpoint also the tools to check"},
	}}
	CheckKey = Section{"check/properties/key", []field{
		{"format", kString, true, "uuid (v4), uuidv7, ulid, or a template with {session}, {index} and {random}"},
		{"length", kInteger, false, "the length of a template's keys: {random} fills them to it"},
	}}
	Coverage = Section{"coverage", []field{
		{"exempt", kStringMap, false, "mutating tools that --require-coverage does not ask a scenario or check for, each with the reason, which reports print: {create_charge: tested by the payments suite}"},
	}}
	CheckSnapshot = Section{"check/properties/snapshot/items", []field{
		{"tool", kString, true, "a read-only tool of the endpoint"},
		{"args", kMapping, false, "its arguments; {{ session }} is the trial's session"},
	}}
	CheckTool = Section{"check/properties/tools/additionalProperties", []field{
		{"args", kMapping, false, "the arguments to call the tool with, instead of ones built from its input schema; {{ session }} makes a value unique per trial"},
		{"skip", kString, false, "leave the tool out of the battery, with this reason"},
		{"effects", kString, false, "an expression over probes and sinks counting the side effects of this trial's calls of the tool, e.g. len(refunds.refunds) with a probe refunds filtered by {{ session }}"},
	}}

	CallStep = Section{"callStep", []field{
		{"id", kString, false, ""},
		{"call_tool", kString, false, "the tool to call"},
		{"endpoint", kString, false, ""},
		{"args", kMapping, false, "the tool's arguments; strings may contain {{ expr }}"},
		{"key", kTemplate, false, "an explicit idempotency key"},
		{"retry_of", kString, false, "repeat an earlier call step: same key, same args unless given"},
		{"fanout", kInteger, false, "copies sent at once with one key; not with retry"},
		{"sync", kString, false, "how a fan-out's copies are released (needs fanout of 2 or more; single-packet needs an HTTP endpoint that speaks HTTP/2)"},
		{"stagger", kString, false, "2ms or 100us..2ms; needs fanout of 2 or more"},
		{"timeout", kDuration, false, ""},
		{"lose_response", kBoolean, false, ""},
		{"retry", kMapping, false, ""},
		{"expect", kString, false, ""},
		{"expect_error", kBoolean, false, ""},
		{"without_key", kBoolean, false, ""},
		{"verdict", kString, false, "off: this step's calls are not judged for exactly-once"},
	}}
	Retry = Section{"callStep/properties/retry", []field{
		{"attempts", kInteger, false, ""},
		{"on", kList, false, ""},
		{"backoff", kDuration, false, ""},
	}}
	AssertStep = Section{"assertStep", []field{
		{"id", kString, false, ""},
		{"assert", kString, true, "an expr-lang expression that must be true"},
		{"eventually", kDuration, false, ""},
	}}
	SleepStep = Section{"sleepStep", []field{
		{"id", kString, false, ""},
		{"sleep", kDuration, true, ""},
	}}
	// SeedStep are the hosted-runner form's own keys; seedStep renames them (tool to
	// call_tool, check to assert, duration to sleep) and the native Section then decodes the step.
	SeedStep = Section{"seedStep", []field{
		{"action", kString, true, ""},
		{"tool", kString, false, ""},
		{"check", kString, false, ""},
		{"duration", kDuration, false, ""},
		{"args", kMapping, false, ""},
	}}
)

// sections lists every section with a name for tests and JSON.
var sections = map[string]Section{
	"config": Config, "scenario": Scenario,
	"endpoint": Endpoint, "http endpoint": HTTPEndpoint, "mcp endpoint": MCPEndpoint,
	"key": Key, "compare": Compare,
	"service": Service, "ready": Ready,
	"sink": Sink, "route": Route, "respond": Respond,
	"probe": Probe, "http probe": HTTPProbe, "sql probe": SQLProbe, "redis probe": RedisProbe, "file probe": FileProbe,
	"check": Check, "coverage": Coverage, "check tool": CheckTool, "check snapshot": CheckSnapshot, "check key": CheckKey,
	"call step": CallStep, "retry": Retry, "assert step": AssertStep, "sleep step": SleepStep, "seed step": SeedStep,
}

// schemaNode returns the object at path (slash-separated keys) under defs, or nil.
func schemaNode(defs map[string]any, path string) map[string]any {
	var cur any = defs
	for _, k := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	m, _ := cur.(map[string]any)
	return m
}

// describe writes each field's doc into its property of the schema document root (whose
// properties are the root sections' and whose $defs hold the others).
func describe(root map[string]any, roots Section) {
	defs := root["$defs"].(map[string]any)
	apply := func(props map[string]any, sec Section) {
		for _, fd := range sec.fields {
			if p, ok := props[fd.name].(map[string]any); ok && fd.doc != "" {
				p["description"] = fd.doc
			}
		}
	}
	apply(root["properties"].(map[string]any), roots)
	for _, sec := range sections {
		if sec.schema == "" {
			continue
		}
		if props, ok := schemaNode(defs, sec.schema)["properties"].(map[string]any); ok {
			apply(props, sec)
		}
	}
}
