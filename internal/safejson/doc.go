// Package safejson is the one JSON encoder of idemtest's machine-readable outputs (the run,
// check, sweep, proxy and tools reports, and traces): standard JSON in which every character
// that could drive a terminal or end a log line (controls, DEL, C1, bidirectional formatting,
// U+2028/9) is written, inside string values only, as a \uNNNN escape that decodes to the same
// value, and invalid UTF-8 as \ufffd. The escaping happens while encoding: the bytes returned
// are final, valid JSON, and nothing rewrites them afterwards.
//
//	err := safejson.Encode(w, report, "  ")   // indented, one document and a newline
//	line, err := safejson.Marshal(call)        // compact, for JSON Lines
package safejson
