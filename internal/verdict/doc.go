// Package verdict judges a trial's calls per idempotency key, as DESIGN §8 defines exactly
// once: it is pure (calls in, violations out) and imports nothing of idemtest's.
//
//	j := verdict.Judge([]verdict.Call{
//		{Key: "s1-0", Tool: "issue_refund", Step: "first", OK: true, Lost: true, Answer: a},
//		{Key: "s1-0", Tool: "issue_refund", Step: "retry", OK: true, Answer: b},
//	})
//	for _, v := range j.Violations {
//		fmt.Println(v.Message()) // key s1-0 executed 2 times (issue_refund)
//	}
//
// An ok answer is a replay when the server marks it or when it is JSON-equal (after the
// endpoint's ignored fields are left out) to an earlier ok answer to the same key and carries a
// value the server minted (an id, or a value that differs between keys, that is not an echo of
// the arguments or the key); every other ok answer is an execution (unmarked answers equal to
// each other are one). A key whose equal answers carry nothing minted is Unprovable: neither a
// replay nor a double execution, since a server that ignores keys answers the same. Two
// executions of one key are a double execution; a marked replay that differs from the key's
// first answer is a replay that differs. Keys are scoped per endpoint and tool, as servers keep
// them.
package verdict
