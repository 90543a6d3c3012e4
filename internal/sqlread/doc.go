// Package sqlread tells whether a probe's SQL query is one read: a single SELECT, WITH … SELECT
// or VALUES statement with no data-modifying part (INSERT, UPDATE, DELETE, MERGE, COPY, CALL,
// TRUNCATE inside a CTE, SELECT INTO, a FOR UPDATE/SHARE lock). It reads the query's tokens,
// skipping string literals, quoted identifiers, dollar quotes and comments; it does not parse
// SQL. It is the loader's check, for an error at file:line:col before anything is sent: the
// read-only transaction (PostgreSQL) and connection (SQLite) the probes run in are what keep a
// probe from writing, whatever the text says.
//
//	if p := sqlread.Check(query, sqlread.Postgres); p != nil {
//		// p.Offset is the byte of the query at fault, p.Msg says why, p.Hint what to do
//	}
package sqlread
