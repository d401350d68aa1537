// The solve command: prove persistent labels of a model (or solve its
// relaxation) with package job, whole or by windows.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/partopt/partopt/complete"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
	"github.com/spf13/cobra"
)

type solveFlags struct {
	method          string
	boundary        string
	output          string
	maxIterations   int
	gapTolerance    float64
	stallIterations int
	checkEvery      int
	noEvid          bool
	// Windowed pbp.
	window, halo    int
	haloSet         bool // --halo was given (the regions' default differs)
	workers, rounds int
	pngMax          int
	// Completion (whole-model solves).
	complete       bool
	completeBudget string
}

func newSolveCmd() *cobra.Command {
	var f solveFlags
	cmd := &cobra.Command{
		Use:   "solve MODEL -o DIR",
		Short: "Prove persistent labels (pbp) or solve the relaxation (trws); write labels.sol, report.json, ...",
		Long:  help("solve"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.haloSet = cmd.Flags().Changed("halo")
			if err := f.validate(); err != nil {
				return err
			}
			return runJob(cmd, f.spec(args[0]), job.Options{})
		},
	}
	addSolveFlags(cmd, &f, true)
	return cmd
}

// runJob runs a job with the CLI's signals, notes and progress, and prints its
// summary line.
func runJob(cmd *cobra.Command, s job.Spec, opt job.Options) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt.Note = noteTo(cmd)
	view := newProgress(cmd)
	res, err := job.Run(ctx, s, view.options(opt))
	view.clear()
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), res.Summary)
	return nil
}

// noteTo prints the library's notes on the command's stderr.
func noteTo(cmd *cobra.Command) func(string) {
	return func(msg string) { fmt.Fprintf(cmd.ErrOrStderr(), "partopt: %s\n", msg) }
}

// addSolveFlags defines the flags of solve (with --method) and of run.
func addSolveFlags(cmd *cobra.Command, f *solveFlags, method bool) {
	// The CLI's defaults are part of its contract, so they are spelled out here rather
	// than taken from trws.DefaultOptions (which they equal today).
	def := trws.Options{GapTolerance: 1e-9, StallIterations: 100, StallTolerance: 1e-7, CheckEvery: 5}
	fl := cmd.Flags()
	if method {
		fl.StringVar(&f.method, "method", "", fmt.Sprintf("solver: %s (default: pbp+iri, both methods; by windows on a .grid file, out of core past %d pixels)", methodList(), job.MaxInMemoryPixels))
		enumCompletion(cmd, "method", methodNames(job.Methods...)...)
		fl.IntVar(&f.window, "window", 0, "solve by windows: core side in pixels for raster grids, variables per region otherwise (0: the whole model; .grid files: 512)")
	} else {
		fl.IntVar(&f.window, "window", job.DefaultRasterWindow, "core side of the windows in pixels")
	}
	addCompletionFlags(cmd, f)
	fl.IntVar(&f.workers, "workers", runtime.NumCPU(), "windows solved at once; a model in fewer windows gets their cores for its TRW-S passes")
	fl.StringVar(&f.boundary, "boundary", persistency.Invariant.String(), "pbp boundary potentials: invariant or original")
	enumCompletion(cmd, "boundary", boundaries...)
	fl.StringVarP(&f.output, "output", "o", "", "output directory (required; created if missing)")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "iteration cap per solve (0: the solver's own, 1500 for TRW-S and 10000 for SRMP)")
	fl.Float64Var(&f.gapTolerance, "gap-tolerance", def.GapTolerance, "stop when the relative gap is this small; 0 runs exactly --max-iterations")
	fl.IntVar(&f.stallIterations, "stall-iterations", def.StallIterations, "stop after this many iterations without progress; 0 disables")
	fl.IntVar(&f.checkEvery, "check-every", def.CheckEvery, "compute the labeling and agreement every this many iterations")
	fl.BoolVar(&f.noEvid, "no-evid", false, "ignore MODEL.evid")
	fl.IntVar(&f.halo, "halo", job.DefaultRasterHalo, "window halo: pixels for raster grids, graph steps otherwise (there 2 unless given)")
	fl.IntVar(&f.rounds, "rounds", 0, fmt.Sprintf("at most this many rounds of windows (each on what is left, with shifted windows); 0: %d for pbp, %d for iri (and for pbp+iri's elimination)", job.DefaultRounds, job.DefaultEliminationRounds))
	fl.IntVar(&f.pngMax, "png-max", job.DefaultPNGSide, "largest side of persistency.png (larger grids are downsampled)")
	cmd.MarkFlagRequired("output")
}

