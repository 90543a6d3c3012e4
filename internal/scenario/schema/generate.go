package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
)

// Generate returns schema.json as the sections make it: a $defs entry for each section and
// shape. go generate writes it; a test fails while the committed file differs.
func Generate() ([]byte, error) {
	defs := map[string]any{}
	for name, sh := range shapes {
		defs[name] = maps.Clone(sh)
	}
	for name, sec := range sections {
		if _, dup := defs[sec.def]; dup {
			return nil, fmt.Errorf("section %s: $defs/%s is defined twice", name, sec.def)
		}
		defs[sec.def] = sec.jsonSchema()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"$defs": defs}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// jsonSchema is the section's object schema.
func (s Section) jsonSchema() map[string]any {
	out := map[string]any{"type": "object", "description": s.doc}
	if !s.open {
		out["additionalProperties"] = false
	}
	props := map[string]any{}
	var required []string
	for _, f := range s.fields {
		props[f.name] = f.jsonSchema()
		if f.required {
			required = append(required, f.name)
		}
	}
	out["properties"] = props
	if required != nil {
		out["required"] = required
	}
	for k, v := range s.more {
		out[k] = v
	}
	return out
}

// jsonSchema is the field's property schema: its kind's type (or $ref), then its own keywords.
func (f field) jsonSchema() map[string]any {
	out := map[string]any{}
	switch f.kind {
	case kString, kInteger, kBoolean:
		out["type"] = string(f.kind)
	case kList:
		out["type"] = "array"
	case kMapping:
		if _, ok := f.more["$ref"]; !ok {
			out["type"] = "object"
		}
	case kDuration, kTemplate, kStringMap:
		out["$ref"] = "#/$defs/" + string(f.kind)
	case kAny:
	}
	for k, v := range f.more {
		out[k] = v
	}
	if f.doc != "" {
		out["description"] = f.doc
	}
	return out
}
