package yamlfile

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/redact"
)

// expandEnv replaces ${VAR}, ${VAR:-default} and ${VAR:?message} in every scalar of the tree,
// once, at load time, as a POSIX shell does: ${VAR} is VAR's value, empty included (an unset
// VAR is an error); ${VAR:-default} is the default when VAR is unset or empty, and the default
// may itself hold ${...}; ${VAR:?message} is an error when VAR is unset or empty.
//
// The secrets the file holds are recorded in f.Secrets (see redact): the value of every
// variable whose name says it is one (${API_TOKEN}, shown as ${API_TOKEN}), the passwords of
// URLs and DSNs, the values of credential headers (Authorization, X-Api-Key, …) and of process
// environment entries whose names say so. An ordinary value (${REGION}) is not a secret
// wherever it is written: hiding it would rewrite the names and answers it also occurs in.
func (f *File) expandEnv(n *yaml.Node, lookup func(string) (string, bool)) {
	f.expandNode(n, lookup, scalarUse{})
}

// scalarUse is what a scalar is to the secrets: a URL or DSN (dsn), or the value of the header
// or environment variable named name.
type scalarUse struct {
	dsn    bool
	header bool
	env    bool
	name   string
}

// dsnKeys are the fields whose scalar value is a URL or DSN; the values of the mappings under
// headers: are header values, those under env: a process's environment, those under urls: URLs.
var dsnKeys = map[string]bool{"url": true, "dsn": true, "http": true}

func (f *File) expandNode(n *yaml.Node, lookup func(string) (string, bool), use scalarUse) {
	switch n.Kind {
	case yaml.ScalarNode:
		f.expandScalar(n, lookup, use)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f.expandNode(k, lookup, scalarUse{})
			var child scalarUse
			switch {
			case use.header || use.env:
				// A mapping as a header's or variable's value: not one of either.
			case k.Value == "headers" && v.Kind == yaml.MappingNode:
				f.expandEntries(v, lookup, scalarUse{header: true})
				continue
			case k.Value == "env" && v.Kind == yaml.MappingNode:
				f.expandEntries(v, lookup, scalarUse{env: true})
				continue
			case k.Value == "urls" || dsnKeys[k.Value] && v.Kind == yaml.ScalarNode:
				child.dsn = true
			}
			f.expandNode(v, lookup, child)
		}
	default:
		for _, c := range n.Content {
			f.expandNode(c, lookup, use)
		}
	}
}

// expandEntries expands a headers: or env: mapping, each value used as the entry its key names.
func (f *File) expandEntries(n *yaml.Node, lookup func(string) (string, bool), use scalarUse) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f.expandNode(k, lookup, scalarUse{})
		use.name = k.Value
		f.expandNode(v, lookup, use)
	}
}

func (f *File) expandScalar(n *yaml.Node, lookup func(string) (string, bool), use scalarUse) {
	if strings.Contains(n.Value, "${") {
		val := n.Value
		n.Value = f.expandString(n, val, 0, lookup)
		if n.Value != val && n.Tag != "!!str" {
			// Let the expanded text resolve as YAML would have (a number stays a number).
			var v yaml.Node
			if yaml.Unmarshal([]byte(n.Value), &v) == nil && len(v.Content) == 1 && v.Content[0].Kind == yaml.ScalarNode {
				n.Tag = v.Content[0].Tag
			}
		}
	}
	f.Secrets.AddURL(n.Value)
	switch {
	case use.dsn:
		f.Secrets.AddDSN(n.Value)
	case use.header && redact.CredentialHeader(use.name) && !strings.Contains(n.Value, "{{"):
		// A templated value is computed per call; its written text is no secret.
		f.Secrets.AddHeader(use.name, n.Value)
	case use.env && redact.SensitiveName(use.name):
		f.Secrets.Add(n.Value, "${"+use.name+"}")
	case use.env:
		f.Secrets.AddDSN(n.Value)
	}
}

