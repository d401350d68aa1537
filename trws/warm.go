package trws

import (
	"fmt"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
)

// NumVars is the number of variables (nodes) of the solver's current problem.
func (s *Solver) NumVars() int { return s.n }

// Vars maps the solver's variables to the variables of the model it was first built
// from (the identity until Restrict).
func (s *Solver) Vars() []int { return s.vars }

// Iterations is the number of iterations run over the solver's lifetime.
func (s *Solver) Iterations() int { return s.iters }

// AddUnary adds delta (len = labels of v, +Inf allowed, no NaN or −Inf) to the unary
// term of the solver's variable v. The messages are kept: the next Solve starts from
// them (a warm start).
func (s *Solver) AddUnary(v int, delta []float64) error {
	s.src = nil
	if v < 0 || v >= s.n {
		return fmt.Errorf("trws: AddUnary: variable %d out of range [0,%d)", v, s.n)
	}
	lo, hi := s.uoff[v], s.uoff[v+1]
	if len(delta) != int(hi-lo) {
		return fmt.Errorf("trws: AddUnary: %d values for a variable with %d labels", len(delta), hi-lo)
	}
	for l, d := range delta {
		if err := model.CheckValue(d); err != nil {
			return fmt.Errorf("trws: AddUnary: variable %d, label %d: %w", v, l, err)
		}
	}
	s.emarginOK = false
	if s.ulab != nil {
		s.ulab[v] = -1 // energy reads v's unary again
	}
	for l, d := range delta {
		i := int(lo) + l
		s.u64[i] += d
		if x := s.u64[i]; math.IsInf(x, 1) || x > float64(s.big) {
			// Lowering a finite energy to the penalty keeps the bound valid.
			s.u32[i] = s.big
		} else {
			s.u32[i] = float32(x)
		}
	}
	return nil
}

// Offset is the constant term of the solver's problem.
func (s *Solver) Offset() float64 { return s.offset }

// AddConstant adds c to the constant term of the solver's problem (its
// energies and bounds move by c; messages are unchanged).
func (s *Solver) AddConstant(c float64) {
	s.src = nil
	s.offset += c
	s.emarginOK = false
}

// SetUnary replaces the unary term of the solver's variable v by values (as AddUnary,
// messages kept).
func (s *Solver) SetUnary(v int, values []float64) error {
	s.src = nil
	if v < 0 || v >= s.n {
		return fmt.Errorf("trws: SetUnary: variable %d out of range [0,%d)", v, s.n)
	}
	delta := make([]float64, len(values))
	cur := s.u64[s.uoff[v]:s.uoff[v+1]]
	if len(values) != len(cur) {
		return fmt.Errorf("trws: SetUnary: %d values for a variable with %d labels", len(values), len(cur))
	}
	for l := range cur {
		if err := model.CheckValue(values[l]); err != nil {
			return fmt.Errorf("trws: SetUnary: variable %d, label %d: %w", v, l, err)
		}
		cur[l] = 0
		delta[l] = values[l]
	}
	return s.AddUnary(v, delta)
}

// NumEdges is the number of pairwise terms of the current problem.
func (s *Solver) NumEdges() int { return len(s.tail) }

