// The windowed pbp method of solve: windows of a raster grid solved out of core
// (partition.SolveRaster over a .grid file or an in-memory raster model), or regions
// of any other model solved in memory (partition.Solve with RegionPlan).
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
	"slices"
	"syscall"
	"time"

	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/spf13/cobra"
)

// Output files of a windowed run of a raster model, besides labels.sol,
// persistent.evid (when small enough) and report.json.
const (
	labelTilesFile      = "labels.plf"
	persistentTilesFile = "persistent.plf"
	persistencyPNG      = "persistency.png"
)

// Defaults of the windowed run.
const (
	defaultRasterWindow = 512 // core side of a raster window, pixels
	defaultRasterHalo   = 32  // pixels
	defaultRegionHalo   = 2   // graph steps
	defaultRounds       = 3
	defaultPNGSide      = 2048
	// uaiOutputLimit is the most variables for which a windowed raster run also
	// writes labels.sol and persistent.evid (text files of ~2–10 bytes per variable).
	uaiOutputLimit = 1 << 22
	// windowLogEvery spaces the progress lines of a windowed run when stderr is
	// not a terminal.
	windowLogEvery = time.Minute
)

// isGridFile says whether path names a tiled grid model.
func isGridFile(path string) bool { return modelfile.IsGrid(path) }

// readModel reads a model file of any supported format into memory.
func readModel(path string) (*model.Model, error) { return modelfile.Read(path) }

// windowedReport is report.json of a windowed pbp run.
type windowedReport struct {
	Method              string     `json:"method"`
	Boundary            string     `json:"boundary"`
	Model               string     `json:"model"`
	Evidence            string     `json:"evidence,omitempty"`
	Plan                string     `json:"plan"` // raster or regions
	Width               int        `json:"width,omitempty"`
	Height              int        `json:"height,omitempty"`
	Window              int        `json:"window"`
	Halo                int        `json:"halo"`
	Workers             int        `json:"workers"`
	MaxRounds           int        `json:"max_rounds"`
	Rounds              int        `json:"rounds"`
	Windows             int        `json:"windows"`
	WindowsSolved       int        `json:"windows_solved"`
	MaxWindowVariables  int        `json:"max_window_variables,omitempty"`
	Observed            int        `json:"observed"`
	Variables           int64      `json:"variables"`
	FreeVariables       int64      `json:"free_variables"`
	PersistentVariables int64      `json:"persistent_variables"`
	PersistentFraction  float64    `json:"persistent_fraction"`
	Fraction            float64    `json:"fraction"`
	PruningIterations   int        `json:"pruning_iterations"`
	SolverIterations    int        `json:"solver_iterations"`
	Energy              *jsonFloat `json:"energy,omitempty"`
	Verified            bool       `json:"verified"`
	Seconds             float64    `json:"seconds"`
	WindowSeconds       float64    `json:"window_seconds,omitempty"`
	VariablesPerSecond  float64    `json:"variables_per_second"`
	PeakRSSBytes        int64      `json:"peak_rss_bytes,omitempty"`
	Runtime             string     `json:"runtime,omitempty"` // how windows were distributed: "nats-embedded" for run
	LostWindows         []string   `json:"lost_windows,omitempty"`
	Outputs             []string   `json:"outputs"`
}

// runWindowed is solve --method pbp with --window, or on a .grid file.
func runWindowed(cmd *cobra.Command, modelPath string, f solveFlags) error {
	variant, err := persistency.ParseVariant(f.boundary)
	if err != nil {
		return err
	}
	popt := persistency.Options{Variant: variant, Solver: persistency.Auto{Options: f.trwsOptions()}}
	if isGridFile(modelPath) {
		r, err := grid.Open(modelPath)
		if err != nil {
			return err
		}
		defer r.Close()
		h := r.Header()
		job := rasterJob{path: modelPath, labels: h.Labels,
			raster: partition.Raster{Width: h.Width, Height: h.Height, Window: r.Window}}
		if job.ev, job.evPath, err = gridEvidence(modelPath, h, f.noEvid); err != nil {
			return err
		}
		if h.Width*h.Height <= uaiOutputLimit {
			job.energy = func(x []int) (float64, error) {
				m, err := r.Model()
				if err != nil {
					return 0, err
				}
				return m.Energy(x), nil
			}
		}
		return runRaster(cmd, job, f, popt)
	}
	in, err := loadProblem(modelPath, f.noEvid)
	if err != nil {
		return err
	}
	if w, h, ok := grid.Dims(in.m); ok {
		job := rasterJob{path: modelPath, labels: maxLabels(in.m), in: in,
			energy: func(x []int) (float64, error) { return in.m.Energy(x), nil }}
		if job.raster, err = partition.RasterOf(in.m, w, h); err != nil {
			return internalError{err}
		}
		if in.ev != nil {
			job.evPath, job.ev = in.ev.path, evidenceOf(in.ev.fixed)
		}
		return runRaster(cmd, job, f, popt)
	}
	return runRegions(cmd, in, f, popt)
}

