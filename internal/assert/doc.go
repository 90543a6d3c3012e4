// Package assert compiles and evaluates idemtest's expressions: assertions (expr-lang programs),
// {{ }} templates inside strings, and the explanation of a failed assertion.
//
// Compile once when a scenario loads, evaluate many times from any goroutine:
//
//	p, err := assert.Compile(`retry.ok && retry.result.refundId != ""`, assert.Env{"retry": assert.CallResult{}})
//	ok, err := p.Bool(env)
//	if !ok {
//		for _, line := range p.Explain(env) { fmt.Println(line) }
//	}
//
// Step results are the typed CallResult and FanoutResult, so a misspelt field is a compile
// error with a suggestion; only a result's JSON (result) is dynamic.
//
// Two forms from hosted scenario runners are accepted: === and !== mean == and !=, and
// list.count({field: value}) counts the entries whose fields match.
package assert
