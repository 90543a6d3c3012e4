package html

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	nethtml "golang.org/x/net/html"

	"github.com/idemtest/idemtest/internal/audit"
)

// byID finds the element with id, nil when there is none.
func byID(n *nethtml.Node, id string) *nethtml.Node {
	for _, a := range n.Attr {
		if a.Key == "id" && a.Val == id {
			return n
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := byID(c, id); f != nil {
			return f
		}
	}
	return nil
}

func text(n *nethtml.Node) string {
	var b strings.Builder
	var walk func(*nethtml.Node)
	walk = func(n *nethtml.Node) {
		if n.Type == nethtml.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func attr(n *nethtml.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func findAll(n *nethtml.Node, ok func(*nethtml.Node) bool) []*nethtml.Node {
	var out []*nethtml.Node
	if ok(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, findAll(c, ok)...)
	}
	return out
}

// TestAuditHTML: the audit's page, parsed, shows the counts, a point per minute on each rate's
// line (the per-minute rates, scaled), the threshold line, and each finding with its trace and
// span ids; text from the input is text, never markup.
func TestAuditHTML(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	th := 0.05
	rep := &audit.Report{Calls: 30, Keyed: 30, Executions: 20, Replays: 6, Conflicts: 4, Violations: 2, HitRate: 0.2, ConflictRate: 4.0 / 30,
		Thresholds: audit.Thresholds{MaxHitRate: &th},
		Tools:      []audit.ToolStats{{Tool: "issue_refund<script>alert(1)</script>", Calls: 30, Keyed: 30, Executions: 20, Replays: 6, Conflicts: 4, Findings: map[audit.Kind]int{audit.DoubleExecution: 1}}},
		Minutes: []audit.Minute{{At: at, Keyed: 10, Replays: 0, Conflicts: 0}, {At: at.Add(time.Minute), Keyed: 10, Replays: 2, Conflicts: 4},
			{At: at.Add(2 * time.Minute), Keyed: 10, Replays: 4}},
		Findings: []audit.Finding{{Kind: audit.DoubleExecution, Violation: true, Tool: "issue_refund<script>alert(1)</script>", Key: "k1", Count: 2, Message: "key \"k1\" executed 2 times",
			Calls: []audit.Ref{{TraceID: "4bf92f3577b34da6a3ce929d0e0e4737", SpanID: "00f067aa0ba902b8", At: at, Where: "spans.jsonl:1"}}},
			{Kind: audit.HitRate, Violation: true, Count: 6, Message: "hit rate 20% over 5%", Calls: []audit.Ref{}}}}
	var buf bytes.Buffer
	if err := WriteAudit(&buf, rep, "v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	doc, err := nethtml.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"calls": "30", "keyed": "30", "executions": "20", "replays": "6", "conflicts": "4", "hit-rate": "20%", "conflict-rate": "13.33%"} {
		if n := byID(doc, id); n == nil || strings.TrimSpace(text(n)) != want {
			t.Errorf("#%s: want %q", id, want)
		}
	}
	if n := byID(doc, "verdict"); n == nil || !strings.HasPrefix(text(n), "2 violations; hit rate 20%") {
		t.Errorf("verdict banner: %v", n)
	}
	if len(findAll(doc, func(n *nethtml.Node) bool { return n.Type == nethtml.ElementNode && n.Data == "script" })) != 0 {
		t.Error("a tool name became a script element")
	}
	if !strings.Contains(text(byID(doc, "tools")), "issue_refund<script>alert(1)</script>") {
		t.Error("the tools table lacks the tool's name as text")
	}
	// The lines: a point per minute; y is the rate scaled to the top (40% here, the highest rate).
	for id, want := range map[string][]float64{"hit-line": {0, 0.2, 0.4}, "conflict-line": {0, 0.4, 0}} {
		n := byID(doc, id)
		if n == nil {
			t.Fatalf("no #%s", id)
		}
		pts := strings.Fields(attr(n, "points"))
		if len(pts) != len(want) {
			t.Fatalf("#%s has %d points, want %d", id, len(pts), len(want))
		}
		for i, p := range pts {
			_, ys, _ := strings.Cut(p, ",")
			y, err := strconv.ParseFloat(ys, 64)
			if err != nil {
				t.Fatalf("#%s point %q: %v", id, p, err)
			}
			if rate := 0.4 * (1 - y/220); rate < want[i]-0.001 || rate > want[i]+0.001 {
				t.Errorf("#%s point %d is at rate %.3f, want %.3f", id, i, rate, want[i])
			}
		}
	}
	lines := findAll(doc, func(n *nethtml.Node) bool { return n.Data == "line" && strings.Contains(attr(n, "class"), "threshold") })
	if len(lines) != 1 {
		t.Errorf("%d threshold lines, want 1 (the hit rate's)", len(lines))
	}
	findings := findAll(doc, func(n *nethtml.Node) bool { return attr(n, "data-kind") != "" })
	if len(findings) != 2 || attr(findings[0], "data-kind") != "double-execution" {
		t.Fatalf("%d findings shown, want 2, the double execution first", len(findings))
	}
	ids := findAll(findings[0], func(n *nethtml.Node) bool { return attr(n, "class") == "trace" || attr(n, "class") == "span" })
	if len(ids) != 2 || text(ids[0]) != "4bf92f3577b34da6a3ce929d0e0e4737" || text(ids[1]) != "00f067aa0ba902b8" {
		t.Errorf("the double execution's call does not show its trace and span ids")
	}
}
