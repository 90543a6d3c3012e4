package reporters

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	long := "refunds_" + strings.Repeat("é", 300) + "_create"
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"issue_refund", 48, "issue_refund"},
		{strings.Repeat("a", 48), 48, strings.Repeat("a", 48)},
		{strings.Repeat("a", 49), 48, strings.Repeat("a", 32) + "…" + strings.Repeat("a", 15)},
		{long, 20, "refunds_ééééé…create"},
	} {
		got := Clip(tc.in, tc.max)
		if got != tc.want || utf8.RuneCountInString(got) > tc.max {
			t.Errorf("Clip(%.20q…, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