func maxLabels(m *model.Model) int {
	k := 1
	for _, l := range m.LabelCounts() {
		k = max(k, int(l))
	}
	return k
}

// gridEvidence reads MODEL.evid of a grid file, checked against its size and labels
// without a per-pixel array (a grid may have 10⁹ pixels).
func gridEvidence(modelPath string, h grid.Header, noEvid bool) (uai.Evidence, string, error) {
	path, ok := uai.EvidencePathFor(modelPath)
	if !ok || noEvid {
		return uai.Evidence{}, "", nil
	}
	ev, err := uai.ReadEvidenceFile(path)
	if err != nil {
		return ev, "", err
	}
	n := int64(h.Width) * int64(h.Height)
	for i, v := range ev.Vars {
		if int64(v) >= n || ev.Labels[i] >= h.Labels {
			return ev, "", fmt.Errorf("%s: observation %d (variable %d, label %d) is outside the %d×%d grid of %d labels", path, i+1, v, ev.Labels[i], h.Width, h.Height, h.Labels)
		}
	}
	return ev, path, nil
}

// rasterJob is a raster model to solve by windows.
type rasterJob struct {
	path   string
	raster partition.Raster
	labels int      // K of the label files (the largest label count)
	in     *problem // the model and evidence when in memory, else nil
	ev     uai.Evidence
	evPath string
	// energy, when set, computes the energy of a full labeling.
	energy func(x []int) (float64, error)
}

