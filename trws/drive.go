package trws

import (
	"context"
	"math"
	"slices"
	"time"
)

// Engine is a message-passing solver as Drive runs it: TRW-S here, and the
// higher-order solver (package srmp), so that both share one contract — the same
// Options, stopping rules, Progress and Result.
type Engine interface {
	// NumVars is the number of variables.
	NumVars() int
	// Iterate runs one iteration (a forward and a backward pass) and returns its lower
	// bound on the minimum energy; check says that Check follows, so that an
	// engine may compute what the check needs inside the passes.
	Iterate(check bool) float64
	// Check computes, after an iteration, the consistency labels (−1: none) and a
	// rounded labeling; the slices belong to the engine until its next call.
	Check() (consistent, primal []int32)
	// Energy is the exact energy of a labeling (+Inf if it takes a forbidden state).
	Energy(x []int32) float64
	// CertifyBest checks a certificate for x from the engine's dual and returns its
	// bound when it proves x optimal.
	CertifyBest(x []int) (bound float64, ok bool)
}

// Drive runs e until a stopping rule of opt fires (see Options) and fills the Result:
// the best bound and labeling of the call, and the consistency labels of the last
// check. It returns the context's error, with a valid Result for the work done, when
// ctx ends.
func Drive(ctx context.Context, e Engine, opt Options) (Result, error) {
	start := time.Now()
	if opt.CheckEvery < 1 {
		opt.CheckEvery = 1
	}
	n := e.NumVars()
	res := Result{LowerBound: math.Inf(-1), Energy: math.Inf(1), Labeling: make([]int, n)}
	bestAgree, lastProgress := -1, 0
	progressBound := math.Inf(-1)
	var checkBounds []float64 // the bound at each check (Reach)
	checked := false
	var cons, best []int32 // the last check's consistency labels, the best labeling
	settleBelow := opt.SettleBelow * float64(n)
	var err error
	for it := 1; ; it++ {
		if err = ctx.Err(); err != nil {
			res.Stop = StopCanceled
			if it > 1 {
				record(e, &res, &cons, &best, !checked)
			}
			break
		}
		last := it >= opt.MaxIterations
		check := last || it%opt.CheckEvery == 0
		lb := e.Iterate(check)
		res.Iterations = it
		res.LowerBound = math.Max(res.LowerBound, lb)
		if !check {
			continue
		}
		record(e, &res, &cons, &best, !checked)
		checked = true
		if opt.Progress != nil {
			opt.Progress(Progress{Iteration: it, Bound: lb, LowerBound: res.LowerBound, Energy: res.Energy, Agreeing: res.Agreeing, Variables: n})
		}
		if res.Agreeing > bestAgree || res.LowerBound > progressBound+opt.StallTolerance*math.Max(1, math.Abs(progressBound)) {
			bestAgree, progressBound, lastProgress = max(bestAgree, res.Agreeing), res.LowerBound, it
		}
		if opt.HasReach {
			checkBounds = append(checkBounds, res.LowerBound)
		}
		switch {
		case last:
			res.Stop = StopIterations
		case opt.HasTarget && res.Energy < opt.Target:
			res.Stop = StopTarget
		case opt.HasReach && outOfReach(checkBounds, opt.Reach, opt.MaxIterations-it, opt.CheckEvery):
			res.Stop = StopStall
		case opt.GapTolerance <= 0:
			continue
		case res.Agreeing == n, settleNear(ctx, e, &settleBelow, &res, cons, &best):
			res.Stop = StopAgreement
		case gapWithin(res.Energy, res.LowerBound, opt.GapTolerance):
			res.Stop = StopGap
		case opt.StallIterations > 0 && it-lastProgress >= opt.StallIterations:
			res.Stop = StopStall
		default:
			continue
		}
		break
	}
	if cons != nil {
		res.Consistent = make([]int, len(cons))
		for v, l := range cons {
			res.Consistent[v] = int(l)
		}
	}
	res.Agreement = res.Agreeing == n
	if res.Agreement {
		if en := e.Energy(cons); math.IsInf(en, 1) {
			// Agreement on a forbidden labeling: the penalty relaxation agreed, the model
			// does not; no consistency label is integrally correct there.
			for v := range res.Consistent {
				res.Consistent[v] = -1
			}
			res.Agreeing, res.Agreement = 0, false
		} else if en < res.Energy {
			// The agreeing labels are a labeling too, the best when a rounding
			// (of the messages an iteration started from) lags them.
			res.Energy, best = en, cons
		}
	}
	for v, l := range best {
		res.Labeling[v] = int(l)
	}
	if !res.Agreement && !opt.NoCertify && res.Stop != StopCanceled && gapWithin(res.Energy, res.LowerBound, 1e-6) {
		// The gap closed without node-wise agreement (ties, or a stop before agreement
		// formed): if a certificate proves the best labeling optimal, it becomes every
		// variable's consistency label. An LP-optimal integral labeling is what the
		// persistency criterion needs, so integral correctness holds.
		if bound, ok := e.CertifyBest(res.Labeling); ok {
			copy(res.Consistent, res.Labeling)
			res.Agreeing, res.Agreement = n, true
			res.LowerBound = math.Max(res.LowerBound, bound)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// record runs a check and copies its outcome: the consistency labels into
// cons (res.Agreeing counts them), and the rounded labeling into best when it
// is the first or beats the best one (res.Energy). Drive converts both into
// res at its end, once.
func record(e Engine, res *Result, cons, best *[]int32, first bool) {
	c, primal := e.Check()
	*cons = append((*cons)[:0], c...)
	res.Agreeing = 0
	for _, l := range c {
		if l >= 0 {
			res.Agreeing++
		}
	}
	if !first && notBetter(e, primal, *best) {
		return // not better than the best labeling: its energy changes nothing
	}
	if en := e.Energy(primal); first || en < res.Energy {
		res.Energy = en
		*best = append((*best)[:0], primal...)
	}
}

// energyBounder is an Engine that can tell from the variables where two
// labelings differ that the first's energy (Energy's value, rounding
// included) is no lower than the second's.
type energyBounder interface {
	NotBetter(x, ref []int32) bool
}

// notBetter says that x's energy is no lower than that of ref, the best
// labeling: x is ref (a converged solve's checks), or e proves it. Such an x
// never becomes the best, so record skips its energy, deciding the same.
func notBetter(e Engine, x, ref []int32) bool {
	if slices.Equal(x, ref) {
		return true
	}
	b, ok := e.(energyBounder)
	return ok && b.NotBetter(x, ref)
}

// settler is an Engine that can settle its messages near the variables
// without a consistency label (Options.SettleBelow).
type settler interface {
	settle(ctx context.Context, cons []int32) bool
}

// settleNear settles e near its disagreements when at most *below remain
// (see Options.SettleBelow) and reports whether every variable now agrees:
// cons then holds their labels, the best labeling if it beats res's. After a
// failure the next try waits until the disagreements have halved.
func settleNear(ctx context.Context, e Engine, below *float64, res *Result, cons []int32, best *[]int32) bool {
	n := e.NumVars()
	st, ok := e.(settler)
	missing := float64(n - res.Agreeing)
	if !ok || missing == 0 || missing > *below {
		return false
	}
	if !st.settle(ctx, cons) {
		*below = missing / 2
		return false
	}
	res.Agreeing = n
	if en := e.Energy(cons); en < res.Energy {
		res.Energy = en
		*best = append((*best)[:0], cons...)
	}
	return true
}

// gapWithin reports energy − bound ≤ tol·max(1, |energy|) for a finite energy (an
// infinite one has no gap to close).
func gapWithin(energy, bound, tol float64) bool {
	return !math.IsInf(energy, 0) && energy-bound <= tol*math.Max(1, math.Abs(energy))
}

// outOfReach says whether a bound that must get to reach cannot: at the rate
// it rose over the last two checks (bounds, every iterations apart), twice the
// iterations left would not take it there. TRW-S's bound rises ever more
// slowly, so the rate overestimates what is to come.
func outOfReach(bounds []float64, reach float64, left, every int) bool {
	n := len(bounds)
	if n < 3 || bounds[n-1] >= reach {
		return false
	}
	rise := (bounds[n-1] - bounds[n-3]) / float64(2*every)
	return rise*float64(2*left) < reach-bounds[n-1]
}
