package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// eliminateWindows is method iri by windows, in memory: grid tiles for a raster
// model without evidence, BFS regions otherwise, rounds on the domains left;
// every window's proof is re-checked (partition.CheckElimination) before
// anything is written.
func (r *runner) eliminateWindows(ctx context.Context) (*Result, error) {
	s := r.spec
	if r.opt.Runtime != nil {
		return nil, errors.New("method iri runs its windows in this process only (not over a cluster yet)")
	}
	p, err := LoadProblem(s.Model, s.NoEvidence)
	if err != nil {
		return nil, err
	}
	r.noteEvidence(p.Evidence)
	if err := PrepareOutput(s.Output); err != nil {
		return nil, err
	}
	m, n := p.Solved, p.Solved.NumVars()
	// A round that eliminates nothing raises the level: windows (and halos) twice
	// the side on rasters, four times the size on graphs, until one holds the model.
	window := s.Window
	plan, halo := "regions", s.halo(DefaultRegionHalo)
	planOf := func(round, level int) partition.Plan {
		size := window << (2 * level)
		return partition.RegionPlan(m, size, halo<<level, partition.RegionShift(round, size))
	}
	maxLevel := levelHolding(window, n, 2)
	w, h, raster := rasterDims(m)
	if raster && p.Evidence == nil {
		plan, halo = "raster", s.halo(DefaultRasterHalo)
		planOf = func(round, level int) partition.Plan {
			size, shift := window<<level, round*(window<<level)/2
			if size >= max(w, h) {
				shift = 0 // one window holds the raster
			}
			return partition.GridPlan(w, h, size, halo<<level, shift)
		}
		maxLevel = levelHolding(window, max(w, h), 1)
	}
	opt := partition.EliminateOptions{Plan: planOf, MaxLevel: maxLevel, Solver: s.persistency().Solver, Workers: s.Workers, MaxRounds: s.Rounds}
	opt.Progress = windowsProgress(r.windowProgress(int64(n)))
	start := time.Now()
	res, err := partition.Eliminate(ctx, m, opt)
	if err != nil {
		return nil, windowsFailed(ctx, err, s.Output)
	}
	if err := partition.CheckElimination(m, res); err != nil {
		return nil, Internal(fmt.Errorf("the result failed its own verification: %w", err))
	}
	seconds := time.Since(start).Seconds()
	eliminated, labels := eliminatedOf(m, res.Alive)
	solved, maxVars, iterations := 0, 0, 0
	for _, pr := range res.Proofs {
		if pr.Result != nil {
			solved++
			maxVars = max(maxVars, len(pr.Vars))
			iterations += pr.Result.SolverIterations
		}
	}
	k := int64(persistency.Count(res.Persistent))
	score, _ := persistency.Score(m, res.Persistent)
	energy := m.Energy(res.Labeling)
	frac := fraction(int64(eliminated), int64(labels))
	rep := &WindowsReport{
		Method: string(IRI), Model: p.Path, Plan: plan, Window: window, Halo: halo,
		Workers: s.Workers, MaxRounds: s.Rounds, Rounds: res.Rounds, Level: res.Level, Windows: res.Windows, WindowsSolved: solved,
		MaxWindowVariables: maxVars, SolverIterations: iterations,
		Variables: int64(p.Model.NumVars()), FreeVariables: int64(n), PersistentVariables: k,
		PersistentFraction: score, Fraction: fraction(k, int64(n)),
		EliminatedLabels: &eliminated, EliminatedLabelFraction: &frac,
		Energy: (*Float)(&energy), Verified: true, Seconds: seconds,
		VariablesPerSecond: float64(n) / seconds, PeakRSSBytes: peakRSS(),
	}
	if raster && plan == "raster" {
		rep.Width, rep.Height = w, h
	}
	if p.Evidence != nil {
		rep.Evidence, rep.Observed = p.Evidence.Path, p.observed()
	}
	x, domains := p.Extend(res.Labeling), p.domains(res.Alive)
	files := append(uaiOutputs(x, evidenceOf(p.Proven(res.Persistent))),
		output{name: DomainsFile, write: func(w io.Writer) error { return writeDomains(w, domains) }})
	files = append(files, aliveRasterOutputs(p.Model, x, domains, s.PNGMax)...)
	rep.Outputs = names(files)
	if err := writeOutputs(s.Output, rep.Outputs, files, rep); err != nil {
		return nil, Internal(err)
	}
	return &Result{Report: rep, Summary: fmt.Sprintf("persistent %.6g variables %d/%d eliminated %d/%d labels (%.4g) windows %d rounds %d seconds %.3g",
		score, k, n, eliminated, labels, frac, res.Windows, res.Rounds, seconds)}, nil
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
