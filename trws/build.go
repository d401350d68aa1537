package trws

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
)

// Edge kinds, one message kernel each.
const (
	kindPotts uint8 = iota
	kindTruncLinear
	kindTruncQuad
	kindTable      // explicit table, row = tail label
	kindDifference // model.Difference (difference.go)
	kindPattern    // a Potts model.Difference as w times a shared unit table (pattern.go)
)

// Solver holds a pairwise model in the solver's layout and the TRW-S state (messages),
// which persists across calls to Solve. It is not safe for concurrent use.
type Solver struct {
	n      int
	labels []int32 // label count per node
	uoff   []int32 // node i's unary and scratch rows are [uoff[i], uoff[i+1])
	u32    []float32
	u64    []float64 // exact unary (+Inf allowed), for energies
	offset float64
	big    float32 // penalty standing in for +Inf in float32 arithmetic

	// Edges, tail < head in the processing order, in model factor order.
	tail, head []int32
	kind       []uint8
	w, t       []float32 // Potts / truncated parameters
	tab        []int32   // kindTable, kindPattern: offset of the table (row = tail label) in tables
	dif        []int32   // kindDifference: the edge's entry in difs (nil: no such edge)
	difs       []difference
	dbuf       []float32 // the Difference kernels' distance transforms
	dlab       []int32   // and their labels and values, movable then immovable
	dval       []float32
	fn         []*model.Function
	own        []bool // SetTable wrote the edge's table slot for it alone (nil: none, and tables may be shared)
	shared     bool   // tables shared with a Restrict-ed solver, or the solver restricted: own starts nil
	pat        patterns
	swap       []bool  // the model factor lists (head, tail)
	mhead      []int32 // offset in msg of the message into the head
	mtail      []int32 // and into the tail
	msg        []float32
	tables     []float32

	// Node adjacency: edges where the node is the head (earlier neighbours) first,
	// then edges where it is the tail (later neighbours).
	astart []int32
	aedge  []int32
	ain    []int32 // offset of the message into the node along aedge[k]
	aout   []int32 // offset of the message out of it (into the neighbour)
	nbwd   []int32 // number of earlier neighbours
	gamma  []float32

	vars []int // solver node → variable of the model the solver was built from

	// src is the model New built the solver from, while the solver's problem is
	// still that model (no unary or pairwise term changed since): Model returns
	// it instead of building one (one edge per pairwise factor, in order, so a
	// certificate's edges are its factors).
	src *model.Model
	// proved is the last draft CertifyBest certified on src, with its verdict.
	proved *provedDraft

	// Per-node results of the last check pass.
	primal    []int32
	argmin    []int32
	consLabel []int32
	// fused says that the last backward pass computed argmin and consLabel
	// (Potts models, before a check); chkD holds its nodes' D (by uoff) for
	// consistNode (the general Potts passes, above 8 labels).
	fused bool
	chkD  []float32
	// rounded says that primal holds the check's labeling already, rounded in
	// this iteration's forward pass (forwardRound, Potts models).
	rounded bool
	w64     []float64 // the Potts weights, exact, for energies (allPotts)
	// ucur[i] is the unary of node i at label ulab[i] (−1: none), for
	// energy: the labelings a solve checks differ in few labels, and a
	// float64 a node costs less to read than a node's row of u64.
	ucur []float64
	ulab []int32
	// emargin bounds how far rounding can move energy's sums (notBetter);
	// emarginOK says it is up to date (AddUnary invalidates it).
	emargin   float64
	emarginOK bool

	allPotts bool      // every edge Potts and one label count: the Potts passes apply
	tl2      bool      // the truncated-linear passes apply (trunclinear.go)
	table2   bool      // the two-label Potts and table passes apply (table2.go)
	mk       int       // largest label count
	scratch  []float32 // 4·mk: D, h, primal scores, distance transforms
	envV     []int32   // parabola envelope of the truncated quadratic kernel
	envZ     []float64
	iters    int // iterations run so far (all calls)

	// Column strips side by side (pipeline.go): the grid's width (gridWidth, 0:
	// not a grid), the strips its messages are laid out for (layoutOrder, 0: the
	// nodes' order), the width the passes run in strips (0: not a grid, or too
	// small), the goroutines of this Solve, each block's part of the bound, the
	// other goroutines' D and h.
	grid        int
	regions     int
	rowWidth    int
	threads     int
	crew        *crew // the other strips' goroutines during a Solve
	partial     []float64
	pipeScratch []float32
}

// ErrNotPairwise is returned for models with factors of order > 2.
var ErrNotPairwise = errors.New("trws: the model has factors of order > 2; use the higher-order solver")

