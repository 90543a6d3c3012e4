// Package schemacheck validates idemtest's machine-readable outputs against their schemas
// (package reportschema), as their consumers read them: with a JSON parser. Tests use it (the
// testscript command jsonschema, the reporters' golden tests), and so does report merge, which
// refuses an input its schema forbids (Input): the schema is the one definition of a report.
//
//	err := schemacheck.Validate("run", reportBytes)
package schemacheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/idemtest/idemtest/internal/reportschema"
	"github.com/idemtest/idemtest/internal/trace"
)

var (
	mu       sync.Mutex
	compiled = map[string]*jsonschema.Schema{}
)

// compile compiles the schema of kind once.
func compile(kind string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[kind]; ok {
		return s, nil
	}
	b, err := reportschema.Schema(kind)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", kind, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	name := "urn:idemtest:report:" + kind
	if err := c.AddResource(name, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", kind, err)
	}
	s, err := c.Compile(name)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", kind, err)
	}
	compiled[kind] = s
	return s, nil
}

// Validate parses data as the output kind and validates it against its schema: one JSON
// document (and nothing after it) for a report, JSON Lines for a trace, whose first line must be
// a header and every other line a call.
func Validate(kind string, data []byte) error {
	s, err := compile(kind)
	if err != nil {
		return err
	}
	if kind == "trace" {
		return validateTrace(s, data)
	}
	v, err := parse(data)
	if err != nil {
		return fmt.Errorf("%s report: %w", kind, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s report: %w", kind, err)
	}
	return nil
}

// Input validates data, a report of kind read from a file, as report merge does: an error names
// the first place that breaks the schema, the value there and what the schema wants
// ("/scenarios/0/status is "FAILED": value must be one of …"), with at most maxShown values.
func Input(kind string, data []byte) error {
	s, err := compile(kind)
	if err != nil {
		return err
	}
	v, err := parse(data)
	if err != nil {
		return err
	}
	err = s.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(leaves) == maxShown {
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		u := e.BasicOutput()
		if u.Error == nil {
			return
		}
		leaves = append(leaves, fmt.Sprintf("%s is %s: %s", where(e.InstanceLocation), valueAt(v, e.InstanceLocation), u.Error.String()))
	}
	walk(ve)
	if len(leaves) == 0 {
		return fmt.Errorf("not a %s report its schema allows: %w", kind, err)
	}
	return fmt.Errorf("not a %s report its schema allows: %s", kind, strings.Join(leaves, "; "))
}

// maxShown bounds the places an Input error names.
const maxShown = 3

// where is the JSON pointer of the instance location path.
func where(path []string) string {
	if len(path) == 0 {
		return "the report"
	}
	var b strings.Builder
	for _, tok := range path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// valueAt is the value at path in v, as compact JSON cut to 80 bytes.
func valueAt(v any, path []string) string {
	for _, tok := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return "missing"
			}
			v = c[i]
		default:
			return "missing"
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "unprintable"
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// parse decodes exactly one JSON document, numbers kept exact.
func parse(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not one JSON document: more after byte %d", d.InputOffset())
	}
	return v, nil
}

func validateTrace(s *jsonschema.Schema, data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, trace.MaxLine)
	n := 0
	for sc.Scan() {
		n++
		v, err := parse(sc.Bytes())
		if err != nil {
			return fmt.Errorf("trace line %d: %w", n, err)
		}
		m, _ := v.(map[string]any)
		_, header := m["idemtest_trace"]
		if header != (n == 1) {
			return fmt.Errorf("trace line %d: want the header on line 1 and a call on every other line", n)
		}
		if err := s.Validate(v); err != nil {
			return fmt.Errorf("trace line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("trace line %d: %w", n+1, err)
	}
	if n == 0 {
		return errors.New("trace: empty, no header")
	}
	return nil
}
