package main

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/partopt/partopt/model"
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
			m, err := uai.ReadFile(args[0])
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
			e := m.Energy(x)
			if path, ok := uai.EvidencePathFor(args[0]); ok && !noEvid {
				ev, err := uai.ReadEvidenceFile(path)
				if err != nil {
					return err
				}
				if e, err = energyWithEvidence(m, ev, x, cmd.ErrOrStderr()); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "partopt: applied evidence %s (%d observed variables); --no-evid ignores it\n", path, ev.Len())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "energy %s\n", formatEnergy(e))
			return nil
		},
	}
	cmd.Flags().BoolVar(&noEvid, "no-evid", false, "ignore MODEL.evid")
	return cmd
}

// energyWithEvidence conditions m on the evidence, as toulbar2 does, and evaluates x on
// the free variables. A labeling that contradicts the evidence has energy +Inf.
func energyWithEvidence(m *model.Model, ev uai.Evidence, x []int, stderr io.Writer) (float64, error) {
	fixed, err := ev.Fixed(m.LabelCounts())
	if err != nil {
		return 0, err
	}
	for v, l := range fixed {
		if l >= 0 && x[v] != l {
			fmt.Fprintf(stderr, "partopt: the labeling gives variable %d label %d, the evidence %d: energy +Inf\n", v, x[v], l)
			return math.Inf(1), nil
		}
	}
	c, err := m.Condition(fixed)
	if err != nil {
		return 0, err
	}
	y := make([]int, len(c.Vars))
	for i, v := range c.Vars {
		y[i] = x[v]
	}
	return c.Model.Energy(y), nil
}

// formatEnergy prints the shortest decimal that reads back to e, and +Inf for forbidden.
func formatEnergy(e float64) string {
	if math.IsInf(e, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(e, 'g', -1, 64)
}
