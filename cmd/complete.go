package cmd

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/scenario/load"
)

// completeEndpoints completes --endpoint with the endpoints of the config the command would
// use (--config, else idemtest.yaml here or above). A config that does not load completes
// nothing: completion must never print an error into the shell.
func completeEndpoints(config *string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		sc, err := load.Config(context.Background(), ".", load.Options{Config: *config})
		if err != nil || sc == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for name := range sc.Endpoints {
			if strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTags completes run's --tag with the tags of the scenarios the run would load (its
// paths, default .); files that do not load are left out.
func completeTags(config *string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			args = []string{"."}
		}
		list, _ := load.Scenarios(context.Background(), args, load.Options{Config: *config})
		var tags []string
		for _, sc := range list {
			for _, t := range sc.Tags {
				if strings.HasPrefix(t, prefix) && !slices.Contains(tags, t) {
					tags = append(tags, t)
				}
			}
		}
		slices.Sort(tags)
		return tags, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeValues completes a flag that takes one of values, or (list) a comma-separated list
// of them: after "replay,con" it offers "replay,concurrent", leaving out the values already
// listed. No file names.
func completeValues(values []string, list bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		head, last := "", prefix
		if i := strings.LastIndex(prefix, ","); list && i >= 0 {
			head, last = prefix[:i+1], prefix[i+1:]
		}
		given := strings.Split(head, ",")
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, last) && !slices.Contains(given, v) {
				out = append(out, head+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
