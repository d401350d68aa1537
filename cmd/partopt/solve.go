// The solve command: run a MAP solver on a model, write the labeling and a report.
//
// Dependency: golang.org/x/term, the Go project's terminal package (maintained with
// the standard library; its only dependency is golang.org/x/sys). It tells whether
// stderr is a terminal, and how wide, so that progress is shown to a person watching
// and never written into logs or redirected output. The progress display itself is
// one \r-updated status line, a few lines below: a progress-bar library would add
// dependencies and draw a bar towards --max-iterations, which TRW-S rarely reaches
// (it stops on gap, agreement or stall), so the bar would mislead.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/srmp"
	"github.com/partopt/partopt/trws"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// solveMethods are the values of --method; defaultSolveMethod is the default.
var solveMethods = []string{"pbp", "trws", "srmp"}

const defaultSolveMethod = "pbp"

// Output files of solve, in DIR; pbp writes all four, trws the first two.
const (
	labelsFile      = "labels.sol"
	reportFile      = "report.json"
	persistentFile  = "persistent.evid"
	certificateFile = "certificate.gob"
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
	// embedded, when set, runs the windows over an embedded NATS cluster (run).
	embedded *embeddedRun
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
			return runSolve(cmd, args[0], f)
		},
	}
	addSolveFlags(cmd, &f, true)
	return cmd
}

// addSolveFlags defines the flags of solve (with --method) and of run.
func addSolveFlags(cmd *cobra.Command, f *solveFlags, method bool) {
	// The CLI's defaults are part of its contract, so they are spelled out here rather
	// than taken from trws.DefaultOptions (which they equal today).
	def := trws.Options{GapTolerance: 1e-9, StallIterations: 100, StallTolerance: 1e-7, CheckEvery: 5}
	fl := cmd.Flags()
	if method {
		fl.StringVar(&f.method, "method", defaultSolveMethod, "solver: "+strings.Join(solveMethods, ", "))
		fl.IntVar(&f.window, "window", 0, "solve by windows: core side in pixels for raster grids, variables per region otherwise (0: the whole model; .grid files: 512)")
	} else {
		fl.IntVar(&f.window, "window", defaultRasterWindow, "core side of the windows in pixels")
	}
	fl.StringVar(&f.boundary, "boundary", persistency.Invariant.String(), "pbp boundary potentials: invariant or original")
	fl.StringVarP(&f.output, "output", "o", "", "output directory (required; created if missing)")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "iteration cap per solve (0: the solver's own, 1500 for TRW-S and 10000 for SRMP)")
	fl.Float64Var(&f.gapTolerance, "gap-tolerance", def.GapTolerance, "stop when the relative gap is this small; 0 runs exactly --max-iterations")
	fl.IntVar(&f.stallIterations, "stall-iterations", def.StallIterations, "stop after this many iterations without progress; 0 disables")
	fl.IntVar(&f.checkEvery, "check-every", def.CheckEvery, "compute the labeling and agreement every this many iterations")
	fl.BoolVar(&f.noEvid, "no-evid", false, "ignore MODEL.evid")
	fl.IntVar(&f.halo, "halo", defaultRasterHalo, "window halo: pixels for raster grids, graph steps otherwise (there 2 unless given)")
	fl.IntVar(&f.workers, "workers", runtime.NumCPU(), "windows solved at once")
	fl.IntVar(&f.rounds, "rounds", defaultRounds, "at most this many rounds of windows (each on what is left, with shifted windows)")
	fl.IntVar(&f.pngMax, "png-max", defaultPNGSide, "largest side of persistency.png (larger grids are downsampled)")
	cmd.MarkFlagRequired("output")
}

