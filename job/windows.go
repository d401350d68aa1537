package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// WindowsReport is report.json of a windowed run (methods pbp, iri, pbp+iri).
type WindowsReport struct {
	Method              string  `json:"method"`
	Boundary            string  `json:"boundary,omitempty"`
	Model               string  `json:"model"`
	Evidence            string  `json:"evidence,omitempty"`
	Plan                string  `json:"plan"` // raster or regions
	Width               int     `json:"width,omitempty"`
	Height              int     `json:"height,omitempty"`
	Window              int     `json:"window"`
	Halo                int     `json:"halo"`
	Workers             int     `json:"workers"`
	MaxRounds           int     `json:"max_rounds"`
	Rounds              int     `json:"rounds"`
	Level               int     `json:"level,omitempty"` // label elimination: windows of the last round were Window·2^Level (see partition.EliminateOptions)
	Windows             int     `json:"windows"`
	WindowsSolved       int     `json:"windows_solved"`
	MaxWindowVariables  int     `json:"max_window_variables,omitempty"`
	Observed            int     `json:"observed"`
	Variables           int64   `json:"variables"`
	FreeVariables       int64   `json:"free_variables"`
	PersistentVariables int64   `json:"persistent_variables"`
	PersistentFraction  float64 `json:"persistent_fraction"`
	Fraction            float64 `json:"fraction"`
	PruningIterations   int     `json:"pruning_iterations"`
	SolverIterations    int     `json:"solver_iterations"`
	Energy              *Float  `json:"energy,omitempty"`
	Verified            bool    `json:"verified"`
	Seconds             float64 `json:"seconds"`
	WindowSeconds       float64 `json:"window_seconds,omitempty"`
	VariablesPerSecond  float64 `json:"variables_per_second"`
	PeakRSSBytes        int64   `json:"peak_rss_bytes,omitempty"`
	// Label elimination (method iri): the labels of the free variables proven
	// unnecessary, and their fraction of Σ(|X_v| − 1).
	EliminatedLabels        *int     `json:"eliminated_labels,omitempty"`
	EliminatedLabelFraction *float64 `json:"eliminated_label_fraction,omitempty"`
	// PBPPersistentVariables (pbp+iri) are those Algorithm 1's windows proved,
	// before the elimination; the rounds and window counters are of both stages
	// (MaxRounds and Level the elimination's).
	PBPPersistentVariables *int64   `json:"pbp_persistent_variables,omitempty"`
	LostWindows            []string `json:"lost_windows,omitempty"`
	Outputs                []string `json:"outputs"`
	CompletionFields
	Provenance
}

// summary is the last line of a windowed run.
func (rep *WindowsReport) summary() string {
	return fmt.Sprintf("persistent %.6g variables %d/%d windows %d rounds %d seconds %.3g",
		rep.PersistentFraction, rep.PersistentVariables, rep.FreeVariables, rep.Windows, rep.Rounds, rep.Seconds)
}

// rasterJob is a raster model to solve by windows.
type rasterJob struct {
	raster partition.Raster
	labels int      // K of the label files (the largest label count)
	in     *Problem // the model and evidence when in memory, else nil
	ev     uai.Evidence
	evPath string
	// energy, when set, computes the energy of a full labeling.
	energy func(x []int) (float64, error)
}

