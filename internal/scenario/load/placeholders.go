package load

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/yamlfile"
)

// placeholders reports every placeholder idemtest init wrote (scenario.Placeholder) that is
// still in the arguments of a call (steps of either form, probes, check.tools): a step sending
// one would be refused by the server, and a step that expects a refusal (key reuse) would pass
// on it, proving nothing. Each is an error at its position, so that the file does not load.
func placeholders(f *yamlfile.File, root *yaml.Node) {
	if root == nil {
		return
	}
	// The walk is iterative: the document is already parsed and bounded, and a deep one
	// must not exhaust the stack.
	stack := []*yaml.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "args" {
					argPlaceholders(f, n.Content[i+1], toolOf(n))
				}
			}
		}
		for i := len(n.Content) - 1; i >= 0; i-- {
			stack = append(stack, n.Content[i])
		}
	}
}

// toolOf names the tool a mapping with args: calls, for the message.
func toolOf(m *yaml.Node) string {
	for _, k := range []string{"call_tool", "tool", "retry_of"} {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == k && m.Content[i+1].Kind == yaml.ScalarNode {
				if k == "retry_of" {
					return "the retry of " + m.Content[i+1].Value
				}
				return m.Content[i+1].Value
			}
		}
	}
	return "the call"
}

// argPlaceholders reports the placeholders in one args: value, each with its argument's path.
func argPlaceholders(f *yamlfile.File, args *yaml.Node, tool string) {
	type item struct {
		n    *yaml.Node
		path string
	}
	stack := []item{{args, ""}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch it.n.Kind {
		case yaml.ScalarNode:
			if scenario.IsPlaceholder(it.n.Value) {
				what := "the arguments"
				if it.path != "" {
					what = "argument " + it.path
				}
				f.Errf(it.n, fmt.Sprintf("replace %s with a value the server accepts", strconv.Quote(it.n.Value)),
					"fill in TODO: %s of %s", what, tool)
			}
		case yaml.MappingNode:
			for i := len(it.n.Content) - 2; i >= 0; i -= 2 {
				k, v := it.n.Content[i], it.n.Content[i+1]
				if scenario.IsPlaceholder(k.Value) {
					f.Errf(k, "replace "+strconv.Quote(k.Value)+": … with the tool's arguments, as name: value lines",
						"fill in TODO: the arguments of %s", tool)
					continue
				}
				p := k.Value
				if it.path != "" {
					p = it.path + "." + k.Value
				}
				stack = append(stack, item{v, p})
			}
		case yaml.SequenceNode:
			for i := len(it.n.Content) - 1; i >= 0; i-- {
				stack = append(stack, item{it.n.Content[i], fmt.Sprintf("%s[%d]", it.path, i)})
			}
		case yaml.AliasNode:
			// An alias repeats what its anchor holds, which is reported where it is written.
		}
	}
}
