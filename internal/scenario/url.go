package scenario

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
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
		return fmt.Errorf("%q is not a valid URL: %w", raw, err)
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
