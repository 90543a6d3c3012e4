package merge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/check"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/regularfile"
	"github.com/idemtest/idemtest/internal/reporters/jsonreport"
	"github.com/idemtest/idemtest/internal/reportschema/schemacheck"
	"github.com/idemtest/idemtest/internal/result"
)

// Input is one JSON report read from a file.
type Input struct {
	Path string
	Kind baseline.Kind
	Data []byte
}

// ReadFile reads the JSON report at path: a regular file of at most baseline.MaxBytes that is a
// report of idemtest of the format version this idemtest reads.
func ReadFile(path string) (*Input, error) {
	// regularfile refuses a named pipe before opening it: os.Open of a FIFO without a writer
	// blocks for good, and no signal could end the merge.
	b, err := regularfile.ReadSmall(path, baseline.MaxBytes)
	var notRegular *regularfile.NotRegularError
	var tooLarge *regularfile.TooLargeError
	switch {
	case errors.As(err, &notRegular):
		return nil, fmt.Errorf("report %s is not a regular file (%s)", path, regularfile.Kind(notRegular.Mode))
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("report %s is larger than %d MiB: it is not a report idemtest wrote", path, baseline.MaxBytes>>20)
	case err != nil:
		return nil, fmt.Errorf("read report: %w", err)
	}
	kind, err := baseline.Sniff(b, path)
	if err != nil {
		return nil, err
	}
	// A value the schema forbids ("status": "FAILED") would be read as something else, and
	// printed ✓ or not counted: the report is refused instead.
	if err := schemacheck.Input(string(kind), b); err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return &Input{Path: path, Kind: kind, Data: b}, nil
}

// Kind is the kind every input is: run or check. Mixed kinds, or another kind, are an error
// naming the first file that differs.
func Kind(ins []*Input) (baseline.Kind, error) {
	if len(ins) == 0 {
		return "", errors.New("no report to merge")
	}
	kind := ins[0].Kind
	for _, in := range ins {
		if in.Kind != kind {
			return "", fmt.Errorf("%s is the report of idemtest %s and %s of idemtest %s: merge reports of one command", in.Path, in.Kind, ins[0].Path, kind)
		}
	}
	if kind != baseline.Run && kind != baseline.Check {
		return "", fmt.Errorf("%s is the report of idemtest %s: merge reads the reports of run and check", ins[0].Path, kind)
	}
	return kind, nil
}

// span is the earliest start and the latest end of the inputs.
type span struct{ start, end time.Time }

func (s *span) add(start time.Time, d time.Duration) {
	if start.IsZero() {
		return
	}
	if s.start.IsZero() || start.Before(s.start) {
		s.start = start
	}
	if end := start.Add(d); end.After(s.end) {
		s.end = end
	}
}

