package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/spf13/cobra"
)

// requestTimeout bounds a request to the coordinator.
const requestTimeout = 10 * time.Second

func newSubmitCmd() *cobra.Command {
	var n natsFlags
	var f solveFlags
	var job string
	var shared bool
	cmd := &cobra.Command{
		Use:   "submit MODEL",
		Short: "Submit a model to the cluster's coordinator; print the job id",
		Long: `Submit MODEL as a job solved by windows as "partopt solve --window" does: a
raster (a .grid file or a UAI model on a 4-connected W×H grid) by squares of
--window pixels plus a --halo of pixels (default 32); any other UAI model, of
any factor order, by BFS regions of --window variables plus --halo graph steps
(default 2), which the coordinator plans on the model in memory and the
workers load whole (general models are not read out of core). The model (and
MODEL.evid unless --no-evid) is uploaded to the cluster's object store, or with
--shared referred to by its absolute path, which every worker and the
coordinator must see (MODEL.evid is uploaded all the same). Prints the job id
for "partopt status", "fetch" and "cancel"; fetch then gives the outputs of
"partopt solve --window N --halo H".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.method, f.output = "pbp", "-"
			if err := f.validate(); err != nil {
				return err
			}
			if job != "" {
				if err := protocol.ValidateJob(job); err != nil {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Minute)
			defer cancel()
			f.haloSet = cmd.Flags().Changed("halo")
			spec, err := submitSpec(args[0], f, job)
			if err != nil {
				return err
			}
			res, err := n.open(ctx, "partopt-submit")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			if shared {
				abs, err := filepath.Abs(args[0])
				if err != nil {
					return err
				}
				spec.Model = protocol.ModelRef{Path: abs}
			} else if spec.Model, err = uploadModel(ctx, res, spec.Job, args[0]); err != nil {
				return err
			}
			if ev, ok := uai.EvidencePathFor(args[0]); ok && !f.noEvid {
				if spec.Evidence, err = uploadFile(ctx, res, protocol.EvidenceObject(spec.Job), ev); err != nil {
					return err
				}
			}
			data, err := protocol.Marshal(spec)
			if err != nil {
				return err
			}
			msg, err := res.Conn.Request(protocol.SubjectSubmit, data, requestTimeout)
			if err != nil {
				return coordinatorError(err)
			}
			var reply submitReply
			if err := json.Unmarshal(msg.Data, &reply); err != nil {
				return internalError{fmt.Errorf("coordinator reply %q: %w", msg.Data, err)}
			}
			if reply.Error != "" {
				return errors.New(reply.Error)
			}
			fmt.Fprintln(cmd.OutOrStdout(), reply.Job)
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	fl := cmd.Flags()
	fl.StringVar(&job, "job", "", "job id (default: the time and a random suffix)")
	fl.BoolVar(&shared, "shared", false, "refer to MODEL by its path on a filesystem every worker shares instead of uploading it")
	fl.IntVar(&f.window, "window", defaultRasterWindow, "core side of the windows in pixels for a raster, variables per region otherwise")
	fl.IntVar(&f.halo, "halo", defaultRasterHalo, "window halo: pixels for a raster, graph steps otherwise (there 2 unless given)")
	fl.IntVar(&f.rounds, "rounds", defaultRounds, "at most this many rounds of windows")
	fl.StringVar(&f.boundary, "boundary", persistency.Invariant.String(), "boundary potentials: invariant or original")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "iteration cap per solve (0: the solver's own, 1500 for TRW-S and 10000 for SRMP)")
	fl.Float64Var(&f.gapTolerance, "gap-tolerance", 1e-9, "relative gap stop")
	fl.IntVar(&f.stallIterations, "stall-iterations", 100, "stall stop; 0 disables")
	fl.IntVar(&f.checkEvery, "check-every", 5, "labeling check period")
	fl.BoolVar(&f.noEvid, "no-evid", false, "ignore MODEL.evid")
	f.workers, f.pngMax = 1, defaultPNGSide
	return cmd
}

// submitSpec reads MODEL's raster size, or for a model that is not a raster its
// variables (after its evidence, unless --no-evid), and returns the job's spec
// (model not yet referenced).
func submitSpec(path string, f solveFlags, job string) (protocol.JobSpec, error) {
	var r rasterJob
	r.path = path
	variant, _ := persistency.ParseVariant(f.boundary)
	if isGridFile(path) {
		g, err := grid.Open(path)
		if err != nil {
			return protocol.JobSpec{}, err
		}
		h := g.Header()
		g.Close()
		r.raster, r.labels = partition.Raster{Width: h.Width, Height: h.Height}, h.Labels
	} else {
		in, err := loadProblem(path, f.noEvid)
		if err != nil {
			return protocol.JobSpec{}, err
		}
		w, h, ok := grid.Dims(in.m)
		if !ok {
			halo := f.halo
			if !f.haloSet {
				halo = defaultRegionHalo
			}
			spec, err := graphSpec(in, f.window, halo, f, variant.String())
			if job != "" {
				spec.Job = job
			}
			return spec, err
		}
		r.raster, r.labels = partition.Raster{Width: w, Height: h}, maxLabels(in.m)
	}
	opt := partition.RasterOptions{Core: f.window, Halo: f.halo, MaxRounds: f.rounds,
		Persistency: persistency.Options{Variant: variant}}
	spec, err := runSpec(r, opt, f)
	if job != "" {
		spec.Job = job
	}
	return spec, err
}

// uploadFile puts a small file in the object store as name.
func uploadFile(ctx context.Context, res *cluster.Resources, name, path string) (*protocol.Payload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := res.PutBytes(ctx, name, data); err != nil {
		return nil, err
	}
	return &protocol.Payload{Object: name, Size: int64(len(data)), CRC32C: protocol.CRC32C(data)}, nil
}

// coordinatorError explains a failed request to the coordinator.
func coordinatorError(err error) error {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) {
		return fmt.Errorf("no coordinator answered (start one with partopt coordinator): %w", err)
	}
	return err
}

// jobStatus asks the coordinator running job for its status; without an answer
// it reads the last status the coordinator stored.
func jobStatus(ctx context.Context, res *cluster.Resources, job string) (coordinator.Summary, error) {
	var s coordinator.Summary
	msg, err := res.Conn.Request(protocol.StatusSubject(job), nil, 2*time.Second)
	if err == nil {
		return s, json.Unmarshal(msg.Data, &s)
	}
	e, kerr := res.Jobs.Get(ctx, protocol.JobStatusKey(job))
	if errors.Is(kerr, jetstream.ErrKeyNotFound) {
		if _, serr := res.Jobs.Get(ctx, protocol.JobSpecKey(job)); serr == nil {
			return s, fmt.Errorf("job %s is submitted but has no status yet", job)
		}
		return s, fmt.Errorf("no job %s", job)
	}
	if kerr != nil {
		return s, kerr
	}
	return s, json.Unmarshal(e.Value(), &s)
}

// statusText is the one-line status of a job.
func statusText(s coordinator.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s: %s, round %d (%d done), windows %d/%d, in flight %d, lost %d, persistent %.1f%% of %d %s",
		s.Job, s.Phase, s.Round+1, s.Rounds, s.Merged, s.Windows, s.InFlight, s.Lost, 100*fraction(s.Proven, s.Pixels), s.Pixels, s.Unit())
	if s.Err != "" {
		fmt.Fprintf(&b, ": %s", s.Err)
	}
	return b.String()
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
			res, err := n.open(ctx, "partopt-status")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			line := newStatusLine(cmd.ErrOrStderr(), 0)
			for {
				s, err := jobStatus(ctx, res, args[0])
				if err != nil {
					return err
				}
				terminal := s.Phase == "done" || s.Phase == "canceled" || s.Phase == "failed"
				if !wait || terminal {
					line.clear()
					if asJSON {
						enc := json.NewEncoder(cmd.OutOrStdout())
						enc.SetIndent("", "  ")
						return enc.Encode(s)
					}
					fmt.Fprintln(cmd.OutOrStdout(), statusText(s))
					return nil
				}
				if line != nil {
					line.show(func() string { return progressBar(s.Merged, s.Windows, 20) + " " + statusText(s) })
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
			ctx := cmd.Context()
			res, err := n.open(ctx, "partopt-fetch")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			s, err := jobStatus(ctx, res, args[0])
			if err != nil {
				return err
			}
			if s.Phase != "done" || len(s.Outputs) == 0 {
				return fmt.Errorf("nothing to fetch yet: %s", statusText(s))
			}
			if err := prepareOutput(out); err != nil {
				return err
			}
			for _, name := range s.Outputs {
				if err := res.GetFile(ctx, protocol.OutputObject(s.Job, name), filepath.Join(out, name), -1); err != nil {
					return internalError{fmt.Errorf("downloading %s: %w", name, err)}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fetched %d files of job %s into %s\n", len(s.Outputs), s.Job, out)
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
				return err
			}
			res, err := n.open(cmd.Context(), "partopt-cancel")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			s, err := jobStatus(cmd.Context(), res, args[0])
			if err != nil {
				return err
			}
			if s.Phase == "done" || s.Phase == "canceled" || s.Phase == "failed" {
				return fmt.Errorf("job %s has ended: %s", s.Job, s.Phase)
			}
			data, err := protocol.Marshal(protocol.Cancel{Job: args[0], Reason: reason})
			if err != nil {
				return err
			}
			if _, err := res.Conn.Request(protocol.CancelSubject(args[0]), data, requestTimeout); err != nil {
				return coordinatorError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s cancelled\n", args[0])
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().StringVar(&reason, "reason", "by user", "why, for the job's status")
	return cmd
}
