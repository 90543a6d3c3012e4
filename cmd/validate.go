package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idemtest/idemtest/internal/iostreams"
	"github.com/idemtest/idemtest/internal/plural"
	"github.com/idemtest/idemtest/internal/scenario"
	"github.com/idemtest/idemtest/internal/scenario/load"
)

// ValidateOptions are the inputs of idemtest validate.
type ValidateOptions struct {
	IO         *iostreams.IOStreams
	Paths      []string
	Config     string
	AllowHosts []string
	// LoadScenarios is the loader from the Factory (a fake in tests).
	LoadScenarios func(ctx context.Context, paths []string, opts load.Options) ([]*scenario.Scenario, error)
}

// NewCmdValidate builds idemtest validate: load, check and compile, and send nothing.
func NewCmdValidate(f *Factory, runF func(context.Context, *ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: f.IO, LoadScenarios: f.seams().LoadScenarios}
	c := &cobra.Command{
		Use:   "validate [paths...]",
		Short: "Check scenarios without sending anything",
		Example: `  idemtest validate                          # every scenario here and below
  idemtest validate scenarios/refunds.yaml
  idemtest validate --config ci/idemtest.yaml scenarios`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Paths = args
			if len(opts.Paths) == 0 {
				opts.Paths = []string{"."}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runValidate(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Config, "config", "", "config file (default: idemtest.yaml next to the scenarios or above)")
	c.Flags().StringSliceVar(&opts.AllowHosts, "allow-host", nil, "allow calls to this non-loopback host (repeatable)")
	return c
}

func runValidate(ctx context.Context, opts *ValidateOptions) error {
	list, err := opts.LoadScenarios(ctx, opts.Paths, load.Options{Config: opts.Config, AllowHosts: opts.AllowHosts})
	if ctx.Err() != nil {
		return silentExit(ExitInterrupted)
	}
	if err != nil {
		return err
	}
	files := map[string]bool{}
	steps := 0
	for _, s := range list {
		files[s.File] = true
		steps += len(s.Steps)
	}
	fmt.Fprintf(opts.IO.Out, "ok: %s, %s in %s\n", plural.Count(len(list), "scenario"), plural.Count(steps, "step"), plural.Count(len(files), "file"))
	return nil
}