func (f solveFlags) validate() error {
	switch {
	case !slices.Contains(solveMethods, f.method):
		return fmt.Errorf("unknown --method %q (available: %s)", f.method, strings.Join(solveMethods, ", "))
	case f.method != "pbp" && f.boundary != persistency.Invariant.String():
		return fmt.Errorf("--boundary %s: only --method pbp has boundary potentials", f.boundary)
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
	case f.window > 0 && f.method != "pbp":
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

// trwsOptions are the solver options of the flags; MaxIterations 0 stands for the
// solver's own cap (capFor resolves it).
func (f solveFlags) trwsOptions() trws.Options {
	opt := trws.DefaultOptions()
	opt.MaxIterations = f.maxIterations
	opt.GapTolerance = f.gapTolerance
	opt.StallIterations = f.stallIterations
	opt.CheckEvery = f.checkEvery
	return opt
}

// capFor returns opt with MaxIterations 0 resolved to the cap of the named solver
// ("trws" or "srmp").
func capFor(opt trws.Options, solver string) trws.Options {
	if opt.MaxIterations == 0 {
		opt.MaxIterations = trws.DefaultOptions().MaxIterations
		if solver == "srmp" {
			opt.MaxIterations = srmp.DefaultMaxIterations
		}
	}
	return opt
}

// solveReport is report.json.
type solveReport struct {
	Method           string        `json:"method"`
	Model            string        `json:"model"`
	Evidence         string        `json:"evidence,omitempty"`
	Observed         int           `json:"observed"`
	Variables        int           `json:"variables"`
	FreeVariables    int           `json:"free_variables"`
	LowerBound       jsonFloat     `json:"lower_bound"`
	Energy           jsonFloat     `json:"energy"`
	Gap              jsonFloat     `json:"gap"`
	Agreeing         int           `json:"agreeing"`
	AgreeingFraction float64       `json:"agreeing_fraction"`
	Agreement        bool          `json:"agreement"`
	Iterations       int           `json:"iterations"`
	Stop             string        `json:"stop"`
	Seconds          float64       `json:"seconds"`
	Options          reportOptions `json:"options"`
}

type reportOptions struct {
	MaxIterations   int     `json:"max_iterations"`
	GapTolerance    float64 `json:"gap_tolerance"`
	StallIterations int     `json:"stall_iterations"`
	StallTolerance  float64 `json:"stall_tolerance"`
	CheckEvery      int     `json:"check_every"`
}

// jsonFloat is a float64 that encodes ±Inf and NaN, which JSON numbers cannot hold, as
// the strings "+Inf", "-Inf" and "NaN".
type jsonFloat float64

// MarshalJSON implements json.Marshaler.
func (x jsonFloat) MarshalJSON() ([]byte, error) {
	if f := float64(x); math.IsInf(f, 0) || math.IsNaN(f) {
		return json.Marshal(formatEnergy(f))
	}
	return json.Marshal(float64(x))
}

func runSolve(cmd *cobra.Command, modelPath string, f solveFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	if f.method == "pbp" && (f.window > 0 || isGridFile(modelPath)) {
		return runWindowed(cmd, modelPath, f)
	}
	in, err := loadProblem(modelPath, f.noEvid)
	if err != nil {
		return err
	}
	if f.method == "pbp" {
		return runPBP(cmd, in, f)
	}
	return runLP(cmd, in, f)
}

// lpSolver is what solve --method trws and srmp run: trws.Solver or srmp.Solver.
type lpSolver interface {
	Solve(ctx context.Context, opt trws.Options) (trws.Result, error)
	Bound() (float64, error)
}

// runLP is solve --method trws (pairwise models) and srmp (any order).
func runLP(cmd *cobra.Command, in *problem, f solveFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	modelPath, m, ev, c, solved := in.path, in.m, in.ev, in.c, in.solved
	if f.method == "trws" {
		if err := checkPairwise(solved, modelPath); err != nil {
			return err
		}
	}
	in.note(stderr)
	if err := prepareOutput(f.output); err != nil {
		return err
	}
	var s lpSolver
	var err error
	if f.method == "trws" {
		s, err = trws.New(solved)
	} else {
		s, err = srmp.New(solved)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", modelPath, err)
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt := capFor(f.trwsOptions(), f.method)
	status := newStatusLine(stderr, opt.MaxIterations)
	if status != nil {
		opt.Progress = status.update
	}
	res, err := s.Solve(ctx, opt)
	interrupted := ctx.Err() != nil // before stop, which cancels ctx
	stop()                          // a second Ctrl-C while the outputs are written ends the process
	status.clear()
	if err != nil && !interrupted {
		return internalError{err}
	}

	// A bound valid up to float64 rounding (Result.LowerBound sums float32 values).
	bound := res.LowerBound
	if res.Iterations > 0 {
		if bound, err = s.Bound(); err != nil {
			return internalError{err}
		}
	}
	// The energy as `partopt energy` computes it: with evidence, on the conditioned
	// model, whose offset holds the observed factors (and so does the bound's).
	x, energy := res.Labeling, solved.Energy(res.Labeling)
	if ev != nil {
		x = ev.extend(c, res.Labeling)
	}
	rep := solveReport{
		Method: f.method, Model: modelPath,
		Variables: m.NumVars(), FreeVariables: solved.NumVars(),
		LowerBound: jsonFloat(bound), Energy: jsonFloat(energy),
		Gap:      jsonFloat(energy - bound),
		Agreeing: res.Agreeing, AgreeingFraction: 1, Agreement: res.Agreement,
		Iterations: res.Iterations, Stop: res.Stop.String(), Seconds: res.Seconds,
		Options: reportOptions{opt.MaxIterations, opt.GapTolerance, opt.StallIterations, opt.StallTolerance, opt.CheckEvery},
	}
	if ev != nil {
		rep.Evidence, rep.Observed = ev.path, m.NumVars()-solved.NumVars()
	}
	if n := solved.NumVars(); n > 0 {
		rep.AgreeingFraction = float64(res.Agreeing) / float64(n)
	}
	if err := removeStale(f.output, []string{labelsFile}); err != nil {
		return internalError{err}
	}
	if err := writeFileAtomic(filepath.Join(f.output, labelsFile), func(w io.Writer) error {
		return uai.WriteSolution(w, x)
	}); err != nil {
		return internalError{err}
	}
	if err := writeFileAtomic(filepath.Join(f.output, reportFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}); err != nil {
		return internalError{err}
	}
	if res.Stop == trws.StopCanceled {
		fmt.Fprintf(stderr, "partopt: interrupted after %d iterations (stop canceled); wrote the best labeling found to %s\n", res.Iterations, f.output)
	}
	fmt.Fprintf(stdout, "energy %s bound %s gap %s agreeing %.6g iterations %d stop %s\n",
		formatEnergy(energy), formatEnergy(bound), formatEnergy(float64(rep.Gap)),
		rep.AgreeingFraction, res.Iterations, rep.Stop)
	return nil
}

// checkPairwise refuses models with factors of order > 2, which TRW-S cannot solve.
func checkPairwise(m *model.Model, name string) error {
	if high, top := higherOrder(m); high > 0 {
		return fmt.Errorf("%s: the trws method needs a pairwise model (factors of order ≤ 2), but %d factors have order > 2 (up to %d); --method srmp solves any order", name, high, top)
	}
	return nil
}

// prepareOutput creates dir if missing and checks that files can be written there,
// so that a bad -o fails before the solver runs rather than after.
func prepareOutput(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".partopt-probe-*")
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// writeFileAtomic writes path through a temporary file in the same directory and
// renames it into place, so readers never see a partial file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// statusLine shows the solver's progress on one terminal line, rewritten in place at
// most every `every`.
type statusLine struct {
	w       io.Writer
	width   int // terminal columns; the line is cut to width − 1
	maxIter int
	every   time.Duration
	now     func() time.Time
	last    time.Time
	shown   bool
	log     bool // not a terminal: whole lines, "partopt: " first, nothing to clear
}

// newStatusLine returns a status line on stderr when it is a terminal, else nil.
func newStatusLine(stderr io.Writer, maxIter int) *statusLine {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width < 20 {
		width = 80
	}
	return &statusLine{w: stderr, width: width, maxIter: maxIter, every: 100 * time.Millisecond, now: time.Now}
}

// update is the solver's Progress callback.
func (s *statusLine) update(p trws.Progress) {
	s.show(func() string { return progressText(p, s.maxIter) })
}

// show writes the line that text returns, unless a line was shown less than s.every
// ago (text is then not called).
func (s *statusLine) show(text func() string) {
	t := s.now()
	if s.shown && t.Sub(s.last) < s.every {
		return
	}
	s.last, s.shown = t, true
	line := text()
	if s.log {
		fmt.Fprintf(s.w, "partopt: %s\n", line)
		return
	}
	if len(line) > s.width-1 {
		line = line[:s.width-1]
	}
	fmt.Fprintf(s.w, "\r%s\x1b[K", line)
}

// clear erases the status line, if any was shown.
func (s *statusLine) clear() {
	if s != nil && s.shown && !s.log {
		fmt.Fprint(s.w, "\r\x1b[K")
	}
}

// progressText is the status line's text (ASCII, so that cutting it by bytes is safe).
func progressText(p trws.Progress, maxIter int) string {
	frac := 1.0
	if p.Variables > 0 {
		frac = float64(p.Agreeing) / float64(p.Variables)
	}
	return fmt.Sprintf("iter %d/%d  bound %.9g  energy %s  gap %.3g  agreeing %.1f%%",
		p.Iteration, maxIter, p.LowerBound, shortEnergy(p.Energy), p.Energy-p.LowerBound, math.Floor(frac*1000)/10)
}

func shortEnergy(e float64) string {
	if math.IsInf(e, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%.9g", e)
}