// Run merges run reports: every scenario of every input, in the order an unsharded run loads
// them (by file, then line). A scenario (file and name) in two inputs with the same verdict is
// kept once (a shard whose report was uploaded twice); with different verdicts it is an error.
func Run(ins []*Input) (*result.Report, error) {
	reps := make([]*result.Report, len(ins))
	members := make([]member, len(ins))
	for i, in := range ins {
		rep, err := jsonreport.Read(bytes.NewReader(in.Data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		reps[i] = rep
		members[i] = member{in.Path, rep.Shard.OrWhole(), runReportVerdict(rep)}
	}
	keep, err := pick(members)
	if err != nil {
		return nil, err
	}
	out := &result.Report{}
	var sp span
	seen := map[string]int{} // subject → index in out.Scenarios
	from := map[string]string{}
	var errs []string
	var covs [][]result.Coverage
	var regs []regressions
	for i, in := range ins {
		if !keep[i] {
			continue
		}
		rep := reps[i]
		sp.add(rep.Start, rep.Duration)
		out.Interrupted = out.Interrupted || rep.Interrupted
		if rep.Err != nil {
			errs = append(errs, in.Path+": "+rep.Err.Error())
		}
		if rep.Coverage != nil {
			covs = append(covs, rep.Coverage)
		}
		regs = append(regs, regressions{in.Path, rep.Regressions})
		for _, r := range rep.Scenarios {
			subject := baseline.ScenarioSubject(r.Scenario.File, r.Scenario.Name)
			if i, ok := seen[subject]; ok {
				if a, b := runVerdict(out.Scenarios[i]), runVerdict(r); a != b {
					return nil, fmt.Errorf("%s is in %s and %s with different results: merge the reports of one run's shards, each once", subject, from[subject], in.Path)
				}
				continue
			}
			seen[subject] = len(out.Scenarios)
			from[subject] = in.Path
			out.Scenarios = append(out.Scenarios, r)
		}
	}
	sort.SliceStable(out.Scenarios, func(i, j int) bool {
		a, b := out.Scenarios[i].Scenario, out.Scenarios[j].Scenario
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Pos.Line < b.Pos.Line
	})
	out.Start, out.Duration = sp.start, sp.end.Sub(sp.start)
	if len(errs) > 0 {
		out.Err = errors.New(strings.Join(errs, "; "))
	}
	out.Coverage = runCoverage(covs)
	out.Regressions, err = mergeRegressions(regs)
	return out, err
}

// runReportVerdict is what two reports of one shard must agree on to count once: every
// scenario's verdict, whether the run started and whether it was interrupted.
func runReportVerdict(rep *result.Report) string {
	vs := make([]string, 0, len(rep.Scenarios)+1)
	for _, r := range rep.Scenarios {
		vs = append(vs, baseline.ScenarioSubject(r.Scenario.File, r.Scenario.Name)+"\x00"+runVerdict(r))
	}
	sort.Strings(vs)
	errText := ""
	if rep.Err != nil {
		errText = rep.Err.Error()
	}
	return fmt.Sprintf("%v\x00%s\x00%s", rep.Interrupted, errText, strings.Join(vs, "\x01"))
}

// member is one input as a shard: its path, the shard it says it is, and what it judged.
type member struct {
	path    string
	shard   result.Shard
	verdict string
}

// maxMissingNamed bounds the missing shards an error names.
const maxMissingNamed = 10

// pick checks that the inputs are one whole set of shards of one split (every shard 1..N of one
// N, an unsharded report being 1 of 1) and says which inputs to merge: each shard once. The same
// shard twice with the same verdicts (an artefact downloaded twice) counts once; with different
// verdicts, of different N, or with a shard missing, the set is refused, naming what is wrong.
func pick(ms []member) ([]bool, error) {
	keep := make([]bool, len(ms))
	if len(ms) == 0 {
		return keep, nil
	}
	first := ms[0]
	at := map[int]int{} // shard index → input
	for i, m := range ms {
		s := m.shard
		if s.Index < 1 || s.Index > s.Total {
			return nil, fmt.Errorf("%s says it is shard %s: a shard K/N has 1 <= K <= N", m.path, s)
		}
		if s.Total != first.shard.Total {
			return nil, fmt.Errorf("%s is shard %s and %s shard %s: merge the shards of one split, all of one N", m.path, s, first.path, first.shard)
		}
		if j, ok := at[s.Index]; ok {
			if ms[j].verdict != m.verdict {
				return nil, fmt.Errorf("%s and %s are both shard %s, with different results: merge each shard's report once", ms[j].path, m.path, s)
			}
			continue
		}
		at[s.Index] = i
		keep[i] = true
	}
	total := first.shard.Total
	if n := total - len(at); n > 0 {
		var missing []string
		for k := 1; k <= total && len(missing) < maxMissingNamed; k++ {
			if _, ok := at[k]; !ok {
				missing = append(missing, result.Shard{Index: k, Total: total}.String())
			}
		}
		if n > len(missing) {
			missing = append(missing, fmt.Sprintf("and %d more", n-len(missing)))
		}
		return nil, fmt.Errorf("incomplete set of shards: %s missing (%d of %d given): merge the --json report of every shard", plural.Count(n, "shard")+" "+strings.Join(missing, ", "), len(at), total)
	}
	return keep, nil
}

// runVerdict is what a scenario's result must agree on when two inputs hold it.
func runVerdict(r *result.ScenarioResult) string {
	v := string(r.Status)
	if f := r.Failure; f != nil {
		v += "\x00" + string(f.Kind) + "\x00" + f.Step + "\x00" + f.Violation + "\x00" + f.Tool
	}
	return v
}

// runCoverage merges the coverage of run shards: every shard lists every endpoint's mutating
// tools, and a tool is uncovered when no shard called it, that is when every shard that lists
// the endpoint lists it as uncovered. Linear in the tools listed: a tool is counted, not looked
// up in every other shard's list.
func runCoverage(covs [][]result.Coverage) []result.Coverage {
	if len(covs) == 0 {
		return nil
	}
	type merged struct {
		cov               result.Coverage
		shards            int            // shards that list the endpoint
		uncovered, exempt map[string]int // tool → shards that list it
	}
	var order []*merged
	at := map[string]*merged{}
	for _, cov := range covs {
		for _, c := range cov {
			m, ok := at[c.Endpoint]
			if !ok {
				m = &merged{cov: c, uncovered: map[string]int{}, exempt: map[string]int{}}
				m.cov.Uncovered, m.cov.Exempt = slices.Clone(c.Uncovered), slices.Clone(c.Exempt)
				at[c.Endpoint] = m
				order = append(order, m)
			} else {
				m.cov.Mutating = max(m.cov.Mutating, c.Mutating)
				if m.cov.Error == "" {
					m.cov.Error = c.Error
				}
			}
			m.shards++
			count(m.uncovered, c.Uncovered)
			count(m.exempt, c.Exempt)
		}
	}
	out := make([]result.Coverage, 0, len(order))
	for _, m := range order {
		m.cov.Uncovered = inEvery(m.cov.Uncovered, m.uncovered, m.shards)
		m.cov.Exempt = inEvery(m.cov.Exempt, m.exempt, m.shards)
		out = append(out, m.cov)
	}
	return out
}

// count adds one for each tool us lists (a tool listed twice in one shard counts once).
func count(n map[string]int, us []result.Uncovered) {
	seen := make(map[string]bool, len(us))
	for _, u := range us {
		if !seen[u.Tool] {
			seen[u.Tool] = true
			n[u.Tool]++
		}
	}
}

// inEvery keeps the tools of first (the first shard's list, in its order) that all shards list.
func inEvery(first []result.Uncovered, n map[string]int, shards int) []result.Uncovered {
	if first == nil {
		return nil
	}
	return slices.DeleteFunc(first, func(u result.Uncovered) bool { return n[u.Tool] < shards })
}

// ErrBaselines says that the inputs were not compared with one baseline: merge --baseline
// compares the merged report instead (the report returned with it is whole).
var ErrBaselines = errors.New("not compared with the same --baseline and --fail-on")

// regressions is one input's classification against a baseline (nil: it had none).
type regressions struct {
	path string
	res  *baseline.Result
}

// mergeRegressions joins the inputs' classifications when every input was compared with the
// same baseline under the same policy; when none was, there is none. Some with and some without,
// or different baselines, is an error: merge --baseline classifies the merged report instead.
func mergeRegressions(regs []regressions) (*baseline.Result, error) {
	var first *regressions
	for i := range regs {
		if regs[i].res != nil {
			first = &regs[i]
			break
		}
	}
	if first == nil {
		return nil, nil
	}
	out := &baseline.Result{Baseline: first.res.Baseline, FailOn: first.res.FailOn}
	for _, r := range regs {
		if r.res == nil || r.res.Baseline != first.res.Baseline || r.res.FailOn != first.res.FailOn {
			return nil, fmt.Errorf("%s and %s were %w: give merge --baseline FILE to compare the merged report", first.path, r.path, ErrBaselines)
		}
		out.New = append(out.New, r.res.New...)
		out.Known = append(out.Known, r.res.Known...)
		out.Fixed = append(out.Fixed, r.res.Fixed...)
	}
	out.New, out.Known, out.Fixed = uniq(out.New), uniq(out.Known), uniq(out.Fixed)
	return out, nil
}

func uniq(fs []baseline.Failure) []baseline.Failure {
	sort.Slice(fs, func(i, j int) bool { return fs[i].ID() < fs[j].ID() })
	fs = slices.CompactFunc(fs, func(a, b baseline.Failure) bool { return a.ID() == b.ID() })
	if fs == nil {
		fs = []baseline.Failure{}
	}
	return fs
}

// Check merges check reports of one endpoint, profile and set of checks: every tool of every
// input, sorted by name. A tool in two inputs with the same cells is kept once; with different
// cells it is an error.
func Check(ins []*Input) (*check.Report, error) {
	reps := make([]*check.Report, len(ins))
	members := make([]member, len(ins))
	for i, in := range ins {
		rep := &check.Report{}
		if err := json.Unmarshal(in.Data, rep); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		reps[i] = rep
		members[i] = member{in.Path, rep.Shard.OrWhole(), checkReportVerdict(rep)}
	}
	keep, err := pick(members)
	if err != nil {
		return nil, err
	}
	var out *check.Report
	var sp span
	from := map[string]string{}
	at := map[string]int{}
	var regs []regressions
	var covs []result.Coverage
	for i, in := range ins {
		if !keep[i] {
			continue
		}
		rep := reps[i]
		if out == nil {
			out = &check.Report{Endpoint: rep.Endpoint, Profile: rep.Profile, Checks: rep.Checks, Rows: []*check.Row{}}
		} else if rep.Endpoint != out.Endpoint || rep.Profile != out.Profile || !slices.Equal(rep.Checks, out.Checks) {
			return nil, fmt.Errorf("%s checked endpoint %s (profile %s, checks %s) and %s endpoint %s (profile %s, checks %s): merge the shards of one check",
				in.Path, rep.Endpoint, rep.Profile, strings.Join(rep.Checks, ","), ins[0].Path, out.Endpoint, out.Profile, strings.Join(out.Checks, ","))
		}
		sp.add(rep.Start, rep.Duration)
		out.Interrupted = out.Interrupted || rep.Interrupted
		for _, d := range rep.Diagnoses {
			if !slices.Contains(out.Diagnoses, d) {
				out.Diagnoses = append(out.Diagnoses, d)
			}
		}
		covs = append(covs, rep.Coverage...)
		regs = append(regs, regressions{in.Path, rep.Regressions})
		for _, row := range rep.Rows {
			if i, ok := at[row.Tool]; ok {
				if cellVerdict(out.Rows[i]) != cellVerdict(row) {
					return nil, fmt.Errorf("tool %s is in %s and %s with different results: merge the reports of one check's shards, each once", row.Tool, from[row.Tool], in.Path)
				}
				continue
			}
			at[row.Tool] = len(out.Rows)
			from[row.Tool] = in.Path
			out.Rows = append(out.Rows, row)
		}
	}
	sort.SliceStable(out.Rows, func(i, j int) bool { return out.Rows[i].Tool < out.Rows[j].Tool })
	out.Start, out.Duration = sp.start, sp.end.Sub(sp.start)
	out.Coverage = checkCoverage(covs)
	out.Regressions, err = mergeRegressions(regs)
	return out, err
}

// checkReportVerdict is what two reports of one check shard must agree on to count once.
func checkReportVerdict(rep *check.Report) string {
	vs := make([]string, 0, len(rep.Rows))
	for _, row := range rep.Rows {
		vs = append(vs, row.Tool+"\x00"+cellVerdict(row))
	}
	sort.Strings(vs)
	return fmt.Sprintf("%s\x00%s\x00%s\x00%v\x00%s", rep.Endpoint, rep.Profile, strings.Join(rep.Checks, ","), rep.Interrupted, strings.Join(vs, "\x01"))
}

// cellVerdict is what a tool's row must agree on when two inputs hold it.
func cellVerdict(row *check.Row) string {
	v := row.Skipped
	for _, c := range row.Cells {
		v += "\x00" + c.Check + "=" + string(c.Status)
	}
	return v
}

// checkCoverage merges the coverage of check shards of one endpoint: the shards judged disjoint
// tools, so the mutating tools add up and the uncovered ones are every shard's.
func checkCoverage(covs []result.Coverage) []result.Coverage {
	if len(covs) == 0 {
		return nil
	}
	out := result.Coverage{Endpoint: covs[0].Endpoint, Uncovered: []result.Uncovered{}}
	for _, c := range covs {
		out.Mutating += c.Mutating
		out.Uncovered = append(out.Uncovered, c.Uncovered...)
		out.Exempt = append(out.Exempt, c.Exempt...)
		if out.Error == "" {
			out.Error = c.Error
		}
	}
	byTool := func(a, b result.Uncovered) int { return strings.Compare(a.Tool, b.Tool) }
	slices.SortFunc(out.Uncovered, byTool)
	slices.SortFunc(out.Exempt, byTool)
	return []result.Coverage{out}
}
