package persistency

import (
	"slices"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// rewriter keeps a search's verification problem in its TRW-S solver between
// rounds (IRI's incremental rebuild): a round changes the map only at the variables
// that gained immovable labels, so only the factors around them get new tables,
// written into the last round's solver, whose messages stay. A round after a new
// test labeling, or on a solver that is not TRW-S, builds g anew.
type rewriter struct {
	m     *model.Model
	d     *domains
	seen  [][]bool // d.fixed when the solver's tables were made; nil: none
	edge  []int    // factor → its edge in the solver (pairwise factors, in order)
	stamp []int    // factor → the last rewrite that wrote it
	pass  int
	unary []float64
	maps  []*model.LabelMap // the variables' label maps in the solver's Difference terms
	// checks, when not nil, keeps the tables written, for the certificates'
	// checking models on the same domains (the same tables, built once).
	checks *tableCache
	// raw marks, after takeOver, the factors whose terms in the solver are
	// still f's, not g's: f_F − f_F(y_F), the shift counted in the solver's
	// offset until a rewrite writes g's (nil: the solver holds g throughout).
	raw []bool
	y   []int // the test labeling (m's labels) the shifts are taken at
	// offered: the relaxed solve's solver is to become the rounds' at the
	// first round that solves (offer, takeOver).
	offered bool
}

func newRewriter(m *model.Model, d *domains, checks *tableCache) *rewriter {
	r := &rewriter{m: m, d: d, edge: make([]int, m.NumFactors()), stamp: make([]int, m.NumFactors()),
		maps: make([]*model.LabelMap, m.NumVars()), checks: checks}
	e := 0
	for f := range r.edge {
		r.edge[f] = -1
		if len(m.FactorVars(f)) == 2 {
			r.edge[f], e = e, e+1
		}
	}
	return r
}

// built records that the next solver is made from g built on d as it is now.
func (r *rewriter) built(d *domains) {
	r.record(d)
	r.raw, r.offered = nil, false
}

// record records d as the solver's tables are made now.
func (r *rewriter) record(d *domains) {
	if r.seen == nil {
		r.seen = make([][]bool, len(d.fixed))
	}
	for v, fx := range d.fixed {
		r.seen[v] = append(r.seen[v][:0], fx...)
	}
	clear(r.maps)
}

// offer records d, where p maps every label to y, as the state of the
// relaxed solve's TRW-S solver (m over d's alive labels, every factor f's):
// the first round that solves takes that solver over (takeOver) instead of
// building g and a solver of it. A search that ends before (pruning decides
// every label) takes nothing over.
func (r *rewriter) offer(d *domains) {
	r.record(d)
	r.raw, r.offered = nil, true
}

// takeOver makes the offered solver (prev's) the rounds' solver: g of the
// offered map is f shifted by f_F(y_F) on every factor, so the solver holds it
// once its offset is lowered by those shifts; a factor keeps f's terms until a
// rewrite writes g's, when its shift leaves the offset. The first
// verification problem is then never built as a model, nor its solver
// (pdb1qks: one model and one solver of 2,785 tables fewer). prev's state
// must be a TRW-S solver (inPlace).
func (r *rewriter) takeOver(prev *Outcome, y []int) {
	s := prev.state.(*trws.Solver)
	r.offered = false
	r.raw, r.y = make([]bool, r.m.NumFactors()), y
	shift := 0.0
	for f := range r.raw {
		if len(r.m.FactorVars(f)) > 0 {
			r.raw[f] = true
			shift += r.m.FactorValue(f, y)
		}
	}
	s.AddConstant(-shift - s.Offset())
}

// unshift takes factor f's shift out of s's offset as its terms become g's.
func (r *rewriter) unshift(s *trws.Solver, f int) {
	if r.raw != nil && r.raw[f] {
		s.AddConstant(r.m.FactorValue(f, r.y))
		r.raw[f] = false
	}
}

// invalidate forgets the solver's tables (a new test labeling changes every factor).
func (r *rewriter) invalidate() { r.seen, r.offered = nil, false }

// rewrite writes the changed factors of the verification problem into prev's
// solver and reports whether it did: false when the round must build g (no
// solver of the last round, not TRW-S, or a table the solver cannot hold).
func (r *rewriter) rewrite(prev *Outcome, solver Relaxation) (bool, error) {
	if r.seen == nil || prev == nil || !inPlace(solver, prev) {
		return false, nil
	}
	s := prev.state.(*trws.Solver)
	r.pass++
	var dirty []int
	for v, fx := range r.d.fixed {
		if !slices.Equal(fx, r.seen[v]) {
			dirty = append(dirty, v)
		}
	}
	for _, v := range dirty {
		r.maps[v] = nil
	}
	if r.checks != nil {
		r.checks.update(r.d)
	}
	for _, v := range dirty {
		for _, f := range r.m.VarFactors(v) {
			if r.stamp[f] == r.pass {
				continue
			}
			r.stamp[f] = r.pass
			if e := r.edge[f]; e >= 0 {
				r.unshift(s, int(f))
				vars, fn := r.m.FactorVars(int(f)), r.m.FactorFunction(int(f))
				u, w := int(vars[0]), int(vars[1])
				if (r.d.hasMovable(u) || r.d.hasMovable(w)) && differenceFactor(r.m, r.d, int(f)) {
					if s.SetFunction(e, differenceTerm(fn, r.d, r.maps, u, w)) != nil {
						r.seen = nil // beyond the solver's penalty: build anew
						return false, nil
					}
					continue
				}
				if !r.d.hasMovable(u) && !r.d.hasMovable(w) { // identity: g ≡ 0, as build
					z := zero([]int{len(r.d.labels[u]), len(r.d.labels[w])})
					if err := s.SetFunction(e, &z); err != nil {
						return false, err
					}
					continue
				}
				t, err := pairTable(fn, r.d, u, w, true, int(f))
				if err != nil {
					return false, err
				}
				if r.checks != nil {
					r.checks.tables[f] = t
				}
				if s.SetTable(e, t) != nil {
					r.seen = nil // beyond the solver's penalty: build anew
					return false, nil
				}
			}
		}
		// v's unary term: the sum of its unary factors' g (0 where p is the
		// identity, as build).
		r.unary = append(r.unary[:0], make([]float64, len(r.d.labels[v]))...)
		for _, f := range r.m.VarFactors(v) {
			if r.edge[f] >= 0 {
				continue
			}
			r.unshift(s, int(f))
			if !r.d.hasMovable(v) {
				continue
			}
			t, err := compactTable(r.m, int(f), r.d, len(r.unary), true)
			if err != nil {
				return false, err
			}
			for c, x := range t {
				r.unary[c] += x
			}
		}
		if err := s.SetUnary(v, r.unary); err != nil {
			return false, err
		}
	}
	r.record(r.d)
	return true, nil
}
