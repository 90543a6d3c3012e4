package sqlread

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		d           Dialect
		want        string // "" for a read; else a part of the message
		at          string // the text the problem's offset points at
	}{
		{name: "select", query: "select * from refunds where account = $1"},
		{name: "with select", query: "with r as (select id from refunds) select count(*) from r;"},
		{name: "values", query: "values (1), (2)"},
		{name: "parenthesized", query: "(select 1) union (select 2)"},
		{name: "trailing semicolon and comment", query: "select 1; -- done"},
		{name: "words inside a string", query: "select 'delete from t; insert into u' as s"},
		{name: "doubled quote in a string", query: "select 'it''s; delete' as s"},
		{name: "E string with a backslash quote", query: `select E'\'; delete from t' as s`},
		{name: "quoted identifier", query: `select "delete", "a""; update" from t`},
		{name: "dollar quote", query: "select $x$; delete from t $x$ as s, $$ insert $$ as u"},
		{name: "nested comment", query: "select 1 /* a /* delete */ ; update */"},
		{name: "line comment", query: "select 1 -- ; delete from t\n"},
		{name: "a qualified column named like a keyword", query: "select t.update, t.delete from t"},
		{name: "substring for", query: "select substring(s from 1 for 2) from t"},
		{name: "sqlite brackets and backticks", query: "select [delete], `update` from t", d: SQLite},
		{name: "sqlite $name parameter", query: "select * from t where a = $acct", d: SQLite},

		{name: "delete returning", query: "delete from t returning *", want: `"delete" is not a read-only query`, at: "delete"},
		{name: "data-modifying cte", query: "with d as (delete from t returning *) select * from d", want: "DELETE writes", at: "delete from t"},
		{name: "insert in a cte", query: "WITH i AS (INSERT INTO t VALUES (1) RETURNING id) SELECT id FROM i", want: "INSERT writes", at: "INSERT"},
		{name: "update in a cte", query: "with u as (update t set a = 1 returning a) select a from u", want: "UPDATE writes", at: "update t"},
		{name: "merge in a cte", query: "with m as (merge into t using s on true when matched then delete) select 1", want: "MERGE writes", at: "merge"},
		{name: "two statements", query: "select 1; delete from t", want: "more than one statement", at: "delete"},
		{name: "two selects", query: "select 1; select 2", want: "more than one statement", at: "select 2"},
		{name: "select into", query: "select * into backup from t", want: "SELECT INTO writes", at: "into"},
		{name: "for update", query: "select * from t for update", want: "FOR UPDATE locks rows", at: "for update"},
		{name: "for no key update", query: "select * from t for no key update skip locked", want: "FOR NO KEY UPDATE locks rows", at: "for no"},
		{name: "for share", query: "select * from t FOR SHARE", want: "FOR SHARE locks rows", at: "FOR SHARE"},
		{name: "copy", query: "copy t to '/tmp/x'", want: `"copy" is not a read-only query`, at: "copy"},
		{name: "call", query: "call p()", want: `"call" is not a read-only query`, at: "call"},
		{name: "explain analyze", query: "explain analyze delete from t", want: `"explain" is not`, at: "explain"},
		{name: "empty", query: " -- nothing\n", want: "the query is empty"},
		{name: "a write after a comment that ends", query: "select 1 /* x */; delete from t", want: "more than one statement", at: "delete"},
		{name: "a write after a string that ends", query: "select 'a''b'; delete from t", want: "more than one statement", at: "delete"},
		{name: "a write after a dollar quote that ends", query: "select $q$x$q$; delete from t", want: "more than one statement", at: "delete"},
		{name: "unterminated string", query: "select 'abc", want: "unterminated string", at: "'abc"},
		{name: "unterminated dollar quote", query: "select $a$ x", want: "unterminated dollar-quoted string", at: "$a$"},
		{name: "sqlite insert after with", query: "with x as (select 1) insert into t select * from x", d: SQLite, want: "INSERT writes", at: "insert"},
		{name: "sqlite has no dollar quotes", query: "select $a$; delete from t", d: SQLite, want: "more than one statement", at: "delete"},
		{name: "sqlite replace statement", query: "replace into t values (1)", d: SQLite, want: `"replace" is not`, at: "replace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Check(tc.query, tc.d)
			switch {
			case tc.want == "" && p != nil:
				t.Fatalf("refused a read: %s (at %d)", p.Msg, p.Offset)
			case tc.want == "":
				return
			case p == nil:
				t.Fatalf("accepted; want %q", tc.want)
			case !strings.Contains(p.Msg, tc.want):
				t.Fatalf("message %q, want it to contain %q", p.Msg, tc.want)
			case p.Hint == "":
				t.Errorf("no hint for %q", p.Msg)
			}
			if tc.at != "" && !strings.HasPrefix(tc.query[p.Offset:], tc.at) {
				t.Errorf("offset %d points at %q, want %q", p.Offset, tc.query[p.Offset:], tc.at)
			}
		})
	}
}
