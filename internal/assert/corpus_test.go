package assert

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// world is a recorded trial: what the runner hands expressions (testdata/world.json).
type world struct {
	Session string                    `json:"session"`
	Trial   int                       `json:"trial"`
	Calls   map[string]CallResult     `json:"calls"`
	Fanouts map[string]FanoutResult   `json:"fanouts"`
	Sinks   map[string]map[string]any `json:"sinks"`
	Probes  map[string]any            `json:"probes"`
}

func loadWorld(t *testing.T) world {
	t.Helper()
	b, err := os.ReadFile("testdata/world.json")
	if err != nil {
		t.Fatal(err)
	}
	var w world
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// decl declares the world's names as the scenario loader does (decode's stepEnv): call and
// fan-out results typed, sinks maps, probes dynamic.
func (w world) decl() Env {
	env := Env{"session": "", "trial": 0}
	for name := range w.Calls {
		env[name] = CallResult{}
	}
	for name := range w.Fanouts {
		env[name] = FanoutResult{}
	}
	for name := range w.Sinks {
		env[name] = map[string]any{}
	}
	for name := range w.Probes {
		env[name] = Dynamic
	}
	return env
}

// values is the world as the runner fills the environment.
func (w world) values() map[string]any {
	env := map[string]any{"session": w.Session, "trial": w.Trial}
	for name, v := range w.Calls {
		env[name] = v
	}
	for name, v := range w.Fanouts {
		env[name] = v
	}
	for name, v := range w.Sinks {
		env[name] = v
	}
	for name, v := range w.Probes {
		env[name] = v
	}
	return env
}

const (
	refundA = "re_2d1e15458fe789bb" // first's refund
	refundB = "re_7c0a9e3b51d24f68" // the burst's
)

// corpus is every expression idiom over every kind of value an expression can name, with its
// value on the recorded world; the expressions of README.md, docs/ and examples/ must be among them
// (TestCorpusCoversExamples).
var corpus = []struct {
	src  string
	want any
}{
	// The first match of a fan-out: the idiom expr's optimizer broke.
	{`filter(burst.calls, .ok)[0].result.refundId`, refundB},
	{`filter(burst.calls, .ok)[0].result.id`, nil},
	{`filter(burst.calls, .ok)[0].result.refundId != ""`, true},
	{`filter(burst.calls, .conflict)[0].status`, 409},
	{`filter(burst.calls, .ok)[-1].replayed`, true},
	{`first(filter(burst.calls, .ok)).result.refundId`, refundB},
	{`last(filter(burst.calls, .ok)).duration_ms`, 5.3},
	{`filter(burst.calls, .ok)[0].result.amount * 2`, 20},
	{`let won = filter(burst.calls, .ok); won[0].key == won[1].key`, true},
	// Indexing and slicing.
	{`burst.calls[1].released_us`, 35},
	{`burst.calls[3].released_us`, nil},
	{`burst.calls[-1].answered_us == nil`, true},
	{`len(burst.calls[1:3])`, 2},
	{`burst.calls[1:3][1].status`, 409},
	{`burst.calls[:1][0].offset_us`, 0},
	{`listed.result.refunds[0].amount`, 49.99},
	{`ledger.refunds[0].idempotencyKey`, "9f2c4e1a7b3d-0"},
	// Builtins over copies.
	{`map(burst.calls, .status)`, []any{200, 200, 409, 200}},
	{`all(burst.calls, .key == burst.key)`, true},
	{`any(burst.calls, .conflict)`, true},
	{`none(burst.calls, .status >= 500)`, true},
	{`count(burst.calls, .replayed)`, 2},
	{`count(burst.calls, #.status == 200 && !#.replayed)`, 1},
	{`uniq(map(burst.calls, .status))`, []any{200, 409}},
	{`sum(map(burst.calls, .status))`, 1009},
	{`sum(map(filter(burst.calls, .ok), .result.amount))`, 30},
	{`burst.calls.count({status: 200})`, 3},
	{`first(burst.calls).key`, "9f2c4e1a7b3d-2"},
	{`last(burst.calls).replayed`, true},
	// Fan-out counts.
	{`burst.ok + burst.fail + burst.info`, 4},
	{`burst.spread_us <= 100 && burst.overlapped && burst.fanout == 4`, true},
	// Optional chaining and nil coalescing.
	{`burst.calls[0]?.result?.refundId`, refundB},
	{`nokey.result?.missing?.deeper`, nil},
	{`listed.result.refunds[0].nope ?? "none"`, "none"},
	{`first.headers["Idempotent-Replayed"] ?? "absent"`, ""},
	{`retry.headers["Idempotent-Replayed"] == "true"`, true},
	// Calls: typed fields, nested result fields, numbers and strings.
	{`first.status in [200, 201] && first.outcome == "ok"`, true},
	{`first.duration_ms < 10`, true},
	{`first.result.amount == 49.99 && first.result.currency == "USD"`, true},
	{`"acct_" + session == first.result.accountId`, true},
	{`reuse.result.code == "idempotency_key_mismatch"`, true},
	{`reuse.error contains "different payload"`, true},
	{`nokey.status >= 400 && nokey.status < 500 && !nokey.ok`, true},
	{`lost.outcome == "info" && lost.lost`, true},
	{`again.attempts`, 3},
	{`len(first.result)`, 5},
	// Sinks and probes.
	{`len(payment_processor.requests)`, 1},
	{`payment_processor.refunds[0].headers["Idempotency-Key"] == burst.key`, true},
	{`payment_processor.url matches "^http://127.0.0.1:"`, true},
	{`payment_processor.refunds[0].body.amount`, 10},
	{`ledger.refunds[0].createdAt startsWith "2026-"`, true},
	{`rows[0].n == 1`, true},
	{`refund_rows[0].n`, 1},
	{`len(trial_refunds.refunds) > 0`, true},
	// Session and trial.
	{`session + "-0" == first.key`, true},
	{`trial == 0`, true},

	// README.md, docs/ and examples/ (collected; see TestCorpusCoversExamples).
	{`retry.ok && retry.replayed && retry.result.refundId != ""`, true},
	{`count(burst.calls, .ok) >= 1 && len(uniq(map(filter(burst.calls, .ok), .result.refundId))) == 1`, true},
	{`len(listed.result.refunds) == 0`, false},
	{`len(listed.result.refunds) == 1`, true},
	{`len(listed.result.refunds) == 2`, false},
	{`nokey.status == 400`, true},
	{`payment_processor.refunds.count({ accountId: "acct_test_" + session }) === 1`, false},
	{`payment_processor.refunds.count({accountId: "acct_" + session}) == 1`, true},
	{`all(payment_processor.refunds, .key == burst.key)`, true},
	{`ledger.refunds.count({accountId: "acct_" + session}) == 1`, true},
	{`a.key != b.key && a.result.refundId != b.result.refundId`, true},
	{`retry.ok && retry.replayed`, true},
	{`len(uniq(map(filter(burst.calls, .ok), .result.refundId))) == 1`, true},
	{`reuse.status == 422 && !reuse.replayed`, true},
	{`len(listed.result.refunds) == 1 && listed.result.refunds[0].amount == 49.99`, true},
	{`again.ok`, true},
	{`retry.result.refundId == first.result.refundId`, true},
	{`count(burst.calls, .ok) >= 1`, true},
	{`burst.ok + burst.conflict == 16`, false},
	{`after.ok && after.replayed`, true},
	{`retry.ok && retry.replayed && retry.result.refundId == first.result.refundId`, true},
	{`len(trial_refunds.refunds)`, 1},
	{`len(refunds.refunds)`, 1},
	{`burst.ok >= 1 && burst.ok + burst.conflict == 8`, false},
	{`len(listed.result.refunds) == 1 && listed.key == ""`, true},
	{`nokey.result.code == "idempotency_key_missing"`, true},
	{`session`, "9f2c4e1a7b3d"},
	{`first.key`, "9f2c4e1a7b3d-0"},
	// examples/replicas
	{`retry.ok`, true},
	{`burst.ok >= 1`, true},
	{`payment_processor.refunds.count({key: first.key}) == 1`, false}, // the recorded refund is the burst's
	{`payment_processor.refunds.count({key: burst.key}) == 1`, true},
	{`payment_processor.refunds.count({accountId: "acct_" + session})`, 1},
}

// TestCorpus compiles every corpus expression against the environment the loader declares and
// evaluates it on the recorded world.
func TestCorpus(t *testing.T) {
	w := loadWorld(t)
	decl, env := w.decl(), w.values()
	seen := map[string]bool{}
	for _, tc := range corpus {
		if seen[tc.src] {
			t.Errorf("%s is twice in the corpus", tc.src)
		}
		seen[tc.src] = true
		t.Run(tc.src, func(t *testing.T) {
			p, err := Compile(tc.src, decl)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := p.Run(env)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			// Compared as JSON: 3 and 3.0 are one number, as they are to expressions.
			if g, want := canonical(t, got), canonical(t, tc.want); g != want {
				t.Errorf("got %s, want %s", g, want)
			}
		})
	}
}

func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return string(b)
}

