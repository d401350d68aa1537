// The cluster's clients: submit, status, fetch and cancel (package service).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
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
			conn, err := n.conn(cmd)
			if err != nil {
				return err
			}
			id, err := service.Submit(ctx, conn, f.spec(args[0]), o)
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
	addClusterMethodFlag(cmd, &f, job.PBPIRI)
	addCompletionFlags(cmd, &f)
	fl.StringVar(&f.boundary, "boundary", persistency.Invariant.String(), "boundary potentials: invariant or original")
	enumCompletion(cmd, "boundary", boundaries...)
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
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status JOB",
		Short: "Show a job's progress (--json for JSON, --wait to follow it to its end)",
		Long: `Show a job's progress: its phase, round, windows merged and in flight, and the
share of variables proven persistent so far. --wait follows the job to its end
(a status line on a terminal) and prints its final status; --timeout bounds the
wait. A job whose status no coordinator has updated for 30 s is said to be so
(while waiting, on stderr): its coordinators may all be down.

Exit status: 0 while the job runs or when it is done, 1 when it failed or was
cancelled, 2 on a usage error, an unknown job, no connection or a wait past
--timeout — so that
"partopt status --wait JOB && partopt fetch JOB -o DIR" fetches only a finished
job.`,
		Example: `  partopt status "$JOB"
  partopt status --wait --json "$JOB" > status.json
  partopt status --wait "$JOB" && partopt fetch "$JOB" -o result/
  partopt status --wait --timeout 2h "$JOB"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			res, err := n.dial(cmd, "partopt-status")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			line := newStatusLine(cmd, 0)
			var until <-chan time.Time
			if timeout > 0 {
				until = time.After(timeout)
			}
			warned := false
			for {
				s, err := service.Status(ctx, res, args[0])
				if err != nil {
					return err
				}
				if stale := service.Stale(s, time.Now()); wait && stale && !warned && line.log != nil {
					line.log.Warn("no coordinator is updating the job; still waiting", "status", service.StatusLine(s))
					warned = true
				} else if !stale {
					warned = false
				}
				if !wait || service.Ended(s.Phase) {
					line.clear()
					if asJSON {
						if err := writeJSON(cmd, s); err != nil {
							return err
						}
					} else {
						fmt.Fprintln(cmd.OutOrStdout(), service.StatusLine(s))
					}
					return endedBadly(s)
				}
				if line != nil {
					line.show(func() string { return progressBar(s.Merged, s.Windows, 20) + " " + service.StatusLine(s) })
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-until:
					line.clear()
					return fmt.Errorf("job %s has not ended within --timeout %v: %s", args[0], timeout, service.StatusLine(s))
				case <-time.After(time.Second):
				}
			}
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the job until it ends (a status line on a terminal)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait: give up after this long (0: wait until the job ends)")
	return cmd
}

// endedBadly is the error (exit status 1) of a job that failed or was
// cancelled, nil otherwise.
func endedBadly(s coordinator.Summary) error {
	if s.Phase != "failed" && s.Phase != "canceled" {
		return nil
	}
	if s.Err != "" {
		return internalError{fmt.Errorf("job %s %s: %s", s.Job, s.Phase, s.Err)}
	}
	return internalError{fmt.Errorf("job %s %s", s.Job, s.Phase)}
}

func newJobsCmd() *cobra.Command {
	var n natsFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List the cluster's jobs: phase, progress, age",
		Long: `List the jobs of the cluster's namespace, oldest first, from the statuses the
coordinators store: each job's phase, its windows merged in the current round,
the share of its variables proven persistent, how long ago it was submitted and
when its status last changed. Deleted jobs are not listed.`,
		Example: `  partopt jobs
  partopt jobs --json | jq -r '.[] | select(.phase == "done") | .job'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := n.dial(cmd, "partopt-jobs")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			jobs, err := service.Jobs(cmd.Context(), res)
			if err != nil {
				return internalError{err}
			}
			if asJSON {
				if jobs == nil {
					jobs = []coordinator.Summary{}
				}
				return writeJSON(cmd, jobs)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "JOB\tPHASE\tROUND\tWINDOWS\tPERSISTENT\tAGE\tUPDATED")
			now := time.Now()
			for _, s := range jobs {
				persistent := "–"
				if s.Pixels > 0 {
					persistent = fmt.Sprintf("%.1f%%", 100*float64(s.Proven)/float64(s.Pixels))
				}
				phase := s.Phase
				if service.Stale(s, now) {
					phase += " (no coordinator?)"
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", s.Job, phase, s.Round+1, s.Merged, s.Windows, persistent, age(now, s.Started), age(now, s.Updated))
			}
			return w.Flush()
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the jobs' statuses as a JSON array")
	return cmd
}

// age is how long ago t was, rounded for a table ("–" for no time).
func age(now, t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	case d < 48*time.Hour:
		return d.Round(time.Hour).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func newDeleteCmd() *cobra.Command {
	var n natsFlags
	cmd := &cobra.Command{
		Use:   "delete JOB [JOB…]",
		Short: "Delete ended jobs: their outputs, model, results and table entry",
		Long: `Delete jobs that have ended (done, failed or cancelled): the coordinator
removes their outputs and uploaded model from the object store, whatever they left
in the streams, their files in its data directory and their entry in the job
table, after which status and jobs no longer know them and their ids are free. A
running job is refused: cancel it first. Fetch what you need before.`,
		Example: `  partopt delete "$JOB"
  partopt jobs --json | jq -r '.[] | select(.phase != "running") | .job' | xargs partopt delete`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if err := protocol.ValidateJob(id); err != nil {
					return err // before reaching the cluster
				}
			}
			res, err := n.dial(cmd, "partopt-delete")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			for _, id := range args {
				if err := service.Delete(cmd.Context(), res, id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "job %s deleted\n", id)
			}
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	return cmd
}

func newFetchCmd() *cobra.Command {
	var n natsFlags
	var out string
	cmd := &cobra.Command{
		Use:   "fetch JOB -o DIR",
		Short: "Download a finished job's outputs",
		Long: `Download the outputs of a finished job into DIR — those of solve --window on one
machine, byte for byte: labels.plf, persistent.plf, persistency.png, labels.sol and
persistent.evid (up to 2^22 pixels), window-certificates.bin and report.json. The
files are downloaded beside DIR's and moved in only when all are there: a fetch
that fails leaves DIR as it was. Re-check them with partopt verify MODEL DIR.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := n.dial(cmd, "partopt-fetch")
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
		Long: `Cancel a running job: the coordinator stops dispatching its windows, purges its
queued tasks and ends it as canceled with the reason (status shows it); the
command returns once the job has ended (up to 30 s), so that a delete may
follow at once. Its files stay until partopt delete JOB.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := protocol.ValidateJob(args[0]); err != nil {
				return err // before reaching the cluster
			}
			res, err := n.dial(cmd, "partopt-cancel")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			if err := service.Cancel(cmd.Context(), res, args[0], reason); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s canceled\n", args[0])
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().StringVar(&reason, "reason", "by user", "why, for the job's status")
	return cmd
}

// dial connects a client command to its cluster (flags, environment, files).
func (n *natsFlags) dial(cmd *cobra.Command, name string) (*cluster.Resources, error) {
	conn, err := n.conn(cmd)
	if err != nil {
		return nil, err
	}
	return cluster.Dial(cmd.Context(), conn, name)
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
