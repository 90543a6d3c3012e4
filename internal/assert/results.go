package assert

import (
	"reflect"
	"sort"
	"strings"
	"sync"
)

// The types below are what an expression sees of a call step: the loader declares them in the
// compile-time environment and the runner fills them in, so both sides share one definition and
// expr rejects a field that does not exist (first.statsu, .stauts inside a predicate) when the
// file loads. Only Result, the server's own JSON, stays dynamic.

// CallResult is one call's result: the value of a call step's id, the third of a call's five
// shapes (result/doc.go). The runner fills it from an endpoint.Result as the step runs, so a
// later step or assertion reads it by the names expressions use (expr tags, durations in ms);
// it is not result.Call, which holds what reports need and assertions must not name (copy,
// instance, instants), nor does assert import the result model.
type CallResult struct {
	OK      bool   `expr:"ok" json:"ok"`
	Outcome string `expr:"outcome" json:"outcome"`
	Status  int    `expr:"status" json:"status"`
	Error   string `expr:"error" json:"error"`
	// Result is the decoded JSON answer (or MCP structured content), nil when there was none.
	Result any `expr:"result" json:"result"`
	// Replayed is the server's own replay marker (Idempotent-Replayed: true or the MCP meta).
	Replayed   bool    `expr:"replayed" json:"replayed"`
	Conflict   bool    `expr:"conflict" json:"conflict"`
	Key        string  `expr:"key" json:"key"`
	DurationMS float64 `expr:"duration_ms" json:"duration_ms"`
	// Headers are the answer's headers, one value each; a missing one reads as "".
	Headers  map[string]string `expr:"headers" json:"headers"`
	Attempts int               `expr:"attempts" json:"attempts"`
	// Lost is true when the harness discarded the answer (lose_response): nothing came back.
	Lost bool `expr:"lost" json:"lost"`
}

// CopyResult is one copy of a fan-out: a call plus when it left and was answered.
type CopyResult struct {
	// The call's fields are read directly (.ok), not through a name of their own.
	CallResult `expr:"-"`
	// OffsetUS is the copy's stagger offset in microseconds.
	OffsetUS float64 `expr:"offset_us" json:"offset_us"`
	// ReleasedUS and AnsweredUS count from the first copy's release; nil when unknown.
	ReleasedUS *float64 `expr:"released_us" json:"released_us"`
	AnsweredUS *float64 `expr:"answered_us" json:"answered_us"`
}

// FanoutResult is a fan-out step's result: its copies and their counts.
type FanoutResult struct {
	Calls    []CopyResult `expr:"calls" json:"calls"`
	OK       int          `expr:"ok" json:"ok"`
	Fail     int          `expr:"fail" json:"fail"`
	Info     int          `expr:"info" json:"info"`
	Conflict int          `expr:"conflict" json:"conflict"`
	// SpreadUS is the time between the first and the last copy's release, in microseconds.
	SpreadUS float64 `expr:"spread_us" json:"spread_us"`
	// Overlapped is true when every copy left before the first answer came back.
	Overlapped bool   `expr:"overlapped" json:"overlapped"`
	Key        string `expr:"key" json:"key"`
	Fanout     int    `expr:"fanout" json:"fanout"`
}

// resultKinds names the result types in messages, by their Go type.
var resultKinds = map[reflect.Type]string{
	reflect.TypeFor[CallResult]():   "a call result",
	reflect.TypeFor[CopyResult]():   "a fan-out copy",
	reflect.TypeFor[FanoutResult](): "a fan-out result",
}

// fieldIndex maps each expr name of a struct type to its field's index path (promoted fields
// of embedded structs included).
var fieldIndex sync.Map // reflect.Type -> map[string][]int

func fieldsOf(t reflect.Type) map[string][]int {
	if m, ok := fieldIndex.Load(t); ok {
		return m.(map[string][]int)
	}
	out := map[string][]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int{}, prefix...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("expr"), ",")
			switch name {
			case "-":
				continue
			case "":
				name = f.Name
			}
			if _, shadowed := out[name]; !shadowed || len(idx) < len(out[name]) {
				out[name] = idx
			}
		}
	}
	walk(t, nil)
	fieldIndex.Store(t, out)
	return out
}

// FieldNames lists the names an expression can read from a value of type t, sorted.
func FieldNames(t reflect.Type) []string {
	fields := fieldsOf(t)
	out := make([]string, 0, len(fields))
	for name := range fields {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// structField reads the field an expression calls name from a struct value.
func structField(v reflect.Value, name string) (any, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	idx, ok := fieldsOf(v.Type())[name]
	if !ok {
		return nil, false
	}
	return plain(v.FieldByIndex(idx).Interface()), true
}

// plain turns a nil or set *float64 (released_us) into nil or its number, as expr shows it.
func plain(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.Type().Elem().Kind() != reflect.Struct {
		if rv.IsNil() {
			return nil
		}
		return rv.Elem().Interface()
	}
	return v
}

// structMap is a struct value as expr names its fields, for showing it.
func structMap(v reflect.Value) map[string]any {
	out := map[string]any{}
	for name := range fieldsOf(v.Type()) {
		out[name], _ = structField(v, name)
	}
	return out
}