// Restrict returns a solver on the node subset keep (solver variables, any order,
// distinct) with the edges among them, their unary terms and their messages: a warm
// start for the sub-problem of a pruning iteration. The new solver numbers the kept
// nodes in increasing order, has offset 0 (like model.Induced) and shares the tables.
func (s *Solver) Restrict(keep []int) (*Solver, error) {
	keep = slices.Clone(keep)
	slices.Sort(keep)
	loc := make([]int32, s.n)
	for i := range loc {
		loc[i] = -1
	}
	for i, v := range keep {
		if v < 0 || v >= s.n || loc[v] >= 0 {
			return nil, fmt.Errorf("trws: Restrict: node %d out of range or repeated", v)
		}
		loc[v] = int32(i)
	}
	r := &Solver{n: len(keep), big: s.big, tables: s.tables, vars: make([]int, len(keep)), shared: true}
	s.own, s.shared = nil, true // the tables are shared now: the next SetTable of either copies
	r.labels = make([]int32, len(keep))
	r.uoff = make([]int32, len(keep)+1)
	for i, v := range keep {
		r.uoff[i+1] = r.uoff[i] + s.labels[v]
	}
	r.u64, r.u32 = make([]float64, 0, r.uoff[len(keep)]), make([]float32, 0, r.uoff[len(keep)])
	for i, v := range keep {
		r.vars[i] = s.vars[v]
		r.labels[i] = s.labels[v]
		r.u64 = append(r.u64, s.u64[s.uoff[v]:s.uoff[v+1]]...)
		r.u32 = append(r.u32, s.u32[s.uoff[v]:s.uoff[v+1]]...)
	}
	// The edges kept, counted first so that every array is allocated once.
	nk := 0
	for e := range s.tail {
		if loc[s.tail[e]] >= 0 && loc[s.head[e]] >= 0 {
			nk++
		}
	}
	kept := make([]int, 0, nk)
	r.tail, r.head, r.kind = make([]int32, 0, nk), make([]int32, 0, nk), make([]uint8, 0, nk)
	r.w, r.t, r.tab = make([]float32, 0, nk), make([]float32, 0, nk), make([]int32, 0, nk)
	r.fn, r.swap = make([]*model.Function, 0, nk), make([]bool, 0, nk)
	for e := range s.tail {
		if t, h := loc[s.tail[e]], loc[s.head[e]]; t >= 0 && h >= 0 {
			kept = append(kept, e)
			r.tail, r.head = append(r.tail, t), append(r.head, h)
			r.kind, r.w, r.t, r.tab = append(r.kind, s.kind[e]), append(r.w, s.w[e]), append(r.t, s.t[e]), append(r.tab, s.tab[e])
			r.fn, r.swap = append(r.fn, s.fn[e]), append(r.swap, s.swap[e])
			if s.kind[e] == kindDifference || s.kind[e] == kindPattern {
				if r.dif == nil {
					r.dif = make([]int32, len(kept)-1, len(s.tail))
					for i := range r.dif {
						r.dif[i] = -1
					}
				}
				r.dif, r.difs = append(r.dif, int32(len(r.difs))), append(r.difs, s.difs[s.dif[e]])
			} else if r.dif != nil {
				r.dif = append(r.dif, -1)
			}
		}
	}
	r.finishGraph()
	for i, e := range kept {
		copy(r.msg[r.mhead[i]:r.mhead[i]+r.labels[r.head[i]]], s.msg[s.mhead[e]:])
		copy(r.msg[r.mtail[i]:r.mtail[i]+r.labels[r.tail[i]]], s.msg[s.mtail[e]:])
	}
	return r, nil
}

// NumMessages is the number of message entries (two per edge and label of
// its ends).
func (s *Solver) NumMessages() int { return len(s.msg) }

// SaveMessages returns a copy of the solver's messages, to be loaded
// (LoadMessages) into a new solver of the same model once this one has gone
// on: the state of a solve kept at the price of one copy. The copy is in a
// certificate's order, whatever the solver's layout (layoutOrder).
func (s *Solver) SaveMessages() []float32 { return s.messages() }

// LoadMessages replaces the messages by saved, a SaveMessages of a solver of
// the same nodes, labels and edges, and reports whether their count fits.
func (s *Solver) LoadMessages(saved []float32) bool {
	if len(saved) != len(s.msg) {
		return false
	}
	k, before := s.edgeRanges()
	spreadParts(len(s.tail), k, func(p, lo, hi int) {
		in := saved[before[p]:before[p+1]]
		for e := lo; e < hi; e++ {
			first, second := s.msgInto(int32(e), s.tail[e]), s.msgInto(int32(e), s.head[e])
			if s.swap[e] {
				first, second = second, first
			}
			in = in[copy(first, in):]
			in = in[copy(second, in):]
		}
	})
	return true
}

