//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemtest/idemtest/internal/testenv"
)

// corpusPackages are the real idempotency libraries (and what their glue servers need) that
// testdata/script/corpus_*.txtar run idemtest against, at the versions docs/real-software.md's "Tested
// against real software" table names. .ci/run installs exactly these.
var corpusPackages = map[string]string{
	"express":                                  "5.3.0",
	"express-idempotency":                      "1.0.6",
	"express-idempotency-redis-adapter":        "1.0.8",
	"@node-idempotency/core":                   "1.0.11",
	"@node-idempotency/storage-adapter-memory": "1.0.2",
	"@node-idempotency/storage-adapter-redis":  "1.0.2",
	"@aws-lambda-powertools/idempotency":       "2.35.0",
	"@redis/client":                            "6.4.0",
}

// TestCorpusPackagesInstalled makes CI fail, rather than skip the corpus scripts, when a corpus
// library is missing from .cache/npm or is not the pinned version (a newer release could fix or
// break the behaviour a script asserts), and checks that .ci/run pins each one.
func TestCorpusPackagesInstalled(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, f := range strings.Fields(string(ci)) {
		pinned[strings.TrimSuffix(f, ";")] = true
	}
	for pkg, version := range corpusPackages {
		if !pinned[pkg+"@"+version] {
			t.Errorf(".ci/run does not install %s@%s", pkg, version)
		}
	}
	for pkg, version := range corpusPackages {
		b, err := os.ReadFile(filepath.Join(".cache", "npm", "node_modules", pkg, "package.json"))
		if err != nil {
			testenv.Unmet(t, "the corpus library "+pkg+" is not installed; run: npm install --prefix .cache/npm "+pkg+"@"+version)
			continue
		}
		var meta struct{ Version string }
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s/package.json: %v", pkg, err)
		}
		if meta.Version != version {
			testenv.Unmet(t, "the corpus library "+pkg+" is "+meta.Version+", not the pinned "+version+"; run: npm install --prefix .cache/npm "+pkg+"@"+version)
		}
	}
}
