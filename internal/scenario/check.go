package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemtest/idemtest/internal/assert"
)

// CheckConfig is the config's check: section, what idemtest check needs beyond the endpoint:
// arguments for tools whose input schema does not say enough (or that publish none, as plain
// HTTP tools do), and the missing-key policy.
type CheckConfig struct {
	Pos Pos
	// MissingKey is the policy for a mutating call without a key: "reject" (4xx expected,
	// the default) or "accept" (reported, not judged).
	MissingKey string
	// Tools holds per-tool settings by tool name; for a plain HTTP endpoint they also name the
	// tools to check.
	Tools map[string]*CheckTool
	// Key, when set, is the shape of the keys check makes (check.key), for the endpoint checked;
	// KeyPos is where it was written.
	Key    *KeyFormat
	KeyPos Pos
	// KeyTTL is how long keys must be remembered (key_ttl): the expiry check retries after it.
	// 0: the expiry check is skipped.
	KeyTTL time.Duration
	// Snapshot lists the read-only calls whose answers are the server's state, read before and
	// after each retry; when set they replace the read-only tools found by listing.
	Snapshot []*CheckSnapshot
}

// AuditConfig is the config's audit: section: idemtest audit's mapping of spans to calls and
// its thresholds; its flags override each.
type AuditConfig struct {
	Pos                                          Pos
	KeyArgs, KeyAttrs, SessionAttrs, ReplayAttrs []string
	ExecutionSpan                                string
	TTL, Window                                  time.Duration
	// MaxHitRate and MaxConflictRate are fractions; -1 is off; Set says which were written.
	MaxHitRate, MaxConflictRate       float64
	MaxHitRateSet, MaxConflictRateSet bool
	Mutating                          []string
	// Natural names tools idempotent by nature: executed twice under one key, they are no
	// double execution.
	Natural []string
}

// ParseRate reads a threshold: "5%", "0.05", or "off" (-1).
func ParseRate(s string) (float64, error) {
	if s == "off" {
		return -1, nil
	}
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || v < 0 || v > 1 || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is no rate: want 5%%, 0.05 or off", s)
	}
	return v, nil
}

// CoverageConfig is the config's coverage: section: the mutating tools --require-coverage does
// not ask a scenario or check for, each with its reason (by tool name, on every endpoint).
type CoverageConfig struct {
	Pos    Pos
	Exempt map[string]string
}

// CheckSnapshot is one read-only call under check.snapshot.
type CheckSnapshot struct {
	// Pos is where the tool is named.
	Pos  Pos
	Tool string
	// Args are the call's arguments: plain values, strings with {{ }} are *assert.Template.
	Args any
}

// CheckTool is one tool's entry under check.tools.
type CheckTool struct {
	Name string
	Pos  Pos
	// Args replaces the arguments synthesised from the input schema: plain values, strings with
	// {{ }} are *assert.Template ({{ session }} makes a value unique per trial).
	Args any
	// Skip, when set, leaves the tool out of the battery with this reason.
	Skip string
	// Effects counts the side effects of this trial's calls of the tool: an expression over the
	// probes and sinks (and session, trial), compiled when the config loads. EffectsPos is
	// where it was written.
	Effects    *assert.Program
	EffectsPos Pos
}

// CheckEnv is what templates in check.tools args may use.
func CheckEnv() assert.Env { return assert.Env{"session": "", "trial": 0} }
