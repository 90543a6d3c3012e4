package github

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/matrix"
)

// hostileMatrix is a check matrix whose tool name, reason and details come from a server that
// tries to end a workflow command, start another, break the summary's table and inject HTML.
func hostileMatrix() matrix.Matrix {
	tool := "evil|tool<script>x</script>"
	return matrix.Matrix{Title: "idemtest check refunds", Corner: "TOOL", Columns: []string{"replay", "concurrent"}, Failed: true,
		Rows: []matrix.Row{{Name: tool, Cells: []matrix.Cell{
			{Column: "replay", Label: tool + " replay", Status: matrix.Fail, Reason: "executed twice\n::error::injected | <b>x</b>",
				Details: []string{"```", "| injected | row |", "<script>y</script>"}},
			{Column: "concurrent", Label: tool + " concurrent", Status: matrix.Pass, Reason: "ok"},
		}}},
		Tally: "1 tool, 2 checks: 1 ✓ 1 ✗ 0 ⚠ 0 – 0 ?  1s"}
}

// TestAnnotateMatrixHostile: each ✗ is one workflow command on one line, whatever the server's
// text holds; a ✓ is none.
func TestAnnotateMatrixHostile(t *testing.T) {
	var buf bytes.Buffer
	AnnotateMatrix(&buf, hostileMatrix(), nil)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "::error title=idemtest check%3A evil|tool<script>x</script> replay::executed twice%0A") ||
		strings.Contains(lines[0], "%0A::") {
		t.Fatalf("annotations %q, want one error on one line", lines)
	}
}

// TestMatrixSummaryHostile: the server's bytes never leave a table cell or the fence: the
// table keeps its columns and no HTML is outside a code fence.
func TestMatrixSummaryHostile(t *testing.T) {
	var buf bytes.Buffer
	if err := MatrixSummary(&buf, hostileMatrix(), nil, nil); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if !strings.HasPrefix(md, "### ❌ idemtest check refunds: 1 of 2 cells failed\n") {
		t.Errorf("heading: %q", strings.SplitN(md, "\n", 2)[0])
	}
	var outside strings.Builder
	fence := ""
	for _, l := range strings.Split(md, "\n") {
		switch {
		case fence != "" && l == fence:
			fence = ""
		case fence != "":
		case strings.HasPrefix(l, "```"):
			fence = strings.TrimSuffix(l, "text")
		default:
			outside.WriteString(l + "\n")
			if strings.HasPrefix(l, "|") && strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") != strings.Count(lineHeader(md, l), "|") {
				t.Errorf("a table row with the wrong column count: %q", l)
			}
		}
	}
	if fence != "" {
		t.Error("a fence is left open")
	}
	if strings.Contains(outside.String(), "<script>") || strings.Contains(outside.String(), "<b>x") {
		t.Errorf("the server's HTML reached the summary outside a fence:\n%s", outside.String())
	}
	if !strings.Contains(md, "| evil\\|tool&lt;script&gt;x&lt;/script&gt; | ✗ | ✓ |") {
		t.Errorf("the matrix row is missing or unescaped:\n%s", md)
	}
}

// lineHeader is the header row of the table holding line l of md.
func lineHeader(md, l string) string {
	lines := strings.Split(md, "\n")
	head := ""
	for i, x := range lines {
		if !strings.HasPrefix(x, "|") {
			head = ""
			continue
		}
		if head == "" {
			head = strings.ReplaceAll(lines[i], `\|`, "")
		}
		if x == l {
			return head
		}
	}
	return ""
}

// TestMatrixKnown: a ✗ the baseline knows is a notice under fail-on new (the job is green, and
// the heading says so) and an error under fail-on any.
func TestMatrixKnown(t *testing.T) {
	m := hostileMatrix()
	m.Rows[0].Cells[0].Known = true
	for _, tc := range []struct{ failOn, level, heading string }{
		{baseline.FailOnNew, "::notice ", "### ✅ idemtest check refunds: no new failures — 1 of 2 cells failed, all known in the baseline"},
		{baseline.FailOnAny, "::error ", "### ❌ idemtest check refunds: 1 of 2 cells failed"},
	} {
		res := &baseline.Result{FailOn: tc.failOn, Known: []baseline.Failure{{Subject: baseline.CheckSubject("evil", "replay"), What: "fail"}}}
		var gh, md bytes.Buffer
		AnnotateMatrix(&gh, m, res)
		if err := MatrixSummary(&md, m, res, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(gh.String(), tc.level) || strings.Count(gh.String(), "\n") != 1 {
			t.Errorf("fail-on %s: annotations %q, want one %s", tc.failOn, gh.String(), tc.level)
		}
		if h, _, _ := strings.Cut(md.String(), "\n"); h != tc.heading {
			t.Errorf("fail-on %s: heading %q, want %q", tc.failOn, h, tc.heading)
		}
		if !strings.Contains(md.String(), "| ✗ fail | known |") {
			t.Errorf("fail-on %s: the cell is not marked known:\n%s", tc.failOn, md.String())
		}
	}
}
