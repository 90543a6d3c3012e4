// Package redact hides secrets in everything idemtest prints or writes: the terminal, JUnit,
// JSON, GitHub annotations and error messages. The scenario loader records, per file, the
// values that came from the environment through ${VAR} in a URL, a header, a DSN or a process
// environment, and the passwords of URLs; a Redactor built from them replaces each one, in
// every encoding a report uses, wherever it appears.
//
//	var s redact.Secrets
//	s.Add(os.Getenv("TOKEN"), "${TOKEN}")
//	s.AddURL("http://user:pw@127.0.0.1:8080/")
//	r := redact.New(&s)
//	fmt.Fprintln(r.Writer(os.Stdout), "GET http://127.0.0.1:8080/?t="+os.Getenv("TOKEN"))
//	// GET http://127.0.0.1:8080/?t=${TOKEN}
package redact
