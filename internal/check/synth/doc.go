// Package synth builds a tool's arguments from its JSON input schema (DESIGN §9): every required
// property from its examples, default, enum or const, else a value of its type and format, with
// strings unique per trial ({{ session }}) and a uri pointing at a loopback sink. It also makes
// the other payloads some checks need: Vary changes one value, Broken leaves a required one out;
// KeyLike finds a property that looks like an idempotency key. Its schema readers (TypeOf,
// Given, Required) are also init's (package scaffold), so a schema means one thing to both; it
// imports nothing of idemtest's, so both can import it.
//
//	args, err := synth.Synthesize(tool.InputSchema, "idempotencyKey", "http://127.0.0.1:9")
//	other, field, ok := synth.Vary(args) // the same key with another payload
package synth
