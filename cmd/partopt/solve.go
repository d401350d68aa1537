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

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
	"github.com/spf13/cobra"
)

// solveHelp is solve's long help: the contract of its outputs.
const solveHelp = `Solve the MAP problem of MODEL and write to DIR (created if missing).

Method pbp (the default) proves partial optimality: it finds persistent variables,
whose labels agree with some optimal labeling, by the pruning method of Swoboda et
al. (TPAMI 2016), and writes

  DIR/labels.sol       a full labeling of MODEL, UAI MPE format ("MPE", then
                       "n x0 ... xn-1"): the persistent variables at their proven
                       labels, the others from the best labeling of the relaxation,
                       the observed variables at their evidence labels
  DIR/persistent.evid  UAI evidence ("k v1 l1 ... vk lk"): the persistent variables
                       (MODEL's indices) with their labels, plus the observed
                       variables of MODEL.evid. MODEL with persistent.evid as its
                       evidence is the reduced problem: any UAI solver that
                       conditions on it finds a labeling that an optimum of MODEL
                       extends (e.g. toulbar2 MODEL DIR/persistent.evid; but
                       toulbar2 1.1.1 ignores a file of exactly one observation,
                       "1 v l", taking it for the UAI 2010 form)
  DIR/certificate.gob  the proof, for "partopt verify MODEL DIR": the boundary
                       variant, the persistent labels and the LP dual certificate
                       (partopt's own gzip-compressed binary format, not Go gob)
  DIR/report.json      "method", "boundary", "model", "variables", "free_variables",
                       "persistent_variables" (among the free ones),
                       "persistent_fraction" (the paper's score: 1 − Σ ln|X_v| over
                       the non-persistent free v / Σ ln|X_v| over all free v),
                       "fraction" (persistent_variables / free_variables),
                       "pruning_iterations", "solver_iterations", "lower_bound",
                       "energy", "gap", "certificate_gap", "verified", "seconds",
                       "solver_seconds", and the evidence, solver and options used

--boundary selects the boundary potentials: invariant (the default; the paper's §6,
never weaker) or original (eq. 3.4). The relaxation is solved with the options
below by TRW-S for pairwise models and by SRMP (method srmp) for models with
factors of order > 2; report.json's "solver" says which.
"energy" is the energy of labels.sol as "partopt energy MODEL DIR/labels.sol"
prints it; "lower_bound" is the bound of the first relaxed solve (on the whole
model), recomputed in float64 from its dual as the trws method does (valid up to
float64 rounding); "gap" is energy − lower_bound;
"certificate_gap" is energy − bound of the proof on the final sub-problem (at
most 1e-9 relative: a proof with a larger gap is rejected). "verified" is true: the
result was re-checked from the model (persistency.Verify) before anything was
written. "seconds" is the time of the method, "solver_seconds" the part spent in
the relaxation solver. On a terminal a status line on stderr shows the pruning
iteration, |A| (the variables still candidates) and the bound; otherwise stderr
stays quiet. The last line of stdout is
  persistent <persistent_fraction> variables <k>/<free> iterations <pruning> energy <E> bound <B> gap <certificate_gap>
Ctrl-C (SIGINT) or SIGTERM stops pbp with nothing written and exit code 1: a
partial run proves nothing.

Method trws is sequential tree-reweighted message passing (TRW-S) on the local
polytope relaxation; it needs a pairwise model (factors of order <= 2). Method
srmp is Kolmogorov's sequential reweighted message passing, the same relaxation
for factors of any order (on pairwise models it is TRW-S, in float64). Both write

  DIR/labels.sol   the best labeling found (as above)
  DIR/report.json  "method", "model", "variables", "lower_bound", "energy", "gap",
                   "agreeing_fraction", "agreement", "iterations", "stop",
                   "seconds", and the evidence, free variables, agreeing count
                   and options used

It stops when energy - bound <= --gap-tolerance * max(1, |energy|), when every
variable agrees (the labeling is then optimal), when neither the bound nor the
agreement improved for --stall-iterations iterations, or after --max-iterations.
--gap-tolerance 0 disables the early stops: exactly --max-iterations iterations run.
(pbp uses the same options for each of its TRW-S or SRMP solves.)

"energy" is the energy of labels.sol on MODEL, as "partopt energy MODEL
DIR/labels.sol" prints it; "lower_bound" <= the minimum energy (computed in
float64 from the solver's final dual, valid up to float64 rounding), both with the
evidence applied; "gap" is energy - lower_bound. "agreeing_fraction" is the
fraction of the solved (free) variables whose relaxed solution is locally
integral and consistent with their neighbours (1 for a model with no free
variable); "agreement" says all are. "seconds" is the solver's time, loading
excluded. On a terminal a status line on stderr shows the progress; otherwise
stderr stays quiet. Ctrl-C (SIGINT) or SIGTERM stops the solver early: the outputs
of the work done are written, "stop" is "canceled", a note on stderr says so, and
the exit code is 0. The last line of stdout is the summary
  energy <E> bound <B> gap <G> agreeing <fraction> iterations <n> stop <reason>

Windows (pbp with --window N, and always for .grid files): the model is covered
by overlapping windows, each solved by pbp with boundary potentials on the factors
that leave it, and the windows' persistent labels are merged in plan order (later
windows win on overlaps), which is itself persistent: the result depends only on
the model and the flags, never on --workers or on the order windows finish. Up to
--rounds rounds run, each on what is left (proven labels fixed) with windows shifted
by half a window; a round that proves nothing new ends the run.

A raster grid (a .grid file, or a model whose factors form a 4-connected W×H grid)
is cut into N×N-pixel tiles (default 512 for .grid files) extended by --halo pixels
(default 32) and solved out of core: only the windows being solved are in memory
(about 1 GB per worker for 512+32 windows of 4 labels), the labels live in files:

  DIR/labels.plf       a full labeling (partopt label file: tiled, CRC32C per tile;
                       package model/labelfile): the persistent labels, elsewhere the
                       relaxed labeling of the window whose core holds the pixel
  DIR/persistent.plf   label+1 for each persistent (or observed) pixel, 0 elsewhere
  DIR/persistency.png  the labeling in grey, non-persistent pixels in red, down-
                       sampled to at most --png-max pixels a side (block averages)
  DIR/labels.sol, DIR/persistent.evid   as above, when the model has at most 2^22
                       variables
  DIR/report.json      "plan" ("raster"), "width", "height", "window", "halo",
                       "workers", "max_rounds", "rounds", "windows",
                       "windows_solved" (those with a free pixel), the counts and
                       fractions above, "energy" (of labels.sol, when written),
                       "verified" (every window's certificate was checked),
                       "seconds", "window_seconds" (summed over workers),
                       "variables_per_second", "peak_rss_bytes"

Any other model is cut into connected regions of N variables grown by breadth-first
search, extended by --halo graph steps (default 2), solved in memory, re-verified as
a whole, and written as labels.sol, persistent.evid and report.json ("plan"
"regions"). There is no certificate.gob for windowed runs: "partopt verify" checks
whole-model proofs only. Progress: on a terminal a status line shows the round,
the windows merged, the persistent fraction so far and the round's ETA; otherwise
the same line is logged to stderr once a minute. An interrupted windowed run writes
nothing and exits 1. MODEL.evid applies as above (for .grid files too).

For both methods: JSON numbers cannot be infinite, so a forbidden energy (and its
gap) is written as the string "+Inf", a bound of no finished iteration as "-Inf".
When MODEL.evid exists it is applied (the observed variables are conditioned on)
and a note says so on stderr; --no-evid ignores it. Exit codes: 0 success, 2 bad
input (with a one-line message), 1 internal error or interrupted pbp run.`

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
}

