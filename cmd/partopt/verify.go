// The verify command: re-check, from the model alone, the persistency proof that
// a run wrote (a whole-model certificate, or a windowed run's window
// certificates), and that the output files agree with it.
package main

import (
	"fmt"

	"github.com/partopt/partopt/job"
	"github.com/spf13/cobra"
)

func newVerifyCmd() *cobra.Command {
	var noEvid bool
	cmd := &cobra.Command{
		Use:   "verify MODEL DIR",
		Short: "Re-check the persistency proof that solve, run or a cluster job wrote to DIR",
		Long:  help("verify"),
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			line := newStatusLine(cmd, 0)
			v, err := job.VerifyWith(args[0], args[1], job.VerifyOptions{NoEvidence: noEvid, Note: noteTo(cmd), Progress: func(read, total int64) {
				line.show(func() string {
					return fmt.Sprintf("replaying window proofs: %.1f%% of %d bytes", 100*float64(read)/float64(max(total, 1)), total)
				})
			}})
			line.clear()
			if err != nil {
				return err
			}
			if v.Windows > 0 || v.Rounds > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "verified %d persistent variables from %d window proofs in %d rounds\n", v.Persistent, v.Windows, v.Rounds)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "verified %d persistent variables, certificate gap %s\n", v.Persistent, job.FormatEnergy(v.Gap))
			}
			if v.Completed {
				fmt.Fprintln(cmd.OutOrStdout(), completionLine(v))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&noEvid, "no-evid", false, "ignore MODEL.evid")
	return cmd
}

// completionLine is verify's line on a re-checked completion.
func completionLine(v job.Verified) string {
	switch {
	case !v.Optimal:
		return fmt.Sprintf("labels.sol is not proven optimal: %d components of what the proofs left, not all solved exactly", v.Components)
	case v.Trusted > 0:
		return fmt.Sprintf("verified optimal labeling: %d components solved again, %d trusted, not re-checked (toulbar2 solved them and is not installed here)", v.Components-v.Trusted, v.Trusted)
	}
	if v.Components == 0 {
		return "verified optimal labeling: every variable persistent"
	}
	return fmt.Sprintf("verified optimal labeling: %d components of what the proofs left solved again exactly", v.Components)
}
