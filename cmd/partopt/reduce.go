package main

import (
	"fmt"

	"github.com/partopt/partopt/job"
	"github.com/spf13/cobra"
)

func newReduceCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "reduce MODEL DIR -o OUT.uai",
		Short: "Write the problem that a label elimination leaves, for any solver",
		Long: `Read DIR/domains.txt, written by "partopt solve MODEL -o DIR --method iri" (or
pbp+iri), and write MODEL with every eliminated label forbidden — the observed
variables of MODEL.evid at their evidence labels — to OUT as UAI (.uai,
optionally .gz: a forbidden label has probability 0). An optimum of OUT is an
optimum of MODEL with its evidence, so "toulbar2 OUT" finds the same optimum
on a smaller search space. LG cannot hold a forbidden label and is refused.

DIR and its domains.txt are checked before MODEL is read; a .grid MODEL past
memory is refused (reduce reads and writes it whole).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := job.Reduce(args[0], args[1], out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d variables, %d factors\n", out, m.NumVars(), m.NumFactors())
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the reduced model, .uai or .uai.gz (required)")
	cmd.MarkFlagRequired("output")
	return cmd
}