// runRaster solves a raster job with label files in the output directory.
func runRaster(cmd *cobra.Command, job rasterJob, f solveFlags, popt persistency.Options) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if job.evPath != "" {
		fmt.Fprintf(stderr, "partopt: applied evidence %s (%d observed variables); --no-evid ignores it\n", job.evPath, job.ev.Len())
	}
	if err := prepareOutput(f.output); err != nil {
		return err
	}
	w, h := job.raster.Width, job.raster.Height
	window, halo := f.window, f.halo
	if window == 0 {
		window = defaultRasterWindow
	}
	files, err := newRasterFiles(f.output, labelfile.Header{Width: w, Height: h, Labels: job.labels})
	if err != nil {
		return internalError{err}
	}
	defer files.remove()
	for i, v := range job.ev.Vars {
		if err := files.persistent.WriteRect(v%w, v/w, 1, 1, []int32{int32(job.ev.Labels[i] + 1)}); err != nil {
			return internalError{err}
		}
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	status := newWindowStatus(stderr, int64(w)*int64(h))
	opt := partition.RasterOptions{Core: window, Halo: halo, Persistency: popt, Workers: f.workers, MaxRounds: f.rounds}
	start := time.Now()
	var res *partition.RasterResult
	if f.embedded != nil {
		res, err = solveEmbedded(ctx, cmd, job, files, opt, f, status)
	} else {
		opt.Progress = status.update
		res, err = partition.SolveRaster(ctx, job.raster, files.persistent, files.labels, files.scratch, opt)
	}
	interrupted := ctx.Err() != nil // before stop, which cancels ctx
	stop()
	status.clear()
	if err != nil {
		if interrupted {
			return internalError{fmt.Errorf("interrupted before the windows were all solved: nothing was written to %s", f.output)}
		}
		if errors.Is(err, grid.ErrCorrupt) {
			return err // a damaged model file is bad input
		}
		return internalError{err}
	}
	seconds := time.Since(start).Seconds()
	if err := files.finish(); err != nil {
		return internalError{err}
	}

	n := int64(w) * int64(h)
	observed := int64(job.ev.Len())
	rep := windowedReport{
		Method: "pbp", Boundary: popt.Variant.String(), Model: job.path, Evidence: job.evPath,
		Plan: "raster", Width: w, Height: h, Window: window, Halo: halo,
		Workers: max(f.workers, 1), MaxRounds: f.rounds, Rounds: res.Rounds,
		Windows: res.Windows, WindowsSolved: res.Solved, MaxWindowVariables: res.MaxWindowVars,
		Observed: job.ev.Len(), Variables: n, FreeVariables: n - observed,
		PersistentVariables: res.Persistent - observed,
		PruningIterations:   res.PruningIterations, SolverIterations: res.SolverIterations,
		Verified: true, Seconds: seconds, WindowSeconds: res.WindowSeconds,
		VariablesPerSecond: float64(n) / seconds, PeakRSSBytes: peakRSS(),
		Outputs: []string{labelTilesFile, persistentTilesFile, persistencyPNG},
	}
	if f.embedded != nil {
		rep.Runtime, rep.LostWindows = "nats-embedded", f.embedded.lost
	}
	rep.Fraction = fraction(rep.PersistentVariables, rep.FreeVariables)
	rep.PersistentFraction = rep.Fraction // one label count: the paper's score is the fraction
	if err := writeFileAtomic(filepath.Join(f.output, persistencyPNG), func(out io.Writer) error {
		lab, pers, err := files.open()
		if err != nil {
			return err
		}
		defer lab.Close()
		defer pers.Close()
		return labelfile.RenderPNG(out, lab, pers, f.pngMax)
	}); err != nil {
		return internalError{err}
	}
	if n <= uaiOutputLimit {
		x, proven, err := files.read()
		if err != nil {
			return internalError{err}
		}
		if job.in != nil {
			rep.PersistentFraction, _ = persistency.Score(job.in.solved, job.in.restrict(proven))
		}
		if job.energy != nil {
			e, err := job.energy(x)
			if err != nil {
				return internalError{err}
			}
			rep.Energy = (*jsonFloat)(&e)
		}
		if err := writeUAIOutputs(f.output, x, evidenceOf(proven)); err != nil {
			return internalError{err}
		}
		rep.Outputs = append(rep.Outputs, labelsFile, persistentFile)
	}
	if err := removeStale(f.output, rep.Outputs); err != nil {
		return internalError{err}
	}
	if err := writeReport(f.output, rep); err != nil {
		return internalError{err}
	}
	fmt.Fprintf(stdout, "persistent %.6g variables %d/%d windows %d rounds %d seconds %.3g\n",
		rep.PersistentFraction, rep.PersistentVariables, rep.FreeVariables, rep.Windows, rep.Rounds, seconds)
	return nil
}

func fraction(k, n int64) float64 {
	if n == 0 {
		return 1
	}
	return float64(k) / float64(n)
}

// rasterFiles are the label files of a windowed run: written under temporary names
// and renamed into place by finish, so a failed or interrupted run leaves nothing.
type rasterFiles struct {
	dir                         string
	persistent, labels, scratch *labelfile.File
	done                        bool
}

func newRasterFiles(dir string, h labelfile.Header) (*rasterFiles, error) {
	fs := &rasterFiles{dir: dir}
	create := func(name string, kind labelfile.Kind) (*labelfile.File, error) {
		h.Kind = kind
		return labelfile.Create(filepath.Join(dir, ".partopt-"+name+".tmp"), h)
	}
	var err error
	if fs.persistent, err = create(persistentTilesFile, labelfile.Persistent); err == nil {
		if fs.labels, err = create(labelTilesFile, labelfile.Labeling); err == nil {
			fs.scratch, err = create("scratch.plf", labelfile.Persistent)
		}
	}
	if err != nil {
		fs.remove()
		return nil, err
	}
	return fs, nil
}

