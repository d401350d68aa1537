// The cluster's clients: submit, status, fetch and cancel (package service).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/service"
	"github.com/spf13/cobra"
)

func newSubmitCmd() *cobra.Command {
	var n natsFlags
	var f solveFlags
	var o service.SubmitOptions
	cmd := &cobra.Command{
		Use:   "submit MODEL",
		Short: "Submit a model to the cluster's coordinator; print the job id",
		Long:  help("submit"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.output = "-"
			f.haloSet = cmd.Flags().Changed("halo")
			if err := f.validate(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Minute)
			defer cancel()
			id, err := service.Submit(ctx, n.ConnOptions, f.spec(args[0]), o)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	fl := cmd.Flags()
	fl.StringVar(&o.ID, "job", "", "job id (default: the time and a random suffix)")
	fl.BoolVar(&o.Shared, "shared", false, "refer to MODEL by its path on a filesystem every worker shares instead of uploading it")
	fl.IntVar(&f.window, "window", job.DefaultRasterWindow, "core side of the windows in pixels for a raster, variables per region otherwise")
	fl.IntVar(&f.halo, "halo", job.DefaultRasterHalo, "window halo: pixels for a raster, graph steps otherwise (there 2 unless given)")
	fl.IntVar(&f.rounds, "rounds", 0, fmt.Sprintf("at most this many rounds of windows; 0: %d, or %d for --method iri", job.DefaultRounds, job.DefaultEliminationRounds))
	addClusterMethodFlag(cmd, &f, job.PBP)
	fl.StringVar(&f.boundary, "boundary", persistency.Invariant.String(), "boundary potentials: invariant or original")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "iteration cap per solve (0: the solver's own, 1500 for TRW-S and 10000 for SRMP)")
	fl.Float64Var(&f.gapTolerance, "gap-tolerance", 1e-9, "relative gap stop")
	fl.IntVar(&f.stallIterations, "stall-iterations", 100, "stall stop; 0 disables")
	fl.IntVar(&f.checkEvery, "check-every", 5, "labeling check period")
	fl.BoolVar(&f.noEvid, "no-evid", false, "ignore MODEL.evid")
	f.workers, f.pngMax = 1, job.DefaultPNGSide
	return cmd
}

// progressBar draws done of total as [####......] in width cells.
func progressBar(done, total, width int) string {
	n := 0
	if total > 0 {
		n = min(width, done*width/total)
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

func newStatusCmd() *cobra.Command {
	var n natsFlags
	var asJSON, wait bool
	cmd := &cobra.Command{
		Use:   "status JOB",
		Short: "Show a job's progress (--json for JSON, --wait to follow it to its end)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			res, err := cluster.Dial(ctx, n.ConnOptions, "partopt-status")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			line := newStatusLine(cmd.ErrOrStderr(), 0)
			for {
				s, err := service.Status(ctx, res, args[0])
				if err != nil {
					return err
				}
				if !wait || service.Ended(s.Phase) {
					line.clear()
					if asJSON {
						return writeJSON(cmd, s)
					}
					fmt.Fprintln(cmd.OutOrStdout(), service.StatusLine(s))
					return nil
				}
				if line != nil {
					line.show(func() string { return progressBar(s.Merged, s.Windows, 20) + " " + service.StatusLine(s) })
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Second):
				}
			}
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the job until it ends (a status line on a terminal)")
	return cmd
}

func newFetchCmd() *cobra.Command {
	var n natsFlags
	var out string
	cmd := &cobra.Command{
		Use:   "fetch JOB -o DIR",
		Short: "Download a finished job's outputs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := cluster.Dial(cmd.Context(), n.ConnOptions, "partopt-fetch")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			names, err := service.Fetch(cmd.Context(), res, args[0], out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fetched %d files of job %s into %s\n", len(names), args[0], out)
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().StringVarP(&out, "output", "o", "", "output directory (required)")
	cmd.MarkFlagRequired("output")
	return cmd
}

func newCancelCmd() *cobra.Command {
	var n natsFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a running job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := protocol.ValidateJob(args[0]); err != nil {
				return err // before reaching the cluster
			}
			res, err := cluster.Dial(cmd.Context(), n.ConnOptions, "partopt-cancel")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			if err := service.Cancel(cmd.Context(), res, args[0], reason); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s cancelled\n", args[0])
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().StringVar(&reason, "reason", "by user", "why, for the job's status")
	return cmd
}

// writeJSON prints v as indented JSON.
func writeJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return internalError{err}
	}
	return nil
}
