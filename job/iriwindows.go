package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
)

// eliminationPlans are the plans of windowed label elimination of the solved
// model m of p, by round and level: grid tiles for a raster model without
// evidence ("raster"), BFS regions otherwise ("regions"). A round that
// eliminates nothing or little (partition.Grows) raises the level: windows (and
// halos) twice the side on rasters, up to half the raster's side, and four times
// the size on graphs, until one holds the model (maxLevel).
type eliminationPlans struct {
	name     string // raster or regions
	halo     int
	maxLevel int
	plan     func(round, level int) partition.Plan
	raster   bool
	// windows are a raster plan's windows as rectangles (plan's, without the
	// node lists): what the out-of-core elimination works with.
	windows       func(round, level int) []partition.RasterWindow
	width, height int
}

// planElimination returns the plans of s on p.
func planElimination(s Spec, p *Problem) eliminationPlans {
	m, n, window := p.Solved, p.Solved.NumVars(), s.Window
	e := eliminationPlans{name: "regions", halo: s.halo(DefaultRegionHalo), maxLevel: levelHolding(window, n, 2)}
	e.plan = func(round, level int) partition.Plan {
		size := window << (2 * level)
		return partition.RegionPlan(m, size, e.halo<<level, partition.RegionShift(round, size))
	}
	if w, h, raster := rasterDims(m); raster && p.Evidence == nil {
		e = rasterEliminationPlans(s, w, h)
	}
	return e
}

// rasterEliminationPlans are the plans of s on a w×h raster: square tiles
// growing by level, shifted by half a tile a round.
func rasterEliminationPlans(s Spec, w, h int) eliminationPlans {
	window := s.Window
	// The windows grow to half the raster's side at most: one window over the
	// raster is whole-model label elimination on the labels left, the cost
	// windows are there to avoid (cones at 64+8: two such rounds, 224 s of
	// 458, for 2 more persistent pixels).
	top := levelHolding(window, max(w, h), 1)
	if top > 1 {
		top--
	}
	e := eliminationPlans{name: "raster", halo: s.halo(DefaultRasterHalo), maxLevel: top, raster: true, width: w, height: h}
	args := func(round, level int) (size, halo, shift int) {
		size, shift = window<<level, round*(window<<level)/2
		if size >= max(w, h) {
			shift = 0 // one window holds the raster
		}
		return size, e.halo << level, shift
	}
	e.plan = func(round, level int) partition.Plan {
		size, halo, shift := args(round, level)
		return partition.GridPlan(w, h, size, halo, shift)
	}
	e.windows = func(round, level int) []partition.RasterWindow {
		size, halo, shift := args(round, level)
		return partition.RasterWindows(w, h, size, halo, shift)
	}
	return e
}

