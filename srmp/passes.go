package srmp

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/partopt/partopt/trws"
)

// ConsistencyTolerance is τ of the consistency labels (see the package doc). The
// solver computes in float64, so it is far below trws's float32 tolerance.
const ConsistencyTolerance = 1e-9

// DefaultMaxIterations is SRMP's iteration cap in DefaultOptions. Relaxations of
// higher-order models converge more slowly than TRW-S's 1500-iteration cap allows:
// on Promedas_70 the bound climbs steadily to the LP optimum (which is the MAP
// optimum there) in about 4800 iterations and every variable then agrees; the stall
// rule still ends runs whose bound and agreement stopped growing.
const DefaultMaxIterations = 10000

// DefaultOptions are trws.DefaultOptions with the cap DefaultMaxIterations.
func DefaultOptions() trws.Options {
	o := trws.DefaultOptions()
	o.MaxIterations = DefaultMaxIterations
	return o
}

// Solve runs SRMP from the current messages until a stopping rule of opt fires (the
// rules, Progress and Result of package trws). It returns the context's error, with a
// valid Result for the work done, when ctx ends.
func (s *Solver) Solve(ctx context.Context, opt trws.Options) (trws.Result, error) {
	return trws.Drive(ctx, engine{s}, opt)
}

// engine is the Solver as trws.Drive runs it.
type engine struct{ s *Solver }

func (e engine) NumVars() int { return e.s.n }

func (e engine) Iterate(bool) float64 {
	s := e.s
	for v := 0; v < s.n; v++ {
		s.step(v, true)
	}
	bound := s.m.Offset()
	for v := s.n - 1; v >= 0; v-- {
		bound += s.step(v, false)
	}
	s.iters++
	return bound
}

func (e engine) Check() (consistent, primal []int32) {
	e.s.check()
	return e.s.cons, e.s.primal
}

func (e engine) Energy(x []int32) float64 { return e.s.energy(x) }

func (e engine) CertifyBest(x []int) (float64, bool) {
	v, err := e.s.Certificate(x).Check(e.s.m)
	return v.Bound, err == nil && v.Certified
}

// step processes variable v in a forward (fwd) or backward pass: it recomputes the
// messages of the factors that have a variable processed before v in this pass,
// forms D_v = θ_v + Σ messages into v, and moves the share ω_v·D_v into every factor
// with a variable still to come. In the backward pass it returns v's part of the
// lower bound: w_v·min D_v plus the minimum of every factor whose first variable is v
// (those factors are final for this pass).
func (s *Solver) step(v int, fwd bool) float64 {
	lo, hi := s.uoff[v], s.uoff[v+1]
	D := s.D[lo:hi]
	copy(D, s.u[lo:hi])
	slots := s.islot[s.istart[v]:s.istart[v+1]]
	bound := 0.0
	for _, k := range slots {
		a := s.slotFac[k]
		if (fwd && s.first[a] < int32(v)) || (!fwd && s.last[a] > int32(v)) {
			c := s.recompute(a, k)
			if !fwd && s.first[a] == int32(v) {
				s.cmin[a] = c
				bound += c
			}
		}
		for l, x := range s.msg[s.moff[k]:][:len(D)] {
			D[l] += x
		}
	}
	if !fwd {
		bound += s.wnode[v] * minOf(D)
	}
	w := s.omega[v]
	for _, k := range slots {
		a := s.slotFac[k]
		if (fwd && s.last[a] > int32(v)) || (!fwd && s.first[a] < int32(v)) {
			m := s.msg[s.moff[k]:][:len(D)]
			for l := range m {
				m[l] -= w * D[l]
			}
		}
	}
	return bound
}

// recompute sets the message of slot k (an argument of factor a) to the min-marginal
// of the reparametrised factor θ_a − Σ_{other arguments} messages, normalised to
// minimum 0, and returns the minimum it subtracted: the minimum of the reparametrised
// factor afterwards.
func (s *Solver) recompute(a, k int32) float64 {
	p := int(k - s.fstart[a])
	sub := s.factorSub(a, p)
	m := s.msg[s.moff[k]:][:s.labels[s.fvar[k]]]
	s.sc.scan(s.fn[a], s.big, sub, nil, p, m)
	c := minOf(m)
	for l := range m {
		m[l] -= c
	}
	return c
}

