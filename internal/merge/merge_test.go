package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/baseline"
	"github.com/idemtest/idemtest/internal/result"
)

// The inputs are reports recorded from real runs (the reporters' test data).
func read(t *testing.T, names ...string) []*Input {
	t.Helper()
	var out []*Input
	for _, n := range names {
		in, err := ReadFile(filepath.Join("..", "reporters", "testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

// sharded reads the recorded reports as the shards of one split, the i-th file (from 0) shard
// i+1 of len(files), or the shards that spec names ("1/2" for each file).
func sharded(t *testing.T, files []string, spec []string) []*Input {
	t.Helper()
	ins := read(t, files...)
	for i, in := range ins {
		s := fmt.Sprintf("%d/%d", i+1, len(files))
		if spec != nil {
			s = spec[i]
		}
		var k, n int
		if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(in.Data, &m); err != nil {
			t.Fatal(err)
		}
		m["shard"] = map[string]int{"index": k, "total": n}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		in.Data = b
	}
	return ins
}

func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		files       []string
		shards      []string // each file's shard, K/N; nil: file i is shard i+1 of len(files)
		scenarios   int
		failed      bool
		interrupted bool
		errText     string // of the merged report's Err
		wantErr     string // of the merge
	}{
		{name: "two shards", files: []string{"run.correct.json", "run.mixed.json"}, scenarios: 5, failed: true},
		{name: "a report twice is kept once", files: []string{"run.correct.json", "run.correct.json"}, shards: []string{"1/1", "1/1"}, scenarios: 3, failed: true},
		{name: "one scenario, two results", files: []string{"run.correct.json", "run.none.json"}, wantErr: `"verdict only: a call, a lost response and its retry, a 16-way burst" is in`},
		{name: "one shard, two results", files: []string{"run.correct.json", "run.none.json"}, shards: []string{"1/1", "1/1"}, wantErr: "run.none.json are both shard 1/1, with different results"},
		{name: "a shard missing", files: []string{"run.correct.json"}, shards: []string{"2/2"}, wantErr: "incomplete set of shards: 1 shard 1/2 missing (1 of 2 given)"},
		{name: "many shards missing", files: []string{"run.correct.json"}, shards: []string{"1/1000000000"}, wantErr: "shards 2/1000000000, 3/1000000000, 4/1000000000, 5/1000000000, 6/1000000000, 7/1000000000, 8/1000000000, 9/1000000000, 10/1000000000, 11/1000000000, and 999999989 more missing"},
		{name: "mixed N", files: []string{"run.correct.json", "run.mixed.json", "run.none.json"}, shards: []string{"1/2", "2/2", "3/3"}, wantErr: "run.none.json is shard 3/3 and ../reporters/testdata/run.correct.json shard 1/2: merge the shards of one split, all of one N"},
		{name: "a shard beyond N", files: []string{"run.correct.json"}, shards: []string{"2/1"}, wantErr: "run.correct.json says it is shard 2/1"},
		{name: "an interrupted shard", files: []string{"run.mixed.json", "run.interrupted.json"}, scenarios: 5, failed: true, interrupted: true},
		{name: "a shard whose services did not start", files: []string{"run.nostart.json", "run.mixed.json"}, scenarios: 2, failed: true, errText: "run.nostart.json: service refundserver stopped"},
		{name: "a shard alone", files: []string{"run.none.json"}, scenarios: 4, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Run(sharded(t, tt.files, tt.shards))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Scenarios) != tt.scenarios || rep.Failed() != tt.failed || rep.Interrupted != tt.interrupted {
				t.Errorf("%d scenarios, failed %v, interrupted %v", len(rep.Scenarios), rep.Failed(), rep.Interrupted)
			}
			for i := 1; i < len(rep.Scenarios); i++ {
				if a, b := rep.Scenarios[i-1].Scenario, rep.Scenarios[i].Scenario; a.File > b.File {
					t.Errorf("%s before %s: not in load order", a.File, b.File)
				}
			}
			if tt.errText != "" && (rep.Err == nil || !strings.Contains(rep.Err.Error(), tt.errText)) {
				t.Errorf("Err %v, want %q", rep.Err, tt.errText)
			}
		})
	}
}

