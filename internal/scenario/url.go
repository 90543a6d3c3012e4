package scenario

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

var templatePart = regexp.MustCompile(`\{\{.*?\}\}`)

// CheckURL reports a URL that idemtest could not send to: one that does not parse, whose scheme
// is not http or https, or that has no host. {{ }} parts and {tool} are stood in for, so a
// templated URL is checked as far as it is written; one that starts with {{ }} is only parsed.
func CheckURL(raw string) error {
	u := templatePart.ReplaceAllString(strings.ReplaceAll(raw, "{tool}", "tool"), "0")
	p, err := url.Parse(u)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q is not a valid URL: %v", raw, err)
	}
	if strings.HasPrefix(strings.TrimSpace(raw), "{{") {
		return nil
	}
	switch {
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("%q is not an http:// or https:// URL", raw)
	case p.Host == "":
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

// checkURL reports a URL field that CheckURL refuses, at its position.
func (f *file) checkURL(n *yaml.Node, what string) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	if err := CheckURL(n.Value); err != nil {
		hint := "write a full URL such as http://127.0.0.1:8080/tools/{tool}"
		if empty := f.emptyVars[n]; len(empty) == 1 {
			hint = fmt.Sprintf("%s is set but empty in the environment; %s", empty[0], hint)
		} else if len(empty) > 1 {
			hint = fmt.Sprintf("%s are set but empty in the environment; %s", strings.Join(empty, ", "), hint)
		}
		f.errf(n, hint, "%s: %v", what, err)
	}
}
