package main

import (
	"fmt"

	"github.com/partopt/partopt/job"
	"github.com/spf13/cobra"
)

func newEnergyCmd() *cobra.Command {
	var noEvid bool
	cmd := &cobra.Command{
		Use:   "energy MODEL LABELING",
		Short: "Print the energy of a labeling",
		Long: `Print the energy of a labeling of MODEL. LABELING is a solution file: the UAI
competition format ("MPE" or "MAP", then "n x0 ... xn-1") or a plain line of labels;
or the labels.plf raster of a solve, run or fetch directory (a .grid model beyond
memory is then read band by band; with a solution file, which would need it in
memory, such a model is refused). LABELING is checked before MODEL is read. The
last line of output is "energy <value>" at full precision, "+Inf" when the
labeling takes a forbidden state.

When MODEL.evid exists it is applied as toulbar2 does (the observed variables are
conditioned on; a labeling that disagrees with the evidence has energy +Inf), and a
note says so on stderr. --no-evid ignores it.`,
		Example: `  partopt energy model.uai result/labels.sol
  partopt energy big.grid result/labels.plf`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := job.Energy(args[0], args[1], noEvid, noteTo(cmd))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "energy %s\n", job.FormatEnergy(e))
			return nil
		},
	}
	cmd.Flags().BoolVar(&noEvid, "no-evid", false, "ignore MODEL.evid")
	return cmd
}
