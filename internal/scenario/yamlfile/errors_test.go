package yamlfile

import (
	"strings"
	"testing"
)

// TestExcerpt checks that an error on a 100 KB line shows a window of it around the column, with
// the caret under the mistake.
func TestExcerpt(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	line, caret := excerpt("abc"+long+"def", len(long)+3)
	if r := []rune(line); len(r) > excerptWidth+2 || r[caret] != 'd' || !strings.HasPrefix(line, "…") {
		t.Errorf("excerpt %q caret %d", line, caret)
	}
	if line, caret := excerpt("short line", 6); line != "short line" || caret != 6 {
		t.Errorf("short excerpt %q %d", line, caret)
	}
}
