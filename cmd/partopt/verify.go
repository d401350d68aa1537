// The verify command: re-check, from the model alone, the persistency proof that
// solve --method pbp wrote, and that the labeling files agree with it.
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
		Short: "Re-check the persistency proof that solve wrote to DIR",
		Long: `Re-check the output of "partopt solve MODEL -o DIR" (method pbp) from MODEL
alone: read DIR/certificate.gob, rebuild the final sub-problem of the proof from
MODEL (with MODEL.evid applied, as solve did; --no-evid ignores it, and must then
have been given to solve too), check the certificate on it, and check that
DIR/persistent.evid lists exactly the proven labels and the observed variables and
that DIR/labels.sol takes them. On success the last line of stdout is

  verified <k> persistent variables, certificate gap <g>

k counting the persistent variables among the free ones, g the certificate's
energy − bound on the final sub-problem.

Exit codes: 0 verified; 1 NOT verified (the certificate does not prove the labels,
or persistent.evid or labels.sol disagrees with them; one line "NOT verified: ..."
on stderr) or an internal error; 2 bad input (a missing, unreadable, truncated or
corrupt file, or files of another model or evidence), with a one-line message.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := job.Verify(args[0], args[1], noEvid, noteTo(cmd))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "verified %d persistent variables, certificate gap %s\n", v.Persistent, job.FormatEnergy(v.Gap))
			return nil
		},
	}
	cmd.Flags().BoolVar(&noEvid, "no-evid", false, "ignore MODEL.evid")
	return cmd
}
