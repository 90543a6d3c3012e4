package result

import "encoding/json"

// MaxAnswer caps each answer a report keeps of a trial that no report shows whole, in bytes of
// compact JSON; the JSON report caps every answer at the same size.
const MaxAnswer = 4096

// CutAnswer is an answer larger than MaxAnswer cut down to what the reports show of it: the
// first MaxAnswer bytes of its compact JSON, and how long that JSON was.
type CutAnswer struct {
	Text  string
	Bytes int
}

// String is the kept beginning of the answer, ending in "…".
func (c CutAnswer) String() string { return c.Text }

// MarshalJSON writes the kept beginning as a JSON string.
func (c CutAnswer) MarshalJSON() ([]byte, error) { return json.Marshal(c.Text) }

// Cap returns v when its compact JSON fits MaxAnswer (or is not JSON), else its CutAnswer.
func Cap(v any) any {
	switch v.(type) {
	case nil, bool, float64, json.Number, CutAnswer:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) <= MaxAnswer {
		return v
	}
	cut := MaxAnswer
	for cut > 0 && b[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return CutAnswer{Text: string(b[:cut]) + "…", Bytes: len(b)}
}

// Release cuts the answers of t down to what reports show of a trial they list but do not
// detail (MaxAnswer each), so that the decoded answers of a long run are not all held to its
// end. The runner releases every trial but the first, the first failed and the one cut short:
// those are the ones reports, check and sweep read whole.
func (t *Trial) Release() {
	for i := range t.Calls {
		t.Calls[i].Result = Cap(t.Calls[i].Result)
	}
}
