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
		Long:  help("verify"),
		Args:  cobra.ExactArgs(2),
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