// eliminateWindows is method iri by windows, in memory or by the runtime (an
// iri job: the same plans, merged in the same order, so the same outputs);
// every window's proof is re-checked (partition.CheckElimination here, the
// coordinator before each merge there) before anything is written. Method
// pbp+iri first runs pbp by windows over the same layout (pbpWindows): the
// elimination starts from its persistent labels, so it proves at least what
// pbp proves.
func (r *runner) eliminateWindows(ctx context.Context) (*Result, error) {
	s := r.spec
	if r.outOfCoreElimination() {
		return r.eliminateGrid(ctx)
	}
	p, err := LoadProblem(s.Model, s.NoEvidence)
	if err != nil {
		return nil, err
	}
	r.noteEvidence(p.Evidence)
	if err := PrepareOutput(s.Output); err != nil {
		return nil, err
	}
	m, n, window := p.Solved, p.Solved.NumVars(), s.Window
	plans := planElimination(s, p)
	progress := r.windowProgress(int64(n))
	st, certs, err := newWindowedStage(s.Output)
	if err != nil {
		return nil, err
	}
	defer st.abort()
	defer certs.f.Close()
	start := time.Now()
	out := &Outcome{}
	var pbp *regionsOutcome
	var domains [][]int // before the elimination: nil, every label
	if s.Method == PBPIRI && n > 0 {
		if pbp, err = r.pbpWindows(ctx, p, plans, progress, certs.w); err != nil {
			return nil, windowsFailed(ctx, err, s.Output)
		}
		domains = (&persistency.Result{Persistent: pbp.persistent}).Domains(m)
		out.RasterResult, out.Runtime, out.Workers, out.Lost, out.Started = pbp.RasterResult, pbp.Runtime, pbp.Workers, pbp.Lost, pbp.Started
	}
	el := &runner{spec: s.stage(IRI), opt: r.opt}
	var res *partition.Elimination
	if pbp != nil && persistency.Count(pbp.persistent) == n {
		// pbp proved every variable: nothing is left to eliminate.
		g, err := partition.NewMergerFrom(m, domains)
		if err != nil {
			return nil, Internal(err)
		}
		res = g.Result()
	} else if r.opt.Runtime != nil && n > 0 {
		var o *Outcome
		if res, o, err = el.distributeElimination(ctx, p, plans, domains, progress, certs.w); err == nil {
			out.add(o)
		}
	} else {
		opt := partition.EliminateOptions{Plan: plans.plan, MaxLevel: plans.maxLevel, Solver: s.persistency().Solver, Workers: s.Workers,
			MaxRounds: el.spec.Rounds, Domains: domains}
		opt.Progress = windowsProgress(progress)
		if res, err = partition.Eliminate(ctx, m, opt); err == nil {
			if err := partition.CheckElimination(m, res); err != nil {
				return nil, Internal(fmt.Errorf("the result failed its own verification: %w", err))
			}
			for _, pr := range res.Proofs {
				if pr.Result != nil {
					if err := certs.w.Elimination(pr.Round, pr.Nodes, pr.Result); err != nil {
						return nil, Internal(err)
					}
					out.Solved++
					out.MaxWindowVars = max(out.MaxWindowVars, len(pr.Vars))
					out.SolverIterations += pr.Result.SolverIterations
				}
			}
		}
	}
	if err != nil {
		return nil, windowsFailed(ctx, err, s.Output)
	}
	if err := certs.finish(); err != nil {
		return nil, Internal(err)
	}
	out.Windows += res.Windows // after pbp's, if any
	seconds := seconds(start, out)
	eliminated, labels := eliminatedOf(m, res.Alive)
	k := int64(persistency.Count(res.Persistent))
	score, _ := persistency.Score(m, res.Persistent)
	done, err := r.completeWhole(ctx, p, res.Alive, res.Labeling)
	if err != nil {
		return nil, err
	}
	energy := m.Energy(done.labeling)
	frac := fraction(int64(eliminated), int64(labels))
	rep := &WindowsReport{
		Method: string(s.Method), Model: r.modelName(), Plan: plans.name, Window: window, Halo: plans.halo,
		Workers: r.workers(out), MaxRounds: el.spec.Rounds, Rounds: out.Rounds + res.Rounds, Level: res.Level, Windows: out.Windows, WindowsSolved: out.Solved,
		MaxWindowVariables: out.MaxWindowVars, PruningIterations: out.PruningIterations, SolverIterations: out.SolverIterations, WindowSeconds: out.WindowSeconds,
		Provenance: r.provenance(out), LostWindows: out.Lost,
		Variables: int64(p.Model.NumVars()), FreeVariables: int64(n), PersistentVariables: k,
		PersistentFraction: score, Fraction: fraction(k, int64(n)),
		EliminatedLabels: &eliminated, EliminatedLabelFraction: &frac,
		Energy: (*Float)(&energy), Verified: true, Seconds: seconds,
		VariablesPerSecond: float64(n) / seconds, PeakRSSBytes: peakRSS(),
		CompletionFields: done.fields,
	}
	if s.Method == PBPIRI {
		rep.Boundary = s.Boundary.String()
		rep.PBPPersistentVariables = new(int64)
		if pbp != nil {
			*rep.PBPPersistentVariables = int64(persistency.Count(pbp.persistent))
		}
	}
	if plans.raster {
		rep.Width, rep.Height = plans.width, plans.height
	}
	if p.Evidence != nil {
		rep.Evidence, rep.Observed = p.Evidence.Path, p.observed()
	}
	x, alive := p.Extend(done.labeling), p.domains(res.Alive)
	files := append(uaiOutputs(x, evidenceOf(p.Proven(res.Persistent))),
		output{name: DomainsFile, write: func(w io.Writer) error { return writeDomains(w, alive) }})
	files = append(files, done.files...)
	files = append(files, aliveRasterOutputs(p.Model, x, alive, s.PNGMax)...)
	rep.Outputs = append(names(files), WindowCertificatesFile)
	st.concurrent = true // the model is in memory
	if err := st.writeOutputs(files, rep); err != nil {
		return nil, Internal(err)
	}
	return &Result{Report: rep, Summary: fmt.Sprintf("persistent %.6g variables %d/%d eliminated %d/%d labels (%.4g) windows %d rounds %d seconds %.3g%s",
		score, k, n, eliminated, labels, frac, rep.Windows, rep.Rounds, seconds, done.summary)}, nil
}