// New builds a solver for the pairwise model m (factors of order ≤ 2).
func New(m *model.Model) (*Solver, error) {
	s, funcs, err := newGraph(m)
	if err != nil {
		return nil, err
	}
	s.vars = make([]int, s.n)
	spread(s.n, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			s.vars[v] = v
		}
	})
	// The edges' kernels and parameters on every core; the edges whose
	// tables New lays out (explicit and difference functions) after, in edge
	// order, as they share tables.
	npair := len(s.tail)
	s.kind, s.w, s.t, s.tab = make([]uint8, npair), make([]float32, npair), make([]float32, npair), make([]int32, npair)
	tabled := make([]bool, parts(npair))
	spreadParts(npair, len(tabled), func(p, lo, hi int) {
		for e := lo; e < hi; e++ {
			fn := s.fn[e]
			k := kernelKind(fn.Kind)
			s.kind[e], s.w[e], s.t[e], s.tab[e] = k, float32(fn.W), float32(math.Min(fn.T, math.MaxFloat32)), -1
			tabled[p] = tabled[p] || k == kindTable || k == kindDifference
		}
	})
	if slices.Contains(tabled, true) {
		s.layTables(m, funcs)
	}
	for s.dif != nil && len(s.dif) < len(s.kind) {
		s.dif = append(s.dif, -1)
	}
	if s.own != nil {
		s.ownSlots()
	}
	s.u32 = toFloat32(s.u64, s.big)
	s.finishGraph()
	s.src = m
	return s, nil
}

// layTables gives each edge of an explicit or a difference function its
// kernel's state, in edge order: a difference's, or its table's offset in
// s.tables, each (function, orientation) laid out once.
func (s *Solver) layTables(m *model.Model, funcs []int32) {
	// tableOf[2·i + transposed] is the offset of function i's table (−1: none
	// yet); slices by function index, not maps: a model of 21-label segments
	// spent a third of New growing the maps.
	tableOf := slices.Repeat([]int32{-1}, 2*m.NumFunctions())
	entries := 0
	explicit := make([]bool, m.NumFunctions()) // the explicit pairwise functions, sized once below
	for e, fn := range s.fn {
		if fn.Kind == model.Explicit && !explicit[funcs[e]] {
			explicit[funcs[e]] = true
			entries += len(fn.Table)
		}
	}
	s.tables = make([]float32, 0, entries)
	for e, fn := range s.fn {
		swap, k := s.swap[e], s.kind[e]
		if fn.Kind == model.Difference && s.setDifference(e, fn, swap) == nil {
			continue
		}
		if k == kindTable || k == kindDifference {
			s.kind[e], s.tab[e] = kindTable, s.table(fn, swap, &tableOf[2*funcs[e]+int32(b2i(swap))]) // a difference of other maps too
		}
	}
}

// newGraph is what a certificate's polish needs of New(m): the unary terms
// (float64, in factor order), the penalty, the edges in factor order with
// their functions — and funcs, each edge's function index in m.
func newGraph(m *model.Model) (s *Solver, funcs []int32, err error) {
	n := m.NumVars()
	s = &Solver{n: n, labels: m.LabelCounts(), offset: m.Offset()}
	s.uoff = make([]int32, n+1)
	for v := 0; v < n; v++ {
		if int64(s.uoff[v])+int64(s.labels[v]) > math.MaxInt32 {
			return nil, nil, fmt.Errorf("trws: more than %d unary entries", math.MaxInt32)
		}
		s.uoff[v+1] = s.uoff[v] + s.labels[v]
	}
	// The pairwise factors, counted by ranges of factors on every core, then
	// each range's edges from where the range's first goes.
	nf := m.NumFactors()
	k := parts(nf)
	higher := make([]bool, k)
	before := starts(nf, k, func(p, lo, hi int) (pairs int) {
		for f := lo; f < hi && !higher[p]; f++ {
			switch len(m.FactorVars(f)) {
			case 1:
			case 2:
				pairs++
			default:
				higher[p] = true
			}
		}
		return pairs
	})
	if slices.Contains(higher, true) {
		return nil, nil, ErrNotPairwise
	}
	s.big = float32(math.Min(Penalty(m), 1e30)) // +Inf's stand-in in the tables as they are made
	npair := before[k]
	s.tail, s.head, s.swap, s.fn = make([]int32, npair), make([]int32, npair), make([]bool, npair), make([]*model.Function, npair)
	funcs = make([]int32, npair)
	spreadParts(nf, k, func(p, lo, hi int) {
		e := before[p]
		for f := lo; f < hi; f++ {
			vars := m.FactorVars(f)
			if len(vars) != 2 {
				continue
			}
			a, b := vars[0], vars[1]
			swap := a > b
			if swap {
				a, b = b, a
			}
			s.tail[e], s.head[e], s.swap[e], s.fn[e], funcs[e] = a, b, swap, m.FactorFunction(f), int32(m.FactorFunc(f))
			e++
		}
	})
	// A node's unary terms summed over its unary factors in factor order (a
	// variable's factors are listed in factor order): the floats of one loop
	// over the factors, on every core.
	s.u64 = make([]float64, s.uoff[n])
	spread(n, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			u := s.u64[s.uoff[v]:s.uoff[v+1]]
			for _, f := range m.VarFactors(v) {
				if len(m.FactorVars(int(f))) == 1 {
					t := m.FactorFunction(int(f)).Table
					for l := range u {
						u[l] += t[l]
					}
				}
			}
		}
	})
	return s, funcs, nil
}

