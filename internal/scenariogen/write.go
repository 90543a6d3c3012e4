package scenariogen

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/safefile"
)

// Write saves the scenarios the battery ran as ordinary scenario files under dir, one per tool
// and check, through safefile (o says whether existing files may be replaced), and returns their
// paths. endpoints, when set, is written into every file (for an endpoint given on the command
// line, which no config defines).
func Write(dir string, specs []*Spec, endpoints map[string]any, o safefile.Options) ([]string, error) {
	files := make([]safefile.File, 0, len(specs))
	for _, s := range specs {
		b, err := Marshal(s, endpoints)
		if err != nil {
			return nil, err
		}
		files = append(files, safefile.File{Name: s.Tool + "." + s.Check, Ext: ".yaml", Data: b})
	}
	paths, err := safefile.Write(dir, files, o)
	if err != nil {
		return paths, fmt.Errorf("write scenarios: %w", err)
	}
	return paths, nil
}

// Marshal renders a spec as a scenario file.
func Marshal(s *Spec, endpoints map[string]any) ([]byte, error) {
	doc := struct {
		*Spec     `yaml:",inline"`
		Endpoints map[string]any `yaml:"endpoints,omitempty"`
	}{s, endpoints}
	var buf bytes.Buffer
	by := s.By
	if by == "" {
		by = "idemtest check"
	}
	fmt.Fprintf(&buf, "# Written by %s (%s, check %s).\n", by, s.Tool, s.Check)
	for _, l := range wrap(s.Comment, 95) {
		fmt.Fprintf(&buf, "# %s\n", l)
	}
	// One line per scalar, however long: a wrapped expression is still valid YAML, but a reader
	// (or a grep in a review) looks for an assertion on the line where it is written.
	enc, err := yaml.NewDumper(&buf, yaml.WithV3Defaults(), yaml.WithIndent(2), yaml.WithLineWidth(-1))
	if err != nil {
		return nil, fmt.Errorf("write scenario %s: %w", s.File(), err)
	}
	if err := enc.Dump(doc); err != nil {
		return nil, fmt.Errorf("write scenario %s: %w", s.File(), err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func wrap(s string, width int) []string {
	var out []string
	var line string
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}
