// Package safefile is the one way idemtest writes files into a directory the user named (init,
// check --write, sweep --write). What it writes comes from elsewhere (tool names a server
// chose), so it writes only inside that directory, never through a symbolic link (dangling or
// not), never over an existing file unless told to (--force), and under names that are safe:
// no path separator, no control character, no leading dot, at most MaxStem bytes, and distinct
// from each other, whatever the listing order.
//
//	paths, err := safefile.Write("scenarios", []safefile.File{
//		{Name: "issue_refund", Ext: ".yaml", Data: src},
//	}, safefile.Options{Force: force, Warn: func(msg string) { fmt.Fprintln(stderr, msg) }})
package safefile