// newPolisher is a solver of m with what its certificates' polish reads (the
// graph of newGraph, its adjacency), without New's float32 terms, messages and
// check state: a draft's check builds one a window (Draft.Certificate).
func newPolisher(m *model.Model, threads int) (*Solver, error) {
	s, _, err := newGraph(m)
	if err != nil {
		return nil, err
	}
	s.adjacency()
	if s.threads = threads; s.n >= pipeMin {
		s.rowWidth = s.gridWidth() // the polish runs in strips on a grid
	}
	return s, nil
}

// kernelKind is the message kernel of a function kind.
func kernelKind(k model.Kind) uint8 {
	switch k {
	case model.Potts:
		return kindPotts
	case model.TruncatedLinear:
		return kindTruncLinear
	case model.TruncatedQuadratic:
		return kindTruncQuad
	case model.Difference:
		return kindDifference
	}
	return kindTable
}

// table returns the offset in s.tables of fn's table as float32 with rows indexed by
// the tail label (transposed when the model factor lists the head first), adding it
// the first time (*cache < 0; then set), +Inf entries as the penalty s.big.
func (s *Solver) table(fn *model.Function, transposed bool, cache *int32) int32 {
	if *cache >= 0 {
		return *cache
	}
	off := int32(len(s.tables))
	ka, kb := fn.Shape[0], fn.Shape[1]
	s.tables = slices.Grow(s.tables, ka*kb)[:int(off)+ka*kb]
	t := s.tables[off:]
	var buf []float64
	for a := range ka {
		row := fn.Row(a, &buf)
		if transposed {
			for b, v := range row {
				t[b*ka+a] = s.entry(v)
			}
		} else {
			for b, v := range row {
				t[a*kb+b] = s.entry(v)
			}
		}
	}
	*cache = off
	return off
}

// entry is a table entry in float32, +Inf as the penalty.
func (s *Solver) entry(v float64) float32 {
	if math.IsInf(v, 1) {
		return s.big
	}
	return float32(v)
}

// finishGraph builds the adjacency, lays out the messages, and sizes γ and the
// scratch buffers from the edge list. Messages are grouped by receiving node, in
// adjacency order, so that a node reads all its incoming messages as one block,
// the nodes in layoutOrder. When s.msg is nil the messages start at zero.
func (s *Solver) finishGraph() {
	n, ne := s.n, len(s.tail)
	headPos, tailPos := s.adjacency()
	s.grid = s.gridWidth()
	// Each node's incoming messages one block after the other, by ranges of
	// the layout on every core: the ranges' sizes, summed, then each range's
	// offsets from its start.
	var order []int32
	order, s.regions = s.layoutOrder()
	node := func(q int) int32 {
		if order == nil {
			return int32(q)
		}
		return order[q]
	}
	s.ain, s.aout = make([]int32, 2*ne), make([]int32, 2*ne)
	k := parts(n)
	before := starts(n, k, func(_, lo, hi int) (size int32) {
		for q := lo; q < hi; q++ {
			v := node(q)
			size += (s.astart[v+1] - s.astart[v]) * s.labels[v]
		}
		return size
	})
	s.gamma = make([]float32, n)
	spreadParts(n, k, func(p, lo, hi int) {
		size := before[p]
		for q := lo; q < hi; q++ {
			v := node(q)
			for a := s.astart[v]; a < s.astart[v+1]; a++ {
				s.ain[a] = size
				size += s.labels[v]
			}
			s.gamma[v] = gammaOf(s.nbwd[v], s.astart[v+1]-s.astart[v]-s.nbwd[v])
		}
	})
	s.mhead, s.mtail = make([]int32, ne), make([]int32, ne)
	spread(ne, func(lo, hi int) {
		for e := lo; e < hi; e++ {
			hp, tp := headPos[e], tailPos[e]
			s.mhead[e], s.mtail[e] = s.ain[hp], s.ain[tp]
			s.aout[hp], s.aout[tp] = s.ain[tp], s.ain[hp]
		}
	})
	if s.msg == nil {
		s.msg = make([]float32, before[k])
	}
	s.scratch = make([]float32, 4*s.mk)
	s.envV = make([]int32, s.mk+2)
	s.envZ = make([]float64, s.mk+2)
	for _, d := range s.difs {
		s.sizeDifference(d.r)
	}
	s.setupUniformPasses()
	s.primal = make([]int32, n)
	s.argmin = make([]int32, n)
	s.consLabel = make([]int32, n)
	for v := range s.consLabel {
		s.consLabel[v] = -1
	}
}