// factorSub sets s.sub to factor a's messages, without argument skip (−1: none).
func (s *Solver) factorSub(a int32, skip int) [][]float64 {
	f0, f1 := s.fstart[a], s.fstart[a+1]
	sub := s.sub[:f1-f0]
	for q := range sub {
		sub[q] = nil
		if q != skip {
			k := f0 + int32(q)
			sub[q] = s.msg[s.moff[k]:][:s.labels[s.fvar[k]]]
		}
	}
	return sub
}

// check runs after a backward pass: it sets the consistency labels and rounds the
// primal labeling.
//
// Consistency: v gets label l when l is the unique minimiser of D_v (by more than
// τ·max(1, |min|)) and every factor whose variables all have such minimisers is
// minimised at their labels, up to τ·max(1, |value|); a factor that is not clears the
// labels of all its variables. After a backward pass the reparametrisation
// decomposes into the factors' reparametrised tables and w_v·D_v per variable, whose
// minima sum to the lower bound, so when every variable is consistent the gap of the
// labeling is the sum of these slacks. The labels are then also required to be
// certifiable: if the exact gap exceeds trws.GapTolerance, the factor with the
// largest slack loses its labels (the next checks, after more iterations, retry).
//
// Rounding (Kolmogorov's, generalised): variables in increasing order, each taking
// the label that minimises its unary plus, per factor, the minimum of the factor's
// table at the labels already chosen minus the messages of the variables still free.
func (s *Solver) check() {
	for v := 0; v < s.n; v++ {
		l := uniqueArgmin(s.D[s.uoff[v]:s.uoff[v+1]])
		s.argmin[v], s.cons[v] = l, l
	}
	worst, worstSlack := int32(-1), 0.0
	slack := 0.0
	for a := range s.fn {
		vs := s.fvar[s.fstart[a]:s.fstart[a+1]]
		x := s.tuple[:len(vs)]
		all := true
		for p, v := range vs {
			if x[p] = int(s.argmin[v]); x[p] < 0 {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		val := value(s.fn[a], s.big, s.factorSub(int32(a), -1), x)
		d := val - s.cmin[a]
		if d > ConsistencyTolerance*math.Max(1, math.Abs(val)) {
			for _, v := range vs {
				s.cons[v] = -1
			}
			continue
		}
		slack += d
		if d > worstSlack {
			worst, worstSlack = int32(a), d
		}
	}
	agree := true
	for _, l := range s.cons {
		agree = agree && l >= 0
	}
	if agree && worst >= 0 {
		// The variables sit at the minima of their D_v: only the factors have slack.
		e := s.energy(s.cons)
		if slack > trws.GapTolerance/2*math.Max(1, math.Abs(e)) {
			for _, v := range s.fvar[s.fstart[worst]:s.fstart[worst+1]] {
				s.cons[v] = -1
			}
		}
	}
	s.round()
}

// round computes the primal labeling (see check). Labels are tried best score first,
// skipping those that a factor whose variables are all labeled forbids (+Inf); a
// variable left with no label sends the search back to the latest variable of the
// factors that forbade its labels (conflict-directed backjumping), which tries its
// next label. Forbidden states (deterministic tables of Bayes nets, hard constraints)
// otherwise leave the greedy rounding in dead ends. After a budget of n+64 dead ends
// a dead end takes its best-scored label, forbidden or not; a search that ran out of
// budget is not tried again (budget 0) for 5·2^k iterations after its k-th failure
// in a row, so that hopeless searches do not dominate the solver's time.
func (s *Solver) round() {
	budget := s.n + 64
	if s.iters < s.searchAfter {
		budget = 0
	}
	gaveUp := false
	v := 0
	if s.n > 0 {
		s.conflict[0] = s.conflict[0][:0]
		s.candidates(0, true)
	}
	for v < s.n {
		if s.next[v] < s.ncand[v] {
			s.primal[v] = s.cand[s.uoff[v]+s.next[v]]
			s.next[v]++
			if v++; v < s.n {
				s.conflict[v] = s.conflict[v][:0]
				s.candidates(v, true)
			}
			continue
		}
		h := int32(-1)
		for _, u := range s.conflict[v] {
			h = max(h, u)
		}
		if budget--; budget < 0 || h < 0 {
			s.candidates(v, false)
			gaveUp = true
			continue
		}
		// h's conflicts now include v's (but h itself): h's next label must answer both.
		for _, u := range s.conflict[v] {
			if u != h && !slices.Contains(s.conflict[h], u) {
				s.conflict[h] = append(s.conflict[h], u)
			}
		}
		v = int(h)
	}
	switch {
	case !gaveUp:
		s.searchFails = 0
	case s.iters >= s.searchAfter:
		s.searchAfter = s.iters + 5<<min(s.searchFails, 8)
		s.searchFails++
	}
}

// candidates lists v's labels for round, best score first: the labels that no fully
// labeled factor forbids (filter), or just the best-scored one.
func (s *Solver) candidates(v int, filter bool) {
	lo, hi := s.uoff[v], s.uoff[v+1]
	K := int(hi - lo)
	score, cond := s.buf[:K], s.buf[K:2*K]
	copy(score, s.u[lo:hi])
	for _, k := range s.islot[s.istart[v]:s.istart[v+1]] {
		a := s.slotFac[k]
		if s.first[a] == int32(v) {
			// No argument is labeled yet: the message is this min-marginal.
			for l, x := range s.msg[s.moff[k]:][:K] {
				score[l] += x
			}
			continue
		}
		f0, f1 := s.fstart[a], s.fstart[a+1]
		sub, fix := s.sub[:f1-f0], s.fix[:f1-f0]
		for q := range sub {
			u := s.fvar[f0+int32(q)]
			sub[q], fix[q] = nil, -1
			switch {
			case u < int32(v):
				fix[q] = s.primal[u]
			case u > int32(v):
				sub[q] = s.msg[s.moff[f0+int32(q)]:][:s.labels[u]]
			}
		}
		s.sc.scan(s.fn[a], s.big, sub, fix, int(k-f0), cond)
		for l := range score {
			score[l] += cond[l]
		}
	}
	c := s.cand[lo:hi]
	s.next[v], s.ncand[v] = 0, 0
	if !filter {
		c[0], s.ncand[v] = int32(argminOf(score)), 1
		return
	}
	for l := range K {
		if s.u[int(lo)+l] >= s.big {
			continue
		}
		if a := s.forbidding(v, int32(l)); a >= 0 {
			for _, u := range s.fvar[s.fstart[a]:s.fstart[a+1]] {
				if u != int32(v) && !slices.Contains(s.conflict[v], u) {
					s.conflict[v] = append(s.conflict[v], u)
				}
			}
			continue
		}
		c[s.ncand[v]] = int32(l)
		s.ncand[v]++
	}
	slices.SortStableFunc(c[:s.ncand[v]], func(a, b int32) int { return cmp.Compare(score[a], score[b]) })
}

// forbidding returns a factor whose last variable is v that forbids label l with the
// labels round has given the earlier variables, or −1.
func (s *Solver) forbidding(v int, l int32) int32 {
	for _, k := range s.islot[s.istart[v]:s.istart[v+1]] {
		a := s.slotFac[k]
		if s.last[a] != int32(v) {
			continue
		}
		vs := s.fvar[s.fstart[a]:s.fstart[a+1]]
		x := s.tuple[:len(vs)]
		for p, u := range vs {
			x[p] = int(s.primal[u])
		}
		x[k-s.fstart[a]] = int(l)
		if math.IsInf(s.fn[a].Value(x), 1) {
			return a
		}
	}
	return -1
}

// energy is the exact energy of a labeling of the solver's model (+Inf if forbidden).
func (s *Solver) energy(x []int32) float64 {
	lab := make([]int, len(x))
	for v, l := range x {
		lab[v] = int(l)
	}
	return s.m.Energy(lab)
}

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func argminOf(v []float64) int {
	best := 0
	for i, x := range v {
		if x < v[best] {
			best = i
		}
	}
	return best
}

// uniqueArgmin returns the minimiser of d when every other entry exceeds it by more
// than ConsistencyTolerance·max(1, |min|), else −1.
func uniqueArgmin(d []float64) int32 {
	l := argminOf(d)
	margin := ConsistencyTolerance * math.Max(1, math.Abs(d[l]))
	for x, v := range d {
		if x != l && v-d[l] <= margin {
			return -1
		}
	}
	return int32(l)
}