// TestCorpusCoversExamples collects the expressions of the YAML blocks of README.md and docs/*.md
// and of every YAML file under examples/ (assertions, seed-form checks, {{ }} templates in steps,
// check effects), and requires each to be in the corpus, so a new example is compiled and evaluated here too.
func TestCorpusCoversExamples(t *testing.T) {
	root := filepath.Join("..", "..")
	found := map[string]string{} // expression -> where
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, e := range expressions(t, path, string(b)) {
			found[e] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	for _, f := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		for _, b := range yamlBlock.FindAllStringSubmatch(string(text), -1) {
			blocks = append(blocks, b)
			for _, e := range expressions(t, name, b[1]) {
				found[e] = name
			}
		}
	}
	if len(found) < 20 || len(blocks) == 0 {
		t.Fatalf("collected %d expressions from %d blocks of README.md and docs/: the walk is broken", len(found), len(blocks))
	}
	in := map[string]bool{}
	for _, tc := range corpus {
		in[tc.src] = true
	}
	for _, e := range slices.Sorted(func(yield func(string) bool) {
		for e := range found {
			if !yield(e) {
				return
			}
		}
	}) {
		if !in[e] {
			t.Errorf("%s: expression %q is not in the corpus: add it with its value on testdata/world.json", found[e], e)
		}
	}
}

