package html

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/idemtest/idemtest/internal/audit"
	"github.com/idemtest/idemtest/internal/plural"
)

//go:embed audit.tmpl
var auditSource string

var auditTemplate = template.Must(template.New("audit").Parse(auditSource))

// WriteAudit writes idemtest audit's report as a self-contained HTML page: the verdict and
// rates, the table per tool, the hit and conflict rates per minute plotted against their
// thresholds, and each finding with the trace and span ids of its calls.
func WriteAudit(w io.Writer, rep *audit.Report, version string) error {
	if err := auditTemplate.Execute(w, auditPageOf(rep, version)); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// auditPage is what the template shows; every string in it is plain text or built here from
// numbers (the chart's coordinates).
type auditPage struct {
	Version, Verdict, Rates string
	Failed, Interrupted     bool
	Rep                     *audit.Report
	HitRate, ConflictRate   string
	Tools                   []auditTool
	Findings                []auditFinding
	Chart                   *auditChart
}

type auditTool struct {
	audit.ToolStats
	HitRate, ConflictRate string
	Double, FreshKey      int
}

type auditFinding struct {
	audit.Finding
}

// auditChart is the rates per minute as SVG polylines in a Width x Height box (y grows down).
type auditChart struct {
	Width, Height         int
	Hit, Conflict         string // polyline points
	HitMax, ConflictMax   *float64
	HitMaxY, ConflictMaxY string
	From, To, Top         string
	Minutes               int
	Bucket                int // minutes per point
}

// maxChartPoints bounds the points of a line: longer series are summed into buckets of minutes.
const maxChartPoints = 720

func auditPageOf(rep *audit.Report, version string) auditPage {
	p := auditPage{Version: version, Rep: rep, Failed: rep.Failed(), Interrupted: rep.Interrupted,
		HitRate: audit.Pct(rep.HitRate), ConflictRate: audit.Pct(rep.ConflictRate)}
	p.Rates = fmt.Sprintf("hit rate %s, conflict rate %s over %s (%s)", p.HitRate, p.ConflictRate,
		plural.Count(rep.Keyed, "keyed call"), plural.Count(rep.Calls, "call"))
	switch {
	case rep.Interrupted:
		p.Verdict = "interrupted: the input was not read to its end"
	case rep.Failed():
		p.Verdict = plural.Count(rep.Violations, "violation")
	default:
		p.Verdict = "no violation"
	}
	for _, t := range rep.Tools {
		p.Tools = append(p.Tools, auditTool{ToolStats: t, HitRate: audit.Pct(t.HitRate), ConflictRate: audit.Pct(t.ConflictRate),
			Double: t.Findings[audit.DoubleExecution], FreshKey: t.Findings[audit.FreshKeyRetry]})
	}
	for _, f := range rep.Findings {
		p.Findings = append(p.Findings, auditFinding{f})
	}
	p.Chart = chartOf(rep)
	return p
}

func chartOf(rep *audit.Report) *auditChart {
	if len(rep.Minutes) == 0 {
		return nil
	}
	c := &auditChart{Width: 900, Height: 220, Minutes: len(rep.Minutes), Bucket: 1,
		HitMax: rep.Thresholds.MaxHitRate, ConflictMax: rep.Thresholds.MaxConflictRate}
	c.Bucket = (len(rep.Minutes) + maxChartPoints - 1) / maxChartPoints
	type point struct{ hit, conflict float64 }
	var pts []point
	for i := 0; i < len(rep.Minutes); i += c.Bucket {
		var keyed, replays, conflicts int
		for _, m := range rep.Minutes[i:min(i+c.Bucket, len(rep.Minutes))] {
			keyed, replays, conflicts = keyed+m.Keyed, replays+m.Replays, conflicts+m.Conflicts
		}
		var pt point
		if keyed > 0 {
			pt = point{float64(replays) / float64(keyed), float64(conflicts) / float64(keyed)}
		}
		pts = append(pts, pt)
	}
	// The y axis reaches the highest rate or threshold, at least 10%.
	top := 0.1
	for _, pt := range pts {
		top = max(top, pt.hit, pt.conflict)
	}
	for _, th := range []*float64{c.HitMax, c.ConflictMax} {
		if th != nil {
			top = max(top, *th)
		}
	}
	c.Top = audit.Pct(top)
	x := func(i int) string {
		if len(pts) == 1 {
			return strconv.Itoa(c.Width / 2)
		}
		return strconv.FormatFloat(float64(i)*float64(c.Width)/float64(len(pts)-1), 'f', 1, 64)
	}
	y := func(v float64) string {
		return strconv.FormatFloat(float64(c.Height)*(1-v/top), 'f', 1, 64)
	}
	var hit, conflict strings.Builder
	for i, pt := range pts {
		fmt.Fprintf(&hit, "%s,%s ", x(i), y(pt.hit))
		fmt.Fprintf(&conflict, "%s,%s ", x(i), y(pt.conflict))
	}
	c.Hit, c.Conflict = strings.TrimSpace(hit.String()), strings.TrimSpace(conflict.String())
	if c.HitMax != nil {
		c.HitMaxY = y(*c.HitMax)
	}
	if c.ConflictMax != nil {
		c.ConflictMaxY = y(*c.ConflictMax)
	}
	c.From = rep.Minutes[0].At.Format("2006-01-02 15:04")
	c.To = rep.Minutes[len(rep.Minutes)-1].At.Format("2006-01-02 15:04") + " UTC"
	return c
}
