// Package agentverdict judges an agent from the calls the proxy recorded (DESIGN §10): every
// mutating call carries a key; after a fault that left the outcome unknown, the retry of the
// same tool and arguments carries the same key (a new key is a real double charge); one key
// never covers two different calls; optionally every key matches a pattern. It is pure: trace
// calls (or their digests, Calls, as the proxy keeps them) in, findings out. Arguments are compared as canonical JSON (jsonvalue.Canonical), with
// every number spelled by its value.
//
//	v := agentverdict.Judge(calls, agentverdict.JudgeOptions{RequireRetry: true})
//	for _, f := range v.Findings {
//		fmt.Println(f.Check, f.Message) // retry-same-key would charge twice: …
//	}
package agentverdict