var (
	yamlBlock = regexp.MustCompile("(?s)```ya?ml\n(.*?)```")
	template  = regexp.MustCompile(`\{\{(.*?)\}\}`)
)

// expressions lists the expressions of a scenario or config document: the assert and check of
// steps, {{ }} templates inside steps, and check.tools.*.effects. Config templates outside steps
// ({{ port }}, {{ services.x.port }}) have an environment of their own and are left out.
func expressions(t *testing.T, where, doc string) []string {
	var root any
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		// README blocks that are output, not YAML, are skipped; examples/ must parse.
		if strings.HasPrefix(where, "README") {
			return nil
		}
		t.Fatalf("%s: %v", where, err)
	}
	top, _ := root.(map[string]any)
	var out []string
	steps, _ := top["steps"].([]any)
	for _, s := range steps {
		step, _ := s.(map[string]any)
		for _, k := range []string{"assert", "check"} {
			if src, ok := step[k].(string); ok {
				out = append(out, src)
			}
		}
		walkStrings(step, func(s string) {
			for _, m := range template.FindAllStringSubmatch(s, -1) {
				out = append(out, strings.TrimSpace(m[1]))
			}
		})
	}
	check, _ := top["check"].(map[string]any)
	tools, _ := check["tools"].(map[string]any)
	for _, tool := range tools {
		if m, ok := tool.(map[string]any); ok {
			if src, ok := m["effects"].(string); ok {
				out = append(out, src)
			}
		}
	}
	return out
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case map[string]any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}