func newSolveCmd() *cobra.Command {
	var f solveFlags
	cmd := &cobra.Command{
		Use:   "solve MODEL -o DIR",
		Short: "Prove persistent labels (pbp) or solve the relaxation (trws); write labels.sol, report.json, ...",
		Long:  solveHelp,
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
	view := newProgress(cmd.ErrOrStderr(), s.Windowed())
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
		fl.StringVar(&f.method, "method", string(job.PBP), "solver: "+methodList())
		fl.IntVar(&f.window, "window", 0, "solve by windows: core side in pixels for raster grids, variables per region otherwise (0: the whole model; .grid files: 512)")
	} else {
		fl.IntVar(&f.window, "window", job.DefaultRasterWindow, "core side of the windows in pixels")
	}
	fl.IntVar(&f.workers, "workers", runtime.NumCPU(), "windows solved at once")
	fl.StringVar(&f.boundary, "boundary", persistency.Invariant.String(), "pbp boundary potentials: invariant or original")
	fl.StringVarP(&f.output, "output", "o", "", "output directory (required; created if missing)")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "iteration cap per solve (0: the solver's own, 1500 for TRW-S and 10000 for SRMP)")
	fl.Float64Var(&f.gapTolerance, "gap-tolerance", def.GapTolerance, "stop when the relative gap is this small; 0 runs exactly --max-iterations")
	fl.IntVar(&f.stallIterations, "stall-iterations", def.StallIterations, "stop after this many iterations without progress; 0 disables")
	fl.IntVar(&f.checkEvery, "check-every", def.CheckEvery, "compute the labeling and agreement every this many iterations")
	fl.BoolVar(&f.noEvid, "no-evid", false, "ignore MODEL.evid")
	fl.IntVar(&f.halo, "halo", job.DefaultRasterHalo, "window halo: pixels for raster grids, graph steps otherwise (there 2 unless given)")
	fl.IntVar(&f.rounds, "rounds", job.DefaultRounds, "at most this many rounds of windows (each on what is left, with shifted windows)")
	fl.IntVar(&f.pngMax, "png-max", job.DefaultPNGSide, "largest side of persistency.png (larger grids are downsampled)")
	cmd.MarkFlagRequired("output")
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
	case !slices.Contains(job.Methods, job.Method(f.method)):
		return fmt.Errorf("unknown --method %q (available: %s)", f.method, methodList())
	case f.method != string(job.PBP) && f.method != string(job.PBPIRI) && f.boundary != persistency.Invariant.String():
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
	case f.window > 0 && f.method != string(job.PBP):
		return fmt.Errorf("--window: only --method pbp solves by windows")
	case f.halo < 0:
		return fmt.Errorf("--halo %d: want at least 0", f.halo)
	case f.workers < 1:
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	case f.rounds < 1:
		return fmt.Errorf("--rounds %d: want at least 1", f.rounds)
	case f.pngMax < 1:
		return fmt.Errorf("--png-max %d: want at least 1", f.pngMax)
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
	switch {
	case !f.haloSet:
		s.Halo = 0 // the layout's default
	case f.halo == 0:
		s.Halo = job.NoHalo
	}
	return s
}