func TestKindAndCheck(t *testing.T) {
	if _, err := Kind(read(t, "run.mixed.json", "check.json")); err == nil || !strings.Contains(err.Error(), "check.json is the report of idemtest check") {
		t.Errorf("mixed kinds: %v", err)
	}
	ins := read(t, "check.json", "check.json") // unsharded, as written before reports carried a shard: 1/1 twice
	if k, err := Kind(ins); err != nil || k != baseline.Check {
		t.Fatalf("kind %q, %v", k, err)
	}
	rep, err := Check(ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Endpoint != "mcp_stdio" || len(rep.Checks) != 7 {
		t.Errorf("%d rows of %s, checks %v", len(rep.Rows), rep.Endpoint, rep.Checks)
	}
}

func TestRunCoverage(t *testing.T) {
	u := func(tools ...string) []result.Uncovered {
		var out []result.Uncovered
		for _, n := range tools {
			out = append(out, result.Uncovered{Tool: n})
		}
		return out
	}
	got := runCoverage([][]result.Coverage{
		{{Endpoint: "e", Mutating: 3, Uncovered: u("a", "b")}},
		{{Endpoint: "e", Mutating: 3, Uncovered: u("b", "c")}},
	})
	if len(got) != 1 || len(got[0].Uncovered) != 1 || got[0].Uncovered[0].Tool != "b" {
		t.Errorf("a tool one shard called is covered: %+v", got)
	}
	if !result.Gaps(got) {
		t.Error("b, called by no shard, is a gap")
	}
}

func TestMergeRegressions(t *testing.T) {
	f := baseline.Failure{Subject: "tool a check concurrent", What: "fail"}
	same := func(path string) regressions {
		return regressions{path, &baseline.Result{Baseline: "b.json", FailOn: "new", New: []baseline.Failure{f}, Known: []baseline.Failure{}, Fixed: []baseline.Failure{}}}
	}
	res, err := mergeRegressions([]regressions{same("1.json"), same("2.json")})
	if err != nil || len(res.New) != 1 || !res.Failed() {
		t.Errorf("joined: %+v, %v", res, err)
	}
	if res, err := mergeRegressions([]regressions{{"1.json", nil}, {"2.json", nil}}); res != nil || err != nil {
		t.Errorf("no baseline: %+v, %v", res, err)
	}
	if _, err := mergeRegressions([]regressions{same("1.json"), {"2.json", nil}}); !errors.Is(err, ErrBaselines) {
		t.Errorf("one shard without a baseline: %v", err)
	}
}

// TestCheckShardTwice: a check shard whose report is given twice counts once, its coverage too
// (the mutating tools of the endpoint are not counted twice, its uncovered tools not listed
// twice); the shards of one split add up.
func TestCheckShardTwice(t *testing.T) {
	withCoverage := func(ins []*Input, tool string) []*Input {
		for _, in := range ins {
			var m map[string]any
			if err := json.Unmarshal(in.Data, &m); err != nil {
				t.Fatal(err)
			}
			m["coverage"] = []map[string]any{{"endpoint": "mcp_stdio", "mutating": 2, "uncovered": []map[string]string{{"tool": tool}}}}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			in.Data = b
		}
		return ins
	}
	_, err := Check(withCoverage(sharded(t, []string{"check.json", "check.json"}, []string{"1/2", "1/2"}), "x"))
	if err == nil || !strings.Contains(err.Error(), "1 shard 2/2 missing") {
		t.Fatalf("shard 1/2 twice without 2/2: %v", err)
	}
	ins := withCoverage(sharded(t, []string{"check.json", "check.json"}, []string{"1/1", "1/1"}), "x")
	rep, err := Check(ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Coverage) != 1 || rep.Coverage[0].Mutating != 2 || len(rep.Coverage[0].Uncovered) != 1 {
		t.Errorf("the same shard twice counted twice: %+v", rep.Coverage)
	}
}

// BenchmarkRunCoverage merges the coverage of two run shards of an endpoint with 20000
// uncovered tools (BENCHMARKS.md): linear in the tools, not quadratic.
func BenchmarkRunCoverage(b *testing.B) {
	const tools = 20000
	shard := func() []result.Coverage {
		c := result.Coverage{Endpoint: "e", Mutating: tools}
		for i := range tools {
			c.Uncovered = append(c.Uncovered, result.Uncovered{Tool: fmt.Sprintf("tool_%05d", i)})
		}
		return []result.Coverage{c}
	}
	for b.Loop() {
		got := runCoverage([][]result.Coverage{shard(), shard()})
		if len(got[0].Uncovered) != tools {
			b.Fatalf("%d uncovered", len(got[0].Uncovered))
		}
	}
}
