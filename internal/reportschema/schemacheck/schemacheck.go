// Package schemacheck validates idemtest's machine-readable outputs against their schemas
// (package reportschema), as their consumers read them: with a JSON parser. It is for tests (the
// testscript command jsonschema, the reporters' golden tests); idemtest itself never links it.
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