// expandString expands s, found at byte base of n's value.
func (f *File) expandString(n *yaml.Node, s string, base int, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		ref, ok := parseRef(s[i:])
		if !ok {
			// Not a reference (${1}, ${A-b}, an unclosed ${): kept as written.
			b.WriteString("${")
			s, base = s[i+2:], base+i+2
			continue
		}
		at := f.OffsetPos(n, base+i)
		v, set := lookup(ref.name)
		switch {
		case set && (v != "" || ref.op == ""):
			if redact.SensitiveName(ref.name) {
				f.Secrets.Add(v, "${"+ref.name+"}")
			}
			if v == "" {
				// Allowed, as in a shell; a value this leaves invalid says why.
				if f.emptyVars == nil {
					f.emptyVars = map[*yaml.Node][]string{}
				}
				f.emptyVars[n] = append(f.emptyVars[n], ref.name)
			}
			b.WriteString(v)
		case ref.op == ":-":
			b.WriteString(f.expandString(n, ref.arg, base+i+ref.argOff, lookup))
		case ref.op == ":?":
			msg := "environment variable %s is not set"
			if set {
				msg = "environment variable %s is set but empty"
			}
			if ref.arg != "" {
				msg += ": " + strings.ReplaceAll(ref.arg, "%", "%%")
			}
			f.ErrAt(at, fmt.Sprintf("set %s to a value in the environment", ref.name), msg, ref.name)
		default:
			f.ErrAt(at, fmt.Sprintf("set %s in the environment, or give a default: ${%s:-value}", ref.name, ref.name),
				"environment variable %s is not set", ref.name)
			b.WriteString(s[i : i+ref.end])
		}
		s, base = s[i+ref.end:], base+i+ref.end
	}
}

// envRef is one ${...} reference.
type envRef struct {
	name string
	// op is "", ":-" or ":?"; arg what follows it, starting at byte argOff of the reference.
	op     string
	arg    string
	argOff int
	// end is the length of the reference.
	end int
}

// parseRef parses the reference at the start of s ("${NAME}", "${NAME:-default}",
// "${NAME:?message}"); the default may hold nested references.
func parseRef(s string) (envRef, bool) {
	j := 2
	for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || j > 2 && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	if j == 2 || j >= len(s) {
		return envRef{}, false
	}
	r := envRef{name: s[2:j]}
	if s[j] == '}' {
		r.end = j + 1
		return r, true
	}
	if !strings.HasPrefix(s[j:], ":-") && !strings.HasPrefix(s[j:], ":?") {
		return envRef{}, false
	}
	r.op, r.argOff = s[j:j+2], j+2
	depth := 1
	for k := j + 2; k < len(s); k++ {
		switch {
		case strings.HasPrefix(s[k:], "${"):
			depth++
			k++
		case s[k] == '}':
			if depth--; depth == 0 {
				r.arg, r.end = s[r.argOff:k], k+1
				return r, true
			}
		}
	}
	return envRef{}, false
}

// ExpandArg expands the ${VAR}, ${VAR:-default} and ${VAR:?message} references of one
// command-line argument as a scenario file's are, for commands that take no file (the proxy's
// server command and upstream URL). The value of every variable whose name says it is a secret
// is recorded in secrets, shown as ${VAR}, and so is the password of a URL or DSN in the result.
// An unset variable is an error that names it.
func ExpandArg(arg string, lookup func(string) (string, bool), secrets *redact.Secrets) (string, error) {
	f := &File{}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: arg}
	out := f.expandString(n, arg, 0, lookup)
	if len(f.Errs) > 0 {
		e := f.Errs[0]
		return arg, fmt.Errorf("%q: %s (%s)", arg, e.Msg, e.Hint)
	}
	secrets.Merge(&f.Secrets)
	secrets.AddDSN(out)
	return out, nil
}

// AddSecretVars records the values of the environment variables named by the list n (a
// secrets: key), shown as ${NAME}, wherever they appear: a variable the config marks secret
// whose name does not say so. An unset variable has nothing to hide; a name that cannot be a
// variable's is an error.
func (f *File) AddSecretVars(n *yaml.Node) {
	for _, c := range n.Content {
		name := f.Str(c, "secrets entry")
		if ref, ok := parseRef("${" + name + "}"); !ok || ref.name != name {
			f.Errf(c, "secrets lists the names of environment variables, such as STRIPE_KEY (without ${})",
				"secrets entry %q is not an environment variable name", name)
			continue
		}
		if f.lookupEnv == nil {
			continue
		}
		if v, ok := f.lookupEnv(name); ok {
			f.Secrets.Add(v, "${"+name+"}")
		}
	}
	if n.Kind != yaml.SequenceNode {
		f.Errf(n, "secrets: [STRIPE_KEY, PARTNER_ID]", "secrets must be a list of environment variable names, got %s", KindName(n))
	}
}