// adjacency builds the nodes' adjacency from the edge list — astart, nbwd and
// aedge: each node's earlier neighbours' edges, then its later ones', each in
// edge order — and mk; it returns each edge's entry at its head and its tail.
func (s *Solver) adjacency() (headPos, tailPos []int32) {
	n, ne := s.n, len(s.tail)
	deg := make([]int32, n+1)
	s.nbwd = make([]int32, n)
	for e := 0; e < ne; e++ {
		deg[s.tail[e]+1]++
		deg[s.head[e]+1]++
		s.nbwd[s.head[e]]++
	}
	for v := 0; v < n; v++ {
		deg[v+1] += deg[v]
	}
	s.astart = deg
	s.aedge = make([]int32, 2*ne)
	bwdNext := make([]int32, n) // earlier neighbours fill [astart, astart+nbwd)
	fwdNext := make([]int32, n)
	for v := 0; v < n; v++ {
		bwdNext[v] = s.astart[v]
		fwdNext[v] = s.astart[v] + s.nbwd[v]
	}
	headPos, tailPos = make([]int32, ne), make([]int32, ne)
	for e := 0; e < ne; e++ {
		h, t := s.head[e], s.tail[e]
		headPos[e], tailPos[e] = bwdNext[h], fwdNext[t]
		s.aedge[bwdNext[h]], s.aedge[fwdNext[t]] = int32(e), int32(e)
		bwdNext[h]++
		fwdNext[t]++
	}
	maxK := int32(1)
	for _, k := range s.labels {
		maxK = max(maxK, k)
	}
	s.mk = int(maxK)
	return headPos, tailPos
}

// gammaOf is TRW-S's weight γ of a node with these numbers of earlier and
// later neighbours: 1/max(earlier, later), 0 for an isolated node.
func gammaOf(earlier, later int32) float32 {
	if d := max(earlier, later); d > 0 {
		return 1 / float32(d)
	}
	return 0
}

// Penalty is the finite value that stands in for +Inf in the solvers' arithmetic on
// m: 2·Σ_f (range_f + max_f |θ_f|) + 1 over the factors' finite values. Above twice
// the sum of the ranges, a labeling with a forbidden state never beats a feasible
// one; above twice the sum of the magnitudes, no finite unary term — even shifted by
// boundary potentials, which are bounded by the magnitudes of the factors they come
// from — reaches it and is taken for a forbidden one.
func Penalty(m *model.Model) float64 {
	// Factors share functions: each function's term once, the functions the
	// factors use on every core, then summed over the factors in order.
	used := make([]bool, m.NumFunctions())
	for f := 0; f < m.NumFactors(); f++ {
		used[m.FactorFunc(f)] = true
	}
	term := make([]float64, m.NumFunctions())
	spread(len(term), func(lo, hi int) {
		for id := lo; id < hi; id++ {
			if !used[id] {
				continue
			}
			if lo, hi := finiteExtent(m.Func(id)); lo <= hi {
				term[id] = hi - lo + math.Max(math.Abs(lo), math.Abs(hi))
			}
		}
	})
	sum := 0.0
	for f := 0; f < m.NumFactors(); f++ {
		sum += term[m.FactorFunc(f)]
	}
	return 2*sum + 1
}

// finiteExtent is the smallest and largest finite value of fn (lo > hi: none).
func finiteExtent(fn *model.Function) (lo, hi float64) {
	switch fn.Kind {
	case model.Potts:
		return 0, fn.W
	case model.TruncatedLinear, model.TruncatedQuadratic:
		k := float64(max(fn.Shape[0], fn.Shape[1]))
		return 0, fn.W * math.Min(fn.T, k*k)
	case model.Difference:
		r := fn.Range()
		return -r, r
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	t := fn.Table
	if vector {
		lo, hi = extentAVX2(t) // eight entries an iteration (a protein's tables: 3% of a solve)
		t = t[len(t)&^7:]
	}
	for _, v := range t { // no NaN in a model
		if v < lo {
			lo = v
		}
		if v > hi && !math.IsInf(v, 1) {
			hi = v
		}
	}
	return lo, hi
}

func toFloat32(v []float64, big float32) []float32 {
	out := make([]float32, len(v))
	spread(len(v), func(lo, hi int) {
		for i, x := range v[lo:hi] {
			if math.IsInf(x, 1) {
				out[lo+i] = big
			} else {
				out[lo+i] = float32(x)
			}
		}
	})
	return out
}