// finish closes the files (writing their checksums) and renames the outputs.
func (fs *rasterFiles) finish() error {
	for _, f := range []*labelfile.File{fs.persistent, fs.labels} {
		if err := f.Close(); err != nil {
			return err
		}
	}
	if err := os.Rename(fs.persistent.Name(), filepath.Join(fs.dir, persistentTilesFile)); err != nil {
		return err
	}
	fs.done = true
	return os.Rename(fs.labels.Name(), filepath.Join(fs.dir, labelTilesFile))
}

// remove deletes the scratch file, and the outputs unless finish renamed them.
func (fs *rasterFiles) remove() {
	for _, f := range []*labelfile.File{fs.scratch, fs.persistent, fs.labels} {
		if f == nil || (fs.done && f != fs.scratch) {
			continue
		}
		f.Close()
		os.Remove(f.Name())
	}
}

// open opens the finished outputs for reading.
func (fs *rasterFiles) open() (lab, pers *labelfile.File, err error) {
	if lab, err = labelfile.Open(filepath.Join(fs.dir, labelTilesFile)); err != nil {
		return nil, nil, err
	}
	if pers, err = labelfile.Open(filepath.Join(fs.dir, persistentTilesFile)); err != nil {
		lab.Close()
		return nil, nil, err
	}
	return lab, pers, nil
}

// read returns the whole labeling and the proven labels (−1 unproven).
func (fs *rasterFiles) read() (x, proven []int, err error) {
	lab, pers, err := fs.open()
	if err != nil {
		return nil, nil, err
	}
	defer lab.Close()
	defer pers.Close()
	h := lab.Header()
	buf := make([]int32, h.Width*h.Height)
	if err := lab.ReadRect(0, 0, h.Width, h.Height, buf); err != nil {
		return nil, nil, err
	}
	x = make([]int, len(buf))
	for i, l := range buf {
		x[i] = int(l)
	}
	if err := pers.ReadRect(0, 0, h.Width, h.Height, buf); err != nil {
		return nil, nil, err
	}
	proven = make([]int, len(buf))
	for i, p := range buf {
		proven[i] = int(p) - 1
	}
	return x, proven, nil
}

// writeUAIOutputs writes labels.sol and persistent.evid.
func writeUAIOutputs(dir string, x []int, ev uai.Evidence) error {
	if err := writeFileAtomic(filepath.Join(dir, persistentFile), func(w io.Writer) error { return uai.WriteEvidence(w, ev) }); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, labelsFile), func(w io.Writer) error { return uai.WriteSolution(w, x) })
}

// allOutputs are the files any solve may write in its output directory.
var allOutputs = []string{labelsFile, persistentFile, certificateFile, labelTilesFile, persistentTilesFile, persistencyPNG}