// addCompletionFlags defines --complete and --complete-budget (solve, run,
// submit).
func addCompletionFlags(cmd *cobra.Command, f *solveFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&f.complete, "complete", true, "complete what the proofs leave into a labeling proven optimal where the budget allows (pbp, iri, pbp+iri, whole or by windows)")
	fl.StringVar(&f.completeBudget, "complete-budget", "", fmt.Sprintf("the completion's limits: states=N (enumeration, default %.0f), table=N (dynamic programming, default %.0f), engine=DURATION or off (toulbar2 a component, default %s)", complete.DefaultBudget.States, complete.DefaultBudget.Table, job.DefaultEngineTime))
}

// addClusterMethodFlag defines --method of run (default pbp+iri) and submit
// (default pbp: a submitted job runs one method).
func addClusterMethodFlag(cmd *cobra.Command, f *solveFlags, def job.Method) {
	usage := "solver of the windows: pbp (Algorithm 1), iri (label elimination)"
	if def == job.PBPIRI {
		usage += " or pbp+iri (pbp's windows, then iri's from what they proved)"
	}
	cmd.Flags().StringVar(&f.method, "method", string(def), usage)
	methods := []job.Method{job.PBP, job.IRI}
	if def == job.PBPIRI {
		methods = append(methods, job.PBPIRI)
	}
	enumCompletion(cmd, "method", methodNames(methods...)...)
}

// boundaries are the values of --boundary.
var boundaries = []string{persistency.Invariant.String(), persistency.Original.String()}

// methodNames are the names of methods, for completion.
func methodNames(methods ...job.Method) []string {
	out := make([]string, len(methods))
	for i, m := range methods {
		out[i] = string(m)
	}
	return out
}

func methodList() string {
	names := make([]string, len(job.Methods))
	for i, m := range job.Methods {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

func (f solveFlags) validate() error {
	switch {
	case f.method != "" && !slices.Contains(job.Methods, job.Method(f.method)):
		return fmt.Errorf("unknown --method %q (available: %s)", f.method, methodList())
	case f.method != "" && f.method != string(job.PBP) && f.method != string(job.PBPIRI) && f.boundary != persistency.Invariant.String():
		return fmt.Errorf("--boundary %s: only --method pbp has boundary potentials (and pbp+iri)", f.boundary)
	case f.output == "":
		return errors.New("--output: empty directory name")
	case f.maxIterations < 0:
		return fmt.Errorf("--max-iterations %d: want at least 0 (0: the solver's own cap)", f.maxIterations)
	case !(f.gapTolerance >= 0):
		return fmt.Errorf("--gap-tolerance %v: want a number ≥ 0", f.gapTolerance)
	case f.stallIterations < 0:
		return fmt.Errorf("--stall-iterations %d: want at least 0", f.stallIterations)
	case f.checkEvery < 1:
		return fmt.Errorf("--check-every %d: want at least 1", f.checkEvery)
	case f.window < 0:
		return fmt.Errorf("--window %d: want at least 1 (or 0 for the whole model)", f.window)
	case f.window > 0 && f.method != "" && f.method != string(job.PBP) && f.method != string(job.IRI) && f.method != string(job.PBPIRI):
		return fmt.Errorf("--method %s --window: only --method pbp, iri and pbp+iri solve by windows (and over a cluster)", f.method)
	case f.halo < 0:
		return fmt.Errorf("--halo %d: want at least 0", f.halo)
	case f.workers < 1:
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	case f.rounds < 0:
		return fmt.Errorf("--rounds %d: want at least 1 (or 0 for the method's default)", f.rounds)
	case f.pngMax < 1:
		return fmt.Errorf("--png-max %d: want at least 1", f.pngMax)
	}
	if _, err := job.ParseCompletion(f.completeBudget); err != nil {
		return fmt.Errorf("--complete-budget: %w", err)
	}
	if _, err := persistency.ParseVariant(f.boundary); err != nil {
		return fmt.Errorf("--boundary %q: want invariant or original", f.boundary)
	}
	return nil
}

// spec is the job of the flags on model (validate has checked them).
func (f solveFlags) spec(model string) job.Spec {
	variant, _ := persistency.ParseVariant(f.boundary)
	opt := trws.DefaultOptions()
	opt.MaxIterations, opt.GapTolerance, opt.StallIterations, opt.CheckEvery = f.maxIterations, f.gapTolerance, f.stallIterations, f.checkEvery
	s := job.Spec{Model: model, NoEvidence: f.noEvid, Method: job.Method(f.method), Boundary: variant, Solver: opt,
		Window: f.window, Halo: f.halo, Rounds: f.rounds, Workers: f.workers, PNGMax: f.pngMax, Output: f.output}
	s.Complete, _ = job.ParseCompletion(f.completeBudget)
	s.Complete.Off = !f.complete
	switch {
	case !f.haloSet:
		s.Halo = 0 // the layout's default
	case f.halo == 0:
		s.Halo = job.NoHalo
	}
	return s
}
