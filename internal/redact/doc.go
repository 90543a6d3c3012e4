// Package redact hides secrets, never names, in everything idemtest prints or writes: the
// terminal, JUnit, JSON, HTML, traces, GitHub annotations and error messages. The scenario
// loader records, per file, the secrets it holds: URL and DSN passwords, the values of
// credential headers (CredentialHeader), of variables whose names say they are secrets
// (SensitiveName: API_TOKEN, DB_PASSWORD, STRIPE_KEY) and of those a secrets: list names. An
// ordinary value (a region, a store name) is not one. A Redactor built from them replaces each
// secret in the results before any writer quotes or escapes them (Value, String), and in
// written text in every escaped form a report uses (Writer).
//
//	var s redact.Secrets
//	s.Add(os.Getenv("API_TOKEN"), "${API_TOKEN}")
//	s.AddURL("http://user:pw@127.0.0.1:8080/")
//	r := redact.New(&s)
//	fmt.Fprintln(r.Writer(os.Stdout), "GET http://127.0.0.1:8080/?t="+os.Getenv("API_TOKEN"))
//	// GET http://127.0.0.1:8080/?t=${API_TOKEN}
package redact