// solveWindowed is pbp by windows: a raster by tiles, out of core (a .grid file,
// or a model on a 4-connected grid), any other model by regions in memory.
func (r *runner) solveWindowed(ctx context.Context) (*Result, error) {
	s := r.spec
	if IsGridFile(s.Model) {
		g, err := grid.Open(s.Model)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		h := g.Header()
		job := rasterJob{labels: h.Labels, raster: partition.Raster{Width: h.Width, Height: h.Height, Window: g.Window}}
		if job.ev, job.evPath, err = gridEvidence(s.Model, h, s.NoEvidence); err != nil {
			return nil, err
		}
		if int64(h.Width*h.Height) <= uaiOutputLimit {
			job.energy = func(x []int) (float64, error) {
				m, err := g.Model()
				if err != nil {
					return 0, err
				}
				return m.Energy(x), nil
			}
		}
		return r.solveRaster(ctx, job)
	}
	p, err := LoadProblem(s.Model, s.NoEvidence)
	if err != nil {
		return nil, err
	}
	w, h, ok := rasterDims(p.Model)
	if !ok {
		return r.solveRegions(ctx, p)
	}
	job := rasterJob{labels: maxLabels(p.Model), in: p,
		energy: func(x []int) (float64, error) { return p.Model.Energy(x), nil }}
	if job.raster, err = partition.RasterOf(p.Model, w, h); err != nil {
		return nil, Internal(err)
	}
	if p.Evidence != nil {
		job.evPath, job.ev = p.Evidence.Path, evidenceOf(p.Evidence.Fixed)
	}
	return r.solveRaster(ctx, job)
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

// windowsFailed is the error of a windowed run that failed: interrupted,
// a damaged model file (bad input), or internal.
func windowsFailed(ctx context.Context, err error, dir string) error {
	switch {
	case ctx.Err() != nil:
		return Internal(fmt.Errorf("interrupted before the windows were all solved: nothing was written to %s", dir))
	case errors.Is(err, grid.ErrCorrupt):
		return err
	}
	return Internal(err)
}

// solveRaster solves a raster job with label files in the output directory.
func (r *runner) solveRaster(ctx context.Context, job rasterJob) (*Result, error) {
	s := r.spec
	if job.evPath != "" {
		r.note(fmt.Sprintf("applied evidence %s (%d observed variables); --no-evid ignores it", job.evPath, job.ev.Len()))
	}
	if err := PrepareOutput(s.Output); err != nil {
		return nil, err
	}
	w, h := job.raster.Width, job.raster.Height
	window, halo := s.Window, s.halo(DefaultRasterHalo)
	if window == 0 {
		window = DefaultRasterWindow
	}
	st, certs, err := newWindowedStage(s.Output)
	if err != nil {
		return nil, err
	}
	defer st.abort()
	defer certs.f.Close()
	files, err := newRasterFiles(st.dir, labelfile.Header{Width: w, Height: h, Labels: job.labels})
	if err != nil {
		return nil, Internal(err)
	}
	defer files.remove()
	for i, v := range job.ev.Vars {
		if err := files.persistent.WriteRect(v%w, v/w, 1, 1, []int32{int32(job.ev.Labels[i] + 1)}); err != nil {
			return nil, Internal(err)
		}
	}

	n := int64(w) * int64(h)
	progress := r.windowProgress(n)
	opt := partition.RasterOptions{Core: window, Halo: halo, Persistency: s.persistency(), Workers: s.Workers, MaxRounds: s.Rounds, Progress: progress, Proofs: certs.w}
	start := time.Now()
	out := &Outcome{}
	if r.opt.Runtime != nil {
		if w*h == 0 {
			return nil, Internal(errors.New("empty raster"))
		}
		d := &Distributed{ModelPath: s.Model, Raster: job.raster, Persistent: files.persistent, Labeling: files.labels,
			Scratch: files.scratch, PNG: files.live, Progress: progress, Proofs: certs.w}
		if d.Spec, err = s.wire(false, w, h, job.labels); err == nil {
			out, err = r.opt.Runtime.Windows(ctx, d)
		}
	} else {
		var res *partition.RasterResult
		if res, err = partition.SolveRaster(ctx, job.raster, files.persistent, files.labels, files.scratch, opt); err == nil {
			out.RasterResult = *res
		}
	}
	if err != nil {
		return nil, windowsFailed(ctx, err, s.Output)
	}
	seconds := seconds(start, out)
	// What pbp leaves undecided keeps every label: complete it there.
	completed, completedSummary, err := r.completeRaster(ctx, job.raster, partition.PersistentAlive(files.persistent, job.labels), files.labels)
	if err != nil {
		return nil, err
	}
	if err := files.finish(); err != nil {
		return nil, Internal(err)
	}
	if err := certs.finish(); err != nil {
		return nil, Internal(err)
	}

	res := out.RasterResult
	observed := int64(job.ev.Len())
	rep := &WindowsReport{
		Method: string(PBP), Boundary: s.Boundary.String(), Model: r.modelName(), Evidence: job.evPath,
		Plan: "raster", Width: w, Height: h, Window: window, Halo: halo,
		Workers: r.workers(out), MaxRounds: s.Rounds, Rounds: res.Rounds,
		Windows: res.Windows, WindowsSolved: res.Solved, MaxWindowVariables: res.MaxWindowVars,
		Observed: job.ev.Len(), Variables: n, FreeVariables: n - observed,
		PersistentVariables: res.Persistent - observed,
		PruningIterations:   res.PruningIterations, SolverIterations: res.SolverIterations,
		Verified: true, Seconds: seconds, WindowSeconds: res.WindowSeconds,
		VariablesPerSecond: float64(n) / seconds, PeakRSSBytes: peakRSS(),
		Provenance: r.provenance(out), LostWindows: out.Lost,
		Outputs:          []string{LabelTilesFile, PersistentTilesFile, PersistencyPNG, WindowCertificatesFile},
		CompletionFields: completed,
	}
	rep.Fraction = fraction(rep.PersistentVariables, rep.FreeVariables)
	rep.PersistentFraction = rep.Fraction // one label count: the paper's score is the fraction
	outputs := []output{{name: PersistencyPNG, write: func(w io.Writer) error { return files.png(w, s.PNGMax) }}}
	if n <= uaiOutputLimit {
		x, proven, err := files.read()
		if err != nil {
			return nil, Internal(err)
		}
		if job.in != nil {
			rep.PersistentFraction, _ = persistency.Score(job.in.Solved, job.in.Restrict(proven))
		}
		if job.energy != nil {
			e, err := job.energy(x)
			if err != nil {
				return nil, Internal(err)
			}
			rep.Energy = (*Float)(&e)
		}
		outputs = append(outputs, uaiOutputs(x, evidenceOf(proven))...)
		rep.Outputs = append(rep.Outputs, LabelsFile, PersistentFile)
		if completed.Optimal != nil && *completed.Optimal {
			outputs = append(outputs, output{name: OptimalFile, write: func(w io.Writer) error { return uai.WriteSolution(w, x) }})
			rep.Outputs = append(rep.Outputs, OptimalFile)
		}
	}
	if err := st.writeOutputs(outputs, rep); err != nil {
		return nil, Internal(err)
	}
	return &Result{Report: rep, Summary: rep.summary() + completedSummary}, nil
}

func fraction(k, n int64) float64 {
	if n == 0 {
		return 1
	}
	return float64(k) / float64(n)
}

// windowProgress is the progress callback of a windowed run over n variables,
// nil without Options.Progress.
func (r *runner) windowProgress(n int64) func(partition.RasterProgress) {
	if r.opt.Progress == nil {
		return nil
	}
	return func(p partition.RasterProgress) {
		r.opt.Progress(Progress{Method: PBP, Variables: int(n), Windows: &p})
	}
}

// windowsProgress adapts a raster progress callback (nil: none) to in-memory
// windows' progress.
func windowsProgress(progress func(partition.RasterProgress)) func(partition.Progress) {
	if progress == nil {
		return nil
	}
	return func(q partition.Progress) {
		progress(partition.RasterProgress{Round: q.Round, WindowsDone: q.WindowsDone, Windows: q.Windows, Persistent: int64(q.Persistent)})
	}
}

// regionsOutcome is what a windowed solve of regions computed, over the solved
// model's variables.
type regionsOutcome struct {
	Outcome
	persistent, labeling []int
}

// solveRegions solves a model that is not a raster by BFS regions: in memory, or
// by the runtime as a graph job.
func (r *runner) solveRegions(ctx context.Context, p *Problem) (*Result, error) {
	s := r.spec
	r.noteEvidence(p.Evidence)
	if err := PrepareOutput(s.Output); err != nil {
		return nil, err
	}
	window, halo := s.Window, s.halo(DefaultRegionHalo)
	n := p.Solved.NumVars()
	progress := r.windowProgress(int64(n))
	st, certs, err := newWindowedStage(s.Output)
	if err != nil {
		return nil, err
	}
	defer st.abort()
	defer certs.f.Close()
	start := time.Now()
	var out *regionsOutcome
	if r.opt.Runtime != nil && n > 0 { // nothing to distribute when every variable is observed
		out, err = r.distributeRegions(ctx, p, progress, certs.w)
	} else {
		out, err = solveRegionsHere(ctx, p, s, window, halo, progress, certs.w)
	}
	if err != nil {
		return nil, windowsFailed(ctx, err, s.Output)
	}
	if err := certs.finish(); err != nil {
		return nil, Internal(err)
	}
	seconds := seconds(start, &out.Outcome)
	k := int64(persistency.Count(out.persistent))
	score, _ := persistency.Score(p.Solved, out.persistent)
	done, err := r.completeWhole(ctx, p, (&persistency.Result{Persistent: out.persistent}).Domains(p.Solved), out.labeling)
	if err != nil {
		return nil, err
	}
	energy := p.Solved.Energy(done.labeling)
	res := out.RasterResult
	rep := &WindowsReport{
		Method: string(PBP), Boundary: s.Boundary.String(), Model: r.modelName(), Plan: "regions",
		Window: window, Halo: halo, Workers: r.workers(&out.Outcome), MaxRounds: s.Rounds,
		Rounds: res.Rounds, Windows: res.Windows, WindowsSolved: res.Solved,
		MaxWindowVariables: res.MaxWindowVars, PruningIterations: res.PruningIterations, SolverIterations: res.SolverIterations,
		Variables: int64(p.Model.NumVars()), FreeVariables: int64(n), PersistentVariables: k,
		PersistentFraction: score, Fraction: fraction(k, int64(n)),
		Energy: (*Float)(&energy), Verified: true, Seconds: seconds, WindowSeconds: res.WindowSeconds,
		VariablesPerSecond: float64(n) / seconds, PeakRSSBytes: peakRSS(),
		Provenance: r.provenance(&out.Outcome), LostWindows: out.Lost,
		CompletionFields: done.fields,
	}
	if p.Evidence != nil {
		rep.Evidence, rep.Observed = p.Evidence.Path, p.observed()
	}
	outputs := append(uaiOutputs(p.Extend(done.labeling), evidenceOf(p.Proven(out.persistent))), done.files...)
	rep.Outputs = append(append([]string{LabelsFile, PersistentFile}, names(done.files)...), WindowCertificatesFile)
	if err := st.writeOutputs(outputs, rep); err != nil {
		return nil, Internal(err)
	}
	return &Result{Report: rep, Summary: rep.summary() + done.summary}, nil
}

// solveRegionsHere is partition.Solve with BFS regions (shifted by half a region
// per round), its proofs re-verified and written to certs.
func solveRegionsHere(ctx context.Context, p *Problem, s Spec, window, halo int, progress func(partition.RasterProgress), certs *partition.ProofWriter) (*regionsOutcome, error) {
	opt := partition.Options{
		Plan: func(round int) partition.Plan {
			return partition.RegionPlan(p.Solved, window, halo, partition.RegionShift(round, window))
		},
		Persistency: s.persistency(), Workers: s.Workers, MaxRounds: s.Rounds,
	}
	opt.Progress = windowsProgress(progress)
	res, err := partition.Solve(ctx, p.Solved, opt)
	if err != nil {
		return nil, err
	}
	if err := partition.Check(p.Solved, res); err != nil {
		return nil, fmt.Errorf("the result failed its own verification: %w", err)
	}
	out := &regionsOutcome{persistent: res.Persistent, labeling: res.Labeling}
	out.Rounds, out.Windows = res.Rounds, res.Windows
	for _, q := range res.Proofs {
		if len(q.Vars) > 0 {
			out.Solved++
			if err := certs.Graph(q.Round, q.Nodes, q.Result); err != nil {
				return nil, err
			}
		}
		out.PruningIterations += q.Result.PruningIterations
		out.SolverIterations += q.Result.SolverIterations
		out.MaxWindowVars = max(out.MaxWindowVars, len(q.Vars))
	}
	return out, nil
}

// distributeRegions is solveRegionsHere's work done by the runtime as a graph
// job: the same plans, merged in the same order, so the same labels.
func (r *runner) distributeRegions(ctx context.Context, p *Problem, progress func(partition.RasterProgress), certs *partition.ProofWriter) (*regionsOutcome, error) {
	n := p.Solved.NumVars()
	spec, err := r.spec.wire(true, n, 1, maxLabels(p.Solved))
	if err != nil {
		return nil, err
	}
	pers, lab, scratch := partition.NewMemStore(n, 1), partition.NewMemStore(n, 1), partition.NewMemStore(n, 1)
	d := &Distributed{Spec: spec, ModelPath: p.Path, Graph: p.Solved, Persistent: pers, Labeling: lab, Scratch: scratch, Progress: progress, Proofs: certs}
	if p.Evidence != nil {
		d.EvidencePath = p.Evidence.Path
	}
	o, err := r.opt.Runtime.Windows(ctx, d)
	if err != nil {
		return nil, err
	}
	out := &regionsOutcome{Outcome: *o, persistent: make([]int, n), labeling: make([]int, n)}
	for v := range n {
		out.persistent[v], out.labeling[v] = int(pers.Values[v])-1, int(lab.Values[v])
	}
	return out, nil
}
