package plural_test

import (
	"testing"

	"github.com/idemtest/idemtest/internal/plural"
)

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		n    int
		noun string
		want string
	}{
		{"one", 1, "call", "1 call"},
		{"zero is plural", 0, "call", "0 calls"},
		{"many", 2, "trial", "2 trials"},
		{"minus one", -1, "trial", "-1 trial"},
		{"consonant y", 3, "copy", "3 copies"},
		{"vowel y", 2, "replay", "2 replays"},
		{"one copy", 1, "copy", "1 copy"},
		{"two words", 2, "duplicate execution", "2 duplicate executions"},
		{"two words, one", 1, "duplicate execution", "1 duplicate execution"},
		{"hyphen", 4, "fan-out", "4 fan-outs"},
		{"s", 2, "process", "2 processes"},
		{"x", 2, "box", "2 boxes"},
		{"ch", 2, "batch", "2 batches"},
		{"sh", 2, "crash", "2 crashes"},
		{"problem", 1, "problem", "1 problem"},
		{"problems", 2, "problem", "2 problems"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plural.Count(tt.n, tt.noun); got != tt.want {
				t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
			}
		})
	}
}

func TestNounFraction(t *testing.T) {
	for _, tt := range []struct {
		total int
		want  string
	}{{1, "trial"}, {2, "trials"}, {0, "trials"}} {
		if got := plural.Noun(tt.total, "trial"); got != tt.want {
			t.Errorf("Noun(%d, trial) = %q, want %q", tt.total, got, tt.want)
		}
	}
}
