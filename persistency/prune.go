package persistency

import (
	"cmp"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
)

// Single-node pruning (IRI's "pixel cut"): before any message passing, a movable
// label k of a variable s is tested against the labelings that take k at s and
// immovable labels at s's neighbours. p keeps those neighbours, so it changes such a
// labeling x at s alone and
//
//	g(x) = Σ_{F ∋ s} f_F(k, x_F∖s) − f_F(y_s, x_F∖s),
//
// minimised neighbour by neighbour in a pairwise model. When that minimum is below
// −tol, x is a violator no certificate can pass: k must be immovable in every map of
// this class the search could prove, so marking it costs no elimination, and the
// solver never has to find x. Marks grow the neighbours' immovable sets, so the test
// repeats at their neighbours until nothing changes.
//
// Variables with a factor of order > 2 are not tested (their factors share
// neighbours, and a sum of per-factor minima could mark a label no labeling
// violates with).

// pruner holds the scratch of pruneSingle.
type pruner struct {
	m      *model.Model
	d      *domains
	fixed  []int // immovable labels per variable after the last run (nil: none yet)
	queued []bool
	queue  []int
	delta  []float64
	cells  []float64
	mov    []int
	imm    []int
	// byOther[s] is s's factors sorted by their other variable (unary ones,
	// −1, first), made at s's first test; nil for a variable with a factor
	// of order > 2 (never tested) once hasHigher[s] is set.
	byOther   [][]int32
	hasHigher []bool
}

func newPruner(m *model.Model, d *domains) *pruner {
	n := m.NumVars()
	return &pruner{m: m, d: d, queued: make([]bool, n), byOther: make([][]int32, n), hasHigher: make([]bool, n)}
}

// other is the variable other than s of a factor of order ≤ 2 of s (−1: unary).
func (p *pruner) other(s int, f int32) int32 {
	vs := p.m.FactorVars(int(f))
	if len(vs) == 1 {
		return -1
	}
	if int(vs[0]) == s {
		return vs[1]
	}
	return vs[0]
}

// factorsOf is s's factors grouped by their other variable (nil: s has one of
// order > 2), sorted once.
func (p *pruner) factorsOf(s int) []int32 {
	if p.byOther[s] != nil || p.hasHigher[s] {
		return p.byOther[s]
	}
	fs := slices.Clone(p.m.VarFactors(s))
	for _, f := range fs {
		if len(p.m.FactorVars(int(f))) > 2 {
			p.hasHigher[s] = true
			return nil
		}
	}
	slices.SortFunc(fs, func(a, b int32) int { return cmp.Compare(p.other(s, a), p.other(s, b)) })
	p.byOther[s] = fs
	return fs
}

// run tests every variable the first time (and after reset), later only the
// neighbours of the variables that gained immovable labels since (a label's test
// reads nothing else that changes), then the neighbours of every variable it marks
// at, and returns the labels it marked.
func (p *pruner) run(tol float64) int {
	if p.fixed == nil {
		p.fixed = make([]int, len(p.queued))
		for v := range p.queued {
			p.push(v)
		}
	} else {
		for v, n := range p.fixed {
			if immovable(p.d, v) != n {
				p.pushNeighbours(v)
			}
		}
	}
	marked := 0
	for len(p.queue) > 0 {
		s := p.queue[len(p.queue)-1]
		p.queue = p.queue[:len(p.queue)-1]
		p.queued[s] = false
		if n := p.test(s, tol); n > 0 {
			marked += n
			p.pushNeighbours(s)
		}
	}
	for v := range p.fixed {
		p.fixed[v] = immovable(p.d, v)
	}
	return marked
}

// reset makes the next run test every variable (a new test labeling).
func (p *pruner) reset() { p.fixed = nil }

func (p *pruner) pushNeighbours(s int) {
	for _, f := range p.m.VarFactors(s) {
		for _, t := range p.m.FactorVars(int(f)) {
			if int(t) != s {
				p.push(int(t))
			}
		}
	}
}

// immovable is the number of immovable labels of v.
func immovable(d *domains, v int) int {
	n := 0
	for _, f := range d.fixed[v] {
		if f {
			n++
		}
	}
	return n
}

func (p *pruner) push(v int) {
	if !p.queued[v] && p.d.hasMovable(v) {
		p.queued[v] = true
		p.queue = append(p.queue, v)
	}
}

// test marks the movable labels of s that fail the single-node test.
func (p *pruner) test(s int, tol float64) int {
	m, d := p.m, p.d
	p.mov = p.mov[:0]
	for c := range d.labels[s] {
		if d.movable(s, c) {
			p.mov = append(p.mov, c)
		}
	}
	if len(p.mov) == 0 {
		return 0
	}
	// Pairwise factors grouped by neighbour: a neighbour's label is chosen once for
	// all the factors it shares with s.
	factors := p.factorsOf(s)
	if factors == nil {
		return 0
	}
	p.delta = slices.Grow(p.delta[:0], len(p.mov))[:len(p.mov)]
	clear(p.delta)
	ls, ys := d.labels[s], d.labels[s][d.y[s]]
	for i := 0; i < len(factors); {
		t := p.other(s, factors[i])
		j := i + 1
		for j < len(factors) && p.other(s, factors[j]) == t {
			j++
		}
		group := factors[i:j]
		i = j
		if t < 0 {
			for a, c := range p.mov {
				for _, f := range group {
					tab := m.FactorFunction(int(f)).Table
					p.delta[a] = addGain(p.delta[a], tab[ls[c]], tab[ys])
				}
			}
			continue
		}
		p.imm = p.imm[:0]
		for c, l := range d.labels[t] {
			if d.fixed[t][c] {
				p.imm = append(p.imm, l)
			}
		}
		p.cells = slices.Grow(p.cells[:0], len(p.imm))[:len(p.imm)]
		for a, c := range p.mov {
			clear(p.cells)
			for _, f := range group {
				fn, first := m.FactorFunction(int(f)), int(m.FactorVars(int(f))[0]) == s
				for b, l := range p.imm {
					if first {
						p.cells[b] = addGain(p.cells[b], fn.Pairwise(ls[c], l), fn.Pairwise(ys, l))
					} else {
						p.cells[b] = addGain(p.cells[b], fn.Pairwise(l, ls[c]), fn.Pairwise(l, ys))
					}
				}
			}
			p.delta[a] = addGain(p.delta[a], slices.Min(p.cells), 0)
		}
	}
	marked := 0
	for a, c := range p.mov {
		if p.delta[a] < -tol {
			d.fixed[s][c] = true
			marked++
		}
	}
	return marked
}

// addGain adds e − w to a sum, where e is an entry of x and w the entry of p(x):
// a forbidden x (e = +Inf) violates nothing whatever the rest, and a feasible x
// mapped to a forbidden p(x) (w = +Inf) is a violator.
func addGain(sum, e, w float64) float64 {
	switch {
	case math.IsInf(sum, 1) || math.IsInf(e, 1):
		return math.Inf(1)
	case math.IsInf(w, 1):
		return math.Inf(-1)
	}
	return sum + e - w
}
