package iostreams

import "testing"

func TestColorEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		tty  bool
		env  map[string]string
		flag bool
		want bool
	}{
		{"terminal", true, nil, false, true},
		{"pipe", false, nil, false, false},
		{"NO_COLOR on a terminal", true, map[string]string{"NO_COLOR": "1"}, false, false},
		{"--no-color", true, nil, true, false},
		{"CLICOLOR_FORCE in a pipe", false, map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{"NO_COLOR beats CLICOLOR_FORCE", false, map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := Test()
			s.OutTTY = tc.tty
			s.Getenv = func(k string) string { return tc.env[k] }
			if got := s.ColorEnabled(tc.flag); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDumbTerminal: TERM=dumb has no colour and no live line, both escape codes.
func TestDumbTerminal(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         map[string]string
		color, live bool
	}{
		{"a terminal", nil, true, true},
		{"TERM=dumb", map[string]string{"TERM": "dumb"}, false, false},
		{"TERM=dumb with CLICOLOR_FORCE", map[string]string{"TERM": "dumb", "CLICOLOR_FORCE": "1"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := Test()
			s.OutTTY, s.ErrTTY = true, true
			s.Getenv = func(k string) string { return tc.env[k] }
			if got := s.ColorEnabled(false); got != tc.color {
				t.Errorf("colour %v, want %v", got, tc.color)
			}
			if got := s.LiveErr(); got != tc.live {
				t.Errorf("live line %v, want %v", got, tc.live)
			}
		})
	}
}