// removeStale deletes the outputs of an earlier solve into dir that this one does not
// write (keep), so that a directory never mixes the results of two runs.
func removeStale(dir string, keep []string) error {
	for _, name := range allOutputs {
		if slices.Contains(keep, name) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writeReport writes report.json, last: when it exists, the other outputs are complete.
func writeReport(dir string, rep any) error {
	return writeFileAtomic(filepath.Join(dir, reportFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
}

// regionsOutcome is what a windowed solve of regions computed, in memory
// (partition.Solve) or distributed (a graph job).
type regionsOutcome struct {
	persistent, labeling           []int // over the solved model's variables
	rounds, windows, solved        int
	pruning, solver, maxWindowVars int
	windowSeconds                  float64
}

// runRegions solves a model that is not a raster by BFS regions: in memory, or
// distributed as a graph job over NATS (run, and the coordinator command).
func runRegions(cmd *cobra.Command, in *problem, f solveFlags, popt persistency.Options) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	in.note(stderr)
	if err := prepareOutput(f.output); err != nil {
		return err
	}
	window, halo := f.window, f.halo
	if !f.haloSet {
		halo = defaultRegionHalo
	}
	n := in.solved.NumVars()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	status := newWindowStatus(stderr, int64(n))
	start := time.Now()
	var out *regionsOutcome
	var err error
	if f.embedded != nil && n > 0 { // nothing to distribute when every variable is observed
		out, err = solveGraphEmbedded(ctx, cmd, in, window, halo, f, popt.Variant.String(), status)
	} else {
		out, err = solveRegions(ctx, in, window, halo, f, popt, status)
	}
	interrupted := ctx.Err() != nil // before stop, which cancels ctx
	stop()
	status.clear()
	if err != nil {
		if interrupted {
			return internalError{fmt.Errorf("interrupted before the windows were all solved: nothing was written to %s", f.output)}
		}
		return internalError{err}
	}
	seconds := time.Since(start).Seconds()
	k := int64(count(out.persistent))
	score, _ := persistency.Score(in.solved, out.persistent)
	energy := in.solved.Energy(out.labeling)
	rep := windowedReport{
		Method: "pbp", Boundary: popt.Variant.String(), Model: in.path, Plan: "regions",
		Window: window, Halo: halo, Workers: max(f.workers, 1), MaxRounds: f.rounds,
		Rounds: out.rounds, Windows: out.windows, WindowsSolved: out.solved,
		MaxWindowVariables: out.maxWindowVars, PruningIterations: out.pruning, SolverIterations: out.solver,
		Variables: int64(in.m.NumVars()), FreeVariables: int64(n), PersistentVariables: k,
		PersistentFraction: score, Fraction: fraction(k, int64(n)),
		Energy: (*jsonFloat)(&energy), Verified: true, Seconds: seconds, WindowSeconds: out.windowSeconds,
		VariablesPerSecond: float64(n) / seconds, PeakRSSBytes: peakRSS(),
		Outputs: []string{labelsFile, persistentFile},
	}
	if f.embedded != nil {
		rep.Runtime, rep.LostWindows = "nats-embedded", f.embedded.lost
	}
	if in.ev != nil {
		rep.Evidence, rep.Observed = in.ev.path, in.m.NumVars()-n
	}
	ev := evidenceOf(provenLabels(in, out.persistent))
	if err := writeUAIOutputs(f.output, in.extend(out.labeling), ev); err != nil {
		return internalError{err}
	}
	if err := removeStale(f.output, rep.Outputs); err != nil {
		return internalError{err}
	}
	if err := writeReport(f.output, rep); err != nil {
		return internalError{err}
	}
	fmt.Fprintf(stdout, "persistent %.6g variables %d/%d windows %d rounds %d seconds %.3g\n",
		score, k, n, out.windows, out.rounds, seconds)
	return nil
}

// solveRegions is partition.Solve with BFS regions (shifted by half a region per
// round), its proofs re-verified.
func solveRegions(ctx context.Context, in *problem, window, halo int, f solveFlags, popt persistency.Options, status *windowStatus) (*regionsOutcome, error) {
	opt := partition.Options{
		Plan: func(round int) partition.Plan {
			return partition.RegionPlan(in.solved, window, halo, partition.RegionShift(round, window))
		},
		Persistency: popt, Workers: f.workers, MaxRounds: f.rounds,
	}
	if status != nil {
		opt.Progress = func(p partition.Progress) {
			status.update(partition.RasterProgress{Round: p.Round, WindowsDone: p.WindowsDone, Windows: p.Windows, Persistent: int64(p.Persistent)})
		}
	}
	res, err := partition.Solve(ctx, in.solved, opt)
	if err != nil {
		return nil, err
	}
	if err := partition.Check(in.solved, res); err != nil {
		return nil, fmt.Errorf("the result failed its own verification: %w", err)
	}
	out := &regionsOutcome{persistent: res.Persistent, labeling: res.Labeling, rounds: res.Rounds, windows: res.Windows}
	for _, p := range res.Proofs {
		if len(p.Vars) > 0 {
			out.solved++
		}
		out.pruning += p.Result.PruningIterations
		out.solver += p.Result.SolverIterations
		out.maxWindowVars = max(out.maxWindowVars, len(p.Vars))
	}
	return out, nil
}

// solveGraphEmbedded is solveRegions' work done as a graph job by a coordinator
// and workers over NATS: the same plans, merged in the same order, so the same
// labels.
func solveGraphEmbedded(ctx context.Context, cmd *cobra.Command, in *problem, window, halo int, f solveFlags, variant string, status *windowStatus) (*regionsOutcome, error) {
	spec, err := graphSpec(in, window, halo, f, variant)
	if err != nil {
		return nil, err
	}
	n := in.solved.NumVars()
	pers, lab, scratch := partition.NewMemStore(n, 1), partition.NewMemStore(n, 1), partition.NewMemStore(n, 1)
	job := embeddedJob{spec: spec, path: in.path, graph: in.solved,
		stores: coordinator.Stores{Persistent: pers, Labeling: lab, Scratch: scratch}}
	if in.ev != nil {
		job.evPath = in.ev.path
	}
	sum, err := runEmbedded(ctx, cmd, job, f, status)
	if err != nil {
		return nil, err
	}
	out := &regionsOutcome{persistent: make([]int, n), labeling: make([]int, n), rounds: sum.Rounds, windows: sum.WindowsTotal,
		solved: sum.Solved, pruning: sum.PruningIterations, solver: sum.SolverIterations, maxWindowVars: sum.MaxWindowVars,
		windowSeconds: sum.WindowSeconds}
	for v := range n {
		out.persistent[v], out.labeling[v] = int(pers.Values[v])-1, int(lab.Values[v])
	}
	return out, nil
}

// graphSpec is the graph job of a model that is not a raster: regions of window
// variables plus halo graph steps over the model conditioned on its evidence.
func graphSpec(in *problem, window, halo int, f solveFlags, variant string) (protocol.JobSpec, error) {
	n := in.solved.NumVars()
	if n == 0 {
		return protocol.JobSpec{}, fmt.Errorf("%s: every variable is observed: nothing to solve", in.path)
	}
	abs, err := filepath.Abs(in.path)
	if err != nil {
		return protocol.JobSpec{}, err
	}
	t := f.trwsOptions()
	spec := protocol.JobSpec{Job: newJobID(), Model: protocol.ModelRef{Path: abs}, Layout: protocol.LayoutGraph,
		Width: n, Height: 1, Labels: maxLabels(in.solved), Core: window, Halo: halo, MaxRounds: f.rounds, Variant: variant,
		TRWS: protocol.TRWSOptions{MaxIterations: t.MaxIterations, GapTolerance: t.GapTolerance,
			StallIterations: t.StallIterations, StallTolerance: t.StallTolerance, CheckEvery: t.CheckEvery},
		CreatedAt: time.Now()}
	return spec, spec.Validate()
}

func count(p []int) int {
	c := 0
	for _, l := range p {
		if l >= 0 {
			c++
		}
	}
	return c
}

// windowStatus is the status line of a windowed run: the round, windows merged, the
// persistent fraction so far and the round's ETA.
type windowStatus struct {
	line       *statusLine
	n          int64
	round      int
	roundStart time.Time // when the previous round's last window was merged
	last       time.Time
}

// newWindowStatus returns the status line on a terminal; elsewhere (a log) a line
// every windowLogEvery, since a windowed run may take hours.
func newWindowStatus(stderr io.Writer, n int64) *windowStatus {
	line := newStatusLine(stderr, 0)
	if line == nil {
		line = &statusLine{w: stderr, every: windowLogEvery, now: time.Now, log: true}
	}
	now := line.now()
	return &windowStatus{line: line, n: n, roundStart: now, last: now}
}

func (s *windowStatus) update(p partition.RasterProgress) {
	now := s.line.now()
	if p.Round != s.round {
		s.round, s.roundStart = p.Round, s.last
	}
	s.last = now
	s.line.show(func() string { return windowProgressText(p, s.n, now.Sub(s.roundStart)) })
}

func (s *windowStatus) clear() {
	if s != nil {
		s.line.clear()
	}
}

// windowProgressText is the status line's text after elapsed time in the round.
func windowProgressText(p partition.RasterProgress, n int64, elapsed time.Duration) string {
	eta := "-"
	if p.WindowsDone > 0 && p.WindowsDone < p.Windows {
		left := time.Duration(float64(elapsed) / float64(p.WindowsDone) * float64(p.Windows-p.WindowsDone))
		eta = left.Round(time.Second).String()
	}
	return fmt.Sprintf("round %d  windows %d/%d (%.1f%%)  persistent %.1f%%  ETA %s",
		p.Round+1, p.WindowsDone, p.Windows, 100*fraction(int64(p.WindowsDone), int64(p.Windows)),
		math.Floor(1000*fraction(p.Persistent, n))/10, eta)
}