// SetTable replaces the table of edge e — the e-th factor of order 2 of the model the
// solver was built from, in factor order — by t (row-major in the factor's argument
// order, +Inf allowed, no NaN or −Inf), keeping the messages: the next Solve starts
// from them. The solver keeps t for exact energies: the caller must not change it
// afterwards. Label elimination rewrites the few factors whose map changed between
// rounds this way instead of building a new solver.
func (s *Solver) SetTable(e int, t []float64) error {
	s.src = nil
	if e < 0 || e >= len(s.tail) {
		return fmt.Errorf("trws: SetTable: edge %d out of range [0,%d)", e, len(s.tail))
	}
	first, second := s.labels[s.tail[e]], s.labels[s.head[e]]
	if s.swap[e] {
		first, second = second, first
	}
	if len(t) != int(first*second) {
		return fmt.Errorf("trws: SetTable: %d values for a %d×%d edge", len(t), first, second)
	}
	limit := float64(s.big) / 4
	for _, v := range t {
		if v > -limit && v < limit || math.IsInf(v, 1) { // one or two comparisons an entry
			continue
		}
		if err := model.CheckValue(v); err != nil {
			return fmt.Errorf("trws: SetTable: edge %d: %w", e, err)
		}
		return fmt.Errorf("trws: SetTable: edge %d: %v is beyond the solver's penalty for +Inf (%v)", e, v, s.big)
	}
	fn := &model.Function{Kind: model.Explicit, Shape: []int{int(first), int(second)}, Table: t}
	if s.own == nil && !s.shared {
		s.claimSlots()
	}
	if s.own == nil || !s.own[e] {
		// A fresh slot: the old one may be shared with edges of the same function
		// (or, the first rewrite since New or Restrict, with a Restrict-ed solver).
		s.tab[e] = s.newSlot(len(t))
		s.own[e] = true
	}
	kt, kh := int(s.labels[s.tail[e]]), int(s.labels[s.head[e]])
	dst := s.tables[s.tab[e] : int(s.tab[e])+kt*kh]
	for a := 0; a < kt; a++ {
		for b := 0; b < kh; b++ {
			v := fn.Table[a*kh+b]
			if s.swap[e] {
				v = fn.Table[b*kt+a]
			}
			if math.IsInf(v, 1) {
				dst[a*kh+b] = s.big
			} else {
				dst[a*kh+b] = float32(v)
			}
		}
	}
	s.fn[e], s.kind[e] = fn, kindTable
	table2 := s.table2 // still every edge a two-label table or Potts term
	s.generalPasses()
	s.table2 = table2
	if s.dif != nil {
		s.dif[e] = -1
	}
	return nil
}

// Model returns the solver's current problem as a model whose pairwise factors are
// the solver's edges in order (a Certificate's edges): the model New built it from,
// while no term changed since; else a model built from the solver, the pairwise
// factors then one unary factor per variable with its accumulated unary term
// (constant ones become offset).
func (s *Solver) Model() (*model.Model, error) {
	if s.src != nil {
		return s.src, nil
	}
	labels := make([]int, s.n)
	for i, k := range s.labels {
		labels[i] = int(k)
	}
	b := model.NewBuilder(labels)
	if err := b.AddConstant(s.offset); err != nil {
		return nil, err
	}
	for e, fn := range s.fn {
		id, err := b.AddFunction(*fn)
		if err != nil {
			return nil, err
		}
		a, h := int(s.tail[e]), int(s.head[e])
		if s.swap[e] {
			a, h = h, a
		}
		if err := b.AddFactor(id, a, h); err != nil {
			return nil, err
		}
	}
	for i := 0; i < s.n; i++ {
		if err := b.AddTable([]int{i}, s.u64[s.uoff[i]:s.uoff[i+1]]); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// Marginal writes node v's reparametrised unary D_v — its unary plus every message
// into it, the quantity whose minimisers are v's locally optimal labels — into d
// (one entry per label) and returns d. Valid after Solve.
func (s *Solver) Marginal(v int, d []float64) []float64 {
	k := s.labels[v]
	buf := s.scratch[:k] // free outside Solve
	s.sumInto(int32(v), buf)
	d = d[:k]
	for l, x := range buf {
		d[l] = float64(x)
	}
	return d
}

// TakeMessages copies prev's messages when prev solved a model of the same nodes
// and edges (same label counts, same factor scopes in the same order) and reports
// whether it did. Any messages are a valid reparametrisation, so tables may
// differ: it is the warm start of a sequence of problems on one graph whose
// pairwise terms change (label elimination's verification problems).
func (s *Solver) TakeMessages(prev *Solver) bool {
	if prev == nil || s.n != prev.n || len(s.msg) != len(prev.msg) || !slices.Equal(s.labels, prev.labels) ||
		!slices.Equal(s.tail, prev.tail) || !slices.Equal(s.head, prev.head) {
		return false
	}
	if s.regions == prev.regions {
		copy(s.msg, prev.msg)
		return true
	}
	// Laid out for other strips (built on another number of cores): edge by edge.
	spread(len(s.tail), func(lo, hi int) {
		for e := lo; e < hi; e++ {
			copy(s.msgInto(int32(e), s.tail[e]), prev.msgInto(int32(e), prev.tail[e]))
			copy(s.msgInto(int32(e), s.head[e]), prev.msgInto(int32(e), prev.head[e]))
		}
	})
	return true
}
