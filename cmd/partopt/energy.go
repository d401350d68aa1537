package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/partopt/partopt/model/uai"
	"github.com/spf13/cobra"
)

func newEnergyCmd() *cobra.Command {
	var noEvid bool
	cmd := &cobra.Command{
		Use:   "energy MODEL LABELING",
		Short: "Print the energy of a labeling",
		Long: `Print the energy of a labeling of MODEL. LABELING is a solution file: the UAI
competition format ("MPE" or "MAP", then "n x0 ... xn-1") or a plain line of labels.
The last line of output is "energy <value>" at full precision, "+Inf" when the
labeling takes a forbidden state.

When MODEL.evid exists it is applied as toulbar2 does (the observed variables are
conditioned on; a labeling that disagrees with the evidence has energy +Inf), and a
note says so on stderr. --no-evid ignores it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := readModel(args[0])
			if err != nil {
				return err
			}
			x, err := uai.ReadSolutionFile(args[1], m.NumVars())
			if err != nil {
				return err
			}
			if err := m.CheckLabeling(x); err != nil {
				return fmt.Errorf("%s: %w", args[1], err)
			}
			ev, err := loadEvidence(args[0], m, noEvid)
			if err != nil {
				return err
			}
			e := m.Energy(x)
			if ev != nil {
				if e, err = ev.energy(m, x, cmd.ErrOrStderr()); err != nil {
					return err
				}
				ev.note(cmd.ErrOrStderr())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "energy %s\n", formatEnergy(e))
			return nil
		},
	}
	cmd.Flags().BoolVar(&noEvid, "no-evid", false, "ignore MODEL.evid")
	return cmd
}

// formatEnergy prints the shortest decimal that reads back to e, and +Inf for forbidden.
func formatEnergy(e float64) string {
	if math.IsInf(e, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(e, 'g', -1, 64)
}
