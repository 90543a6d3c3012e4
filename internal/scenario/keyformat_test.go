package scenario

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestKeyFormats(t *testing.T) {
	tests := []struct {
		name, format string
		length       int
		want         string
	}{
		{"uuid v4", "uuid", 0, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`},
		{"uuid v7", "uuidv7", 0, `^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`},
		{"ulid", "ulid", 0, `^[0-7][0-9A-HJKMNP-TV-Z]{25}$`},
		{"template with length", "ik_{random}", 32, `^ik_[a-z0-9]{29}$`},
		{"template with session and index", "{session}.{index}.{random}", 0, `^s1\.3\.[a-z0-9]{16}$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseKeyFormat(tt.format, tt.length)
			if err != nil {
				t.Fatal(err)
			}
			a, b := f.Key("s1", 3), f.Key("s1", 3)
			if !regexp.MustCompile(tt.want).MatchString(a) {
				t.Errorf("key %q does not match %s", a, tt.want)
			}
			if a == b {
				t.Errorf("two keys are equal: %q", a)
			}
		})
	}
	for _, bad := range []struct {
		format string
		length int
	}{{"uuid4", 0}, {"uuid", 36}, {"{session}", 0}, {"k_{index}", 20}, {"{nope}{random}", 0}, {"{random}", 300}, {"{ran{index}dom}", 0}, {"{rand}om}{index}", 0}} {
		if _, err := ParseKeyFormat(bad.format, bad.length); err == nil {
			t.Errorf("ParseKeyFormat(%q, %d) accepted", bad.format, bad.length)
		}
	}
}

// TestKeyTemplateManyHoles fills every {random} of a template that has thousands of them, each
// with its share of the length, and leaves no placeholder behind.
func TestKeyTemplateManyHoles(t *testing.T) {
	f, err := ParseKeyFormat(strings.Repeat("{random}-", 100)+"{index}", 255)
	if err != nil {
		t.Fatal(err)
	}
	k := f.Key("s", 7)
	if len(k) != 255 || strings.Contains(k, "{") || !strings.Contains(k, "-7") {
		t.Errorf("key %q (%d characters)", k, len(k))
	}
	f, err = ParseKeyFormat(strings.Repeat("{random}", 5000), 0)
	if err != nil {
		t.Fatal(err)
	}
	if k := f.Key("s", 1); len(k) != 5000*16 || strings.Contains(k, "{") {
		t.Errorf("5000 holes gave %d characters", len(k))
	}
}

// BenchmarkKeyTemplateHoles shows that a key costs time linear in its template's placeholders.
func BenchmarkKeyTemplateHoles(b *testing.B) {
	for _, holes := range []int{1_000, 10_000} {
		f, err := ParseKeyFormat(strings.Repeat("{random}", holes), 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(holes), func(b *testing.B) {
			for b.Loop() {
				f.Key("s", 1)
			}
		})
	}
}