// pbpWindows is pbp+iri's first stage: pbp by windows over p's solved model, in
// the layout of the elimination's plans (raster tiles, or regions), in this
// process or by the runtime; its proofs are checked as those of method pbp.
func (r *runner) pbpWindows(ctx context.Context, p *Problem, plans eliminationPlans, progress func(partition.RasterProgress), certs *partition.ProofWriter) (*regionsOutcome, error) {
	pr := &runner{spec: r.spec.stage(PBP), opt: r.opt}
	s := pr.spec
	if !plans.raster {
		if r.opt.Runtime != nil {
			return pr.distributeRegions(ctx, p, progress, certs)
		}
		return solveRegionsHere(ctx, p, s, s.Window, s.halo(DefaultRegionHalo), progress, certs)
	}
	w, h := plans.width, plans.height
	raster, err := partition.RasterOf(p.Solved, w, h)
	if err != nil {
		return nil, err
	}
	pers, lab, scratch := partition.NewMemStore(w, h), partition.NewMemStore(w, h), partition.NewMemStore(w, h)
	out := &regionsOutcome{}
	if r.opt.Runtime != nil {
		d := &Distributed{ModelPath: s.Model, Raster: raster, Persistent: pers, Labeling: lab, Scratch: scratch, Progress: progress, Proofs: certs}
		if d.Spec, err = s.wire(false, w, h, maxLabels(p.Solved)); err != nil {
			return nil, err
		}
		o, err := r.opt.Runtime.Windows(ctx, d)
		if err != nil {
			return nil, err
		}
		out.Outcome = *o
	} else {
		opt := partition.RasterOptions{Core: s.Window, Halo: s.halo(DefaultRasterHalo), Persistency: s.persistency(), Workers: s.Workers, MaxRounds: s.Rounds, Progress: progress, Proofs: certs}
		res, err := partition.SolveRaster(ctx, raster, pers, lab, scratch, opt)
		if err != nil {
			return nil, err
		}
		out.RasterResult = *res
	}
	out.persistent, out.labeling = make([]int, w*h), make([]int, w*h)
	for v := range out.persistent {
		out.persistent[v], out.labeling[v] = int(pers.Values[v])-1, int(lab.Values[v])
	}
	return out, nil
}

// levelHolding is the first level at which a window grown by 2^step a level from
// window reaches extent: where one window holds the model.
func levelHolding(window, extent, step int) int {
	level := 0
	for window<<(step*level) < extent {
		level++
	}
	return level
}

// distributeElimination is eliminateWindows's work done by the runtime as an iri
// job over the solved model, from domains (nil: every label).
func (r *runner) distributeElimination(ctx context.Context, p *Problem, plans eliminationPlans, domains [][]int, progress func(partition.RasterProgress), certs *partition.ProofWriter) (*partition.Elimination, *Outcome, error) {
	m, n := p.Solved, p.Solved.NumVars()
	spec, err := r.spec.wire(true, n, 1, maxLabels(m))
	if err != nil {
		return nil, nil, err
	}
	spec.Method, spec.Halo = protocol.MethodIRI, plans.halo
	d := &Distributed{Spec: spec, ModelPath: p.Path, Graph: m, Plan: plans.plan, MaxLevel: plans.maxLevel, Domains: domains,
		Persistent: partition.NewMemStore(n, 1), Labeling: partition.NewMemStore(n, 1), Scratch: partition.NewMemStore(n, 1), Progress: progress, Proofs: certs}
	if p.Evidence != nil {
		d.EvidencePath = p.Evidence.Path
	}
	out, err := r.opt.Runtime.Windows(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	if out.Elimination == nil {
		return nil, nil, errors.New("the runtime returned no elimination for an iri job")
	}
	return out.Elimination, out, nil
}
