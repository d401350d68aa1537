package persistency

import (
	"context"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// PruneFirst is label elimination after Algorithm 1, the whole-model
// default's order on rasters and on models of two labels a variable, where
// Algorithm 1 proves about everything and label elimination by itself is slow
// (a 400² stereo raster: 100% in 8.6 s, against 97.7% in 77 s; job): Run (popt,
// its first solve ended by QuickFirst's rule), then Eliminate (opt) from the
// domains its persistent labels leave; where Algorithm 1 proves nothing, the
// elimination starts from its first relaxed solve (as it stood before the
// pruning iterations: a copy, on models small enough) instead of making it
// again (Grids_26: two solves of 15 iterations, the same bound). The Result
// is Algorithm 1's, its work in its own fields, with the elimination as its
// Elimination (no Prior: Verify rebuilds it from Persistent).
func PruneFirst(ctx context.Context, m *model.Model, opt EliminateOptions, popt Options) (*Result, error) {
	popt.QuickFirst, popt.keepFirst = true, true
	res, first, err := run(ctx, m, popt)
	if err != nil {
		return nil, err
	}
	opt.Domains = res.Domains(m)
	if Count(res.Persistent) == 0 && opt.Test == nil {
		opt.relaxed = first // the same model: its relaxed solve, not another
	}
	el, err := Eliminate(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	el.Prior = nil
	res.Elimination = el
	return res, nil
}

// PruneAfter is Algorithm 1 after label elimination, the whole-model
// default's order off rasters: label elimination (Eliminate, opt) first,
// which on proteins and other irregular models proves all that Algorithm 1
// proves and more, in less time; then Algorithm 1 (Run, with popt's variant
// and solver) on what it leaves undecided — the model over the alive labels,
// its persistent variables conditioned away, small where the elimination did
// its work — because with an inexact relaxation solver the elimination can
// miss variables that Algorithm 1 proves. It does not always get them back:
// on a 400² stereo raster it ends at 97.7% where Algorithm 1 alone proves
// 100%, nine times faster (there Algorithm 1 goes first: job).
//
// The variables Algorithm 1 adds are proven as one more stage of the
// elimination: its labels on them become the test labeling (the last stage's
// elsewhere) and a search with them as the only candidates eliminates their
// other labels, with its own certificate, so the outcome is an Elimination
// (from opt.Domains) that VerifyElimination checks like any other.
//
// Restricting the model to the alive labels keeps an optimal labeling (the
// elimination's maps compose into one improving map), and so does fixing the
// persistent variables: what Algorithm 1 proves on that model holds for m.
// The extra stage re-proves it on m itself; where its search cannot, the
// variables stay as the elimination left them (sound either way).
func PruneAfter(ctx context.Context, m *model.Model, opt EliminateOptions, popt Options) (*Elimination, error) {
	start := time.Now()
	el, err := eliminate(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	labels, run, err := pruneUndecided(ctx, m, el, opt.Candidates, popt, opt.Solver)
	el.first = nil
	if run != nil { // its solver's work counts in the elimination's
		el.SolverIterations += run.SolverIterations
		el.SolverSeconds += run.SolverSeconds
	}
	if err != nil || labels == nil {
		el.Seconds = time.Since(start).Seconds()
		return el, err
	}
	next := opt
	next.Domains, next.Test, next.Candidates = el.Alive, slices.Clone(el.Test), make([]bool, len(labels))
	for v, l := range labels {
		if l >= 0 {
			next.Test[v], next.Candidates[v] = l, true
		}
	}
	more, err := search(ctx, m, next)
	if err != nil {
		return nil, err
	}
	if more.Eliminated > 0 {
		before := Count(el.Persistent)
		el = chain(el, more)
		el.Pruned = Count(el.Persistent) - before
	}
	el.Seconds = time.Since(start).Seconds()
	return el, nil
}

// pruneUndecided runs Algorithm 1 on the variables el leaves undecided (and
// candidates, when set), over their alive labels with el's persistent labels
// fixed, and returns the labels (of m) it proves, −1 elsewhere (nil: none),
// and Algorithm 1's result (nil when it did not run).
func pruneUndecided(ctx context.Context, m *model.Model, el *Elimination, candidates []bool, popt Options, esolver Relaxation) ([]int, *Result, error) {
	fixed := make([]int, m.NumVars())
	open := 0
	for v, ls := range el.Alive {
		fixed[v] = -1
		switch {
		case len(ls) == 1:
			fixed[v] = 0 // its one alive label, 0 over the alive labels
		case candidates == nil || candidates[v]:
			open++
		}
	}
	if open == 0 {
		return nil, nil, nil
	}
	// The elimination did the bulk: Algorithm 1's first solve stops as the
	// elimination's does, not at the cap of a relaxation that creeps
	// (ObjectDetection_11: 1,500 iterations for nothing). Its certificate is
	// not kept (the extra stage proves its labels): no draft of it is made.
	popt.Progress, popt.QuickFirst, popt.KeepDual = nil, true, true
	if first := sameFirst(m, el, candidates, esolver, popt.Solver).wake(); first != nil {
		// Where the elimination decided no variable, Algorithm 1 runs on m
		// itself, as it would alone, and its first solve is the one the
		// elimination made: what it proves is what pbp alone proves, for no
		// solve of its own (ObjectDetection_11: 375 iterations on the model
		// without the eliminated labels, for the same nothing). A label it
		// proves that the elimination removed is left out: the next stage
		// searches over the alive labels.
		popt.first, popt.Candidates = first, nil
		res, err := Run(ctx, m, popt)
		if err != nil {
			return nil, res, err
		}
		labels := slices.Clone(res.Persistent)
		for v, l := range labels {
			if l >= 0 && !slices.Contains(el.Alive[v], l) {
				labels[v] = -1
			}
		}
		if Count(labels) == 0 {
			return nil, res, nil
		}
		return labels, res, nil
	}
	d, err := newDomains(m, el.Alive)
	if err != nil {
		return nil, nil, err
	}
	r, err := build(m, d, restrictedModel)
	if err != nil {
		return nil, nil, err
	}
	c, err := r.Condition(fixed)
	if err != nil {
		return nil, nil, err
	}
	var cand []bool
	if candidates != nil {
		cand = make([]bool, len(c.Vars))
		for i, v := range c.Vars {
			cand[i] = candidates[v]
		}
	}
	popt.Candidates = cand
	res, err := Run(ctx, c.Model, popt)
	if err != nil {
		return nil, nil, err
	}
	var labels []int
	for i, l := range res.Persistent {
		if l < 0 {
			continue
		}
		if labels == nil {
			labels = slices.Repeat([]int{-1}, m.NumVars())
		}
		v := c.Vars[i]
		labels[v] = d.labels[v][l]
	}
	return labels, res, nil
}

// sameFirst is the elimination el's first relaxed solve when it is the one
// Algorithm 1 (solver asolver, QuickFirst) would make first on m and
// Algorithm 1 is to run on m, nil otherwise: no variable decided by the
// elimination (one label alive of several), and no candidates;
// the elimination's solver (esolver) with Algorithm 1's loose options but for
// NoCertify and SettleBelow, which then change nothing — a gap wider than
// nearlyTight goes on in neither solve nor certifies (the gap is not within
// 10⁻⁶), and fewer than one node to settle settles none (every node agreeing
// stops both).
func sameFirst(m *model.Model, el *Elimination, candidates []bool, esolver, asolver Relaxation) *Outcome {
	first := el.first
	if first == nil || candidates != nil || first.Energy-first.LowerBound <= nearlyTight*math.Max(1, math.Abs(first.Energy)) {
		return nil
	}
	for v, ls := range el.Alive {
		if len(ls) == 1 && m.NumLabels(v) > 1 { // decided: Algorithm 1 runs on the rest
			return nil
		}
	}
	if esolver == nil {
		esolver = Auto{}
	}
	if asolver == nil {
		asolver = Auto{}
	}
	eo, ok := looseOptions(firstStalled(esolver, firstIterations, 10, 1e-5))
	ao, ok2 := looseOptions(stalledFirst(asolver, firstIterations, 10, 1e-5))
	if !ok || !ok2 || float64(m.NumVars())*ao.SettleBelow >= 1 {
		return nil
	}
	ao.NoCertify, ao.SettleBelow = eo.NoCertify, eo.SettleBelow
	ao.Progress, eo.Progress = nil, nil
	if !reflect.DeepEqual(ao, eo) {
		return nil
	}
	return first
}

// looseOptions are the TRW-S options of a loose first solve (r, as the stall
// rules return it).
func looseOptions(r Relaxation, ok bool) (trws.Options, bool) {
	switch r := r.(type) {
	case TRWS:
		return r.Options, ok
	case cappedAuto:
		return r.t.Options, ok
	}
	return trws.Options{}, false
}

// chain appends stage more, searched from the domains res left, to res.
func chain(res, more *Elimination) *Elimination {
	more.first = res.first
	more.Earlier = append(res.Earlier, Stage{Test: res.Test, Alive: res.Alive, Certificate: res.Certificate})
	more.Prior, more.LowerBound = res.Prior, res.LowerBound
	more.Eliminated += res.Eliminated
	more.Rounds += res.Rounds
	more.SolverIterations += res.SolverIterations
	more.SolverSeconds += res.SolverSeconds
	return more
}
