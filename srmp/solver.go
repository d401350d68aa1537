package srmp

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// Solver holds a model of any order and the SRMP state (one message per factor
// argument), which persists across calls to Solve. It is not safe for concurrent use.
type Solver struct {
	m      *model.Model
	n      int
	labels []int32
	uoff   []int32   // variable v's unary and D rows are [uoff[v], uoff[v+1])
	u      []float64 // unary terms, +Inf replaced by big
	big    float64   // penalty standing in for +Inf (trws.Penalty)

	// Factors of order ≥ 2, in model factor order. Slot k is one factor argument:
	// factor a's arguments are the slots [fstart[a], fstart[a+1]), slot k is on
	// variable fvar[k] and its message (into the variable) is msg[moff[k]:][:K].
	fn          []*model.Function
	fstart      []int32
	fvar        []int32
	slotFac     []int32
	moff        []int32
	msg         []float64
	first, last []int32   // smallest and largest variable of each factor
	cmin        []float64 // min of the reparametrised factor after the backward pass

	// Incidences: the slots of variable v are islot[istart[v]:istart[v+1]].
	istart []int32
	islot  []int32
	omega  []float64 // share of a variable's reparametrised unary given to each factor
	wnode  []float64 // what the variable keeps: 1 − ω·#(factors with an earlier variable)
	D      []float64 // reparametrised unary of each variable at its last backward step

	vars   []int // solver variable → variable of the model the first solver was built from
	iters  int
	sc     *scanner
	sub    [][]float64 // scan arguments, one per argument of the largest factor
	fix    []int32
	tuple  []int
	buf    []float64 // 2·max labels
	primal []int32
	argmin []int32
	cons   []int32
	// round's search: variable v's candidate labels are cand[uoff[v]:][:ncand[v]],
	// next[v] the next one to try.
	cand        []int32
	ncand, next []int32
	conflict    [][]int32 // earlier variables whose labels forbade some of v's
	searchAfter int       // iteration before which round does not search
	searchFails int       // round's searches in a row that ran out of budget
}

// ErrTooLarge is returned for a factor whose function has more entries than the
// solver enumerates (model.MaxTableSize): every message of such a factor would scan
// them all.
var ErrTooLarge = errors.New("srmp: factor too large to enumerate")

// New builds a solver for m (factors of any order; unary factors become the unary
// terms, factors of order ≥ 2 get messages). Memory is linear in the number of factor
// arguments' labels; the tables are the model's own, never copied.
func New(m *model.Model) (*Solver, error) {
	n := m.NumVars()
	s := &Solver{m: m, n: n, labels: m.LabelCounts(), vars: make([]int, n)}
	for v := range s.vars {
		s.vars[v] = v
	}
	s.uoff = make([]int32, n+1)
	for v := 0; v < n; v++ {
		if int64(s.uoff[v])+int64(s.labels[v]) > math.MaxInt32 {
			return nil, fmt.Errorf("srmp: more than %d unary entries", math.MaxInt32)
		}
		s.uoff[v+1] = s.uoff[v] + s.labels[v]
	}
	exact := make([]float64, s.uoff[n])
	maxOrder, maxK := 1, 1
	var nslots, nmsg int64
	s.fstart = []int32{0}
	for f := 0; f < m.NumFactors(); f++ {
		vars, fn := m.FactorVars(f), m.FactorFunction(f)
		if len(vars) == 1 {
			u := exact[s.uoff[vars[0]]:s.uoff[vars[0]+1]]
			for l := range u {
				u[l] += fn.Table[l]
			}
			continue
		}
		if size := enumSize(fn.Shape); size > model.MaxTableSize {
			return nil, fmt.Errorf("%w: factor %d on %d variables has %v entries (at most %d)", ErrTooLarge, f, len(vars), size, model.MaxTableSize)
		}
		a := int32(len(s.fn))
		s.fn = append(s.fn, fn)
		lo, hi := vars[0], vars[0]
		for _, v := range vars {
			s.fvar = append(s.fvar, v)
			s.slotFac = append(s.slotFac, a)
			s.moff = append(s.moff, int32(nmsg))
			nmsg += int64(s.labels[v])
			lo, hi = min(lo, v), max(hi, v)
		}
		nslots += int64(len(vars))
		if nmsg > math.MaxInt32 || nslots > math.MaxInt32 {
			return nil, fmt.Errorf("srmp: more than %d message entries", math.MaxInt32)
		}
		s.fstart = append(s.fstart, int32(len(s.fvar)))
		s.first, s.last = append(s.first, lo), append(s.last, hi)
		maxOrder = max(maxOrder, len(vars))
	}
	for v := 0; v < n; v++ {
		maxK = max(maxK, int(s.labels[v]))
	}
	s.big = trws.Penalty(m)
	s.u = make([]float64, len(exact))
	for i, x := range exact {
		s.u[i] = math.Min(x, s.big)
	}
	s.msg = make([]float64, nmsg)
	s.cmin = make([]float64, len(s.fn))
	s.D = make([]float64, s.uoff[n])
	s.finish(maxOrder, maxK)
	return s, nil
}

// finish builds the incidences and weights and sizes the buffers.
func (s *Solver) finish(maxOrder, maxK int) {
	n := s.n
	s.istart = make([]int32, n+1)
	for _, v := range s.fvar {
		s.istart[v+1]++
	}
	for v := 0; v < n; v++ {
		s.istart[v+1] += s.istart[v]
	}
	s.islot = make([]int32, len(s.fvar))
	next := slices.Clone(s.istart[:n])
	for k, v := range s.fvar {
		s.islot[next[v]] = int32(k)
		next[v]++
	}
	s.omega, s.wnode = make([]float64, n), make([]float64, n)
	for v := 0; v < n; v++ {
		var earlier, later int
		for _, k := range s.islot[s.istart[v]:s.istart[v+1]] {
			a := s.slotFac[k]
			if s.first[a] < int32(v) {
				earlier++
			}
			if s.last[a] > int32(v) {
				later++
			}
		}
		s.wnode[v] = 1
		if d := max(earlier, later); d > 0 {
			s.omega[v] = 1 / float64(d)
			s.wnode[v] = 1 - float64(earlier)*s.omega[v]
		}
	}
	s.sc = newScanner(maxOrder, maxK)
	s.sub = make([][]float64, maxOrder)
	s.fix = make([]int32, maxOrder)
	s.tuple = make([]int, maxOrder)
	s.buf = make([]float64, 2*maxK)
	s.primal, s.argmin, s.cons = make([]int32, n), make([]int32, n), make([]int32, n)
	s.cand, s.ncand, s.next = make([]int32, s.uoff[n]), make([]int32, n), make([]int32, n)
	s.conflict = make([][]int32, n)
	for v := range s.cons {
		s.cons[v] = -1
	}
}

// Warm builds a solver for m that starts from prev's messages: m's variable i is
// prev's variable vars[i], and every factor of m whose variables and function equal
// those of a factor of prev takes over that factor's messages (the others start at
// zero). Any messages are a valid reparametrisation, so this only affects speed: it is
// the warm start of the persistency method's pruning iterations, whose sub-problems
// keep the inside factors and change unary and boundary terms.
func Warm(m *model.Model, prev *Solver, vars []int) (*Solver, error) {
	if len(vars) != m.NumVars() {
		return nil, fmt.Errorf("srmp: Warm: %d variables mapped, the model has %d", len(vars), m.NumVars())
	}
	for i, v := range vars {
		if v < 0 || v >= prev.n || m.NumLabels(i) != int(prev.labels[v]) {
			return nil, fmt.Errorf("srmp: Warm: variable %d maps to %d, which is out of range or has another label count", i, v)
		}
	}
	s, err := New(m)
	if err != nil {
		return nil, err
	}
	for i, v := range vars {
		s.vars[i] = prev.vars[v]
	}
	seed := maphash.MakeSeed()
	key := func(vs []int32, mapv func(int32) int32) uint64 {
		var h maphash.Hash
		h.SetSeed(seed)
		for _, v := range vs {
			x := mapv(v)
			h.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
		}
		return h.Sum64()
	}
	byKey := map[uint64][]int32{}
	for a := range prev.fn {
		k := key(prev.fvar[prev.fstart[a]:prev.fstart[a+1]], func(v int32) int32 { return v })
		byKey[k] = append(byKey[k], int32(a))
	}
	used := make([]bool, len(prev.fn))
	for a := range s.fn {
		vs := s.fvar[s.fstart[a]:s.fstart[a+1]]
		for _, b := range byKey[key(vs, func(v int32) int32 { return int32(vars[v]) })] {
			pv := prev.fvar[prev.fstart[b]:prev.fstart[b+1]]
			if used[b] || len(pv) != len(vs) || !sameVars(vs, pv, vars) || !sameFunction(s.fn[a], prev.fn[b]) {
				continue
			}
			used[b] = true
			for p := range vs {
				ks, kp := s.fstart[a]+int32(p), prev.fstart[b]+int32(p)
				K := s.labels[vs[p]]
				copy(s.msg[s.moff[ks]:s.moff[ks]+K], prev.msg[prev.moff[kp]:])
			}
			break
		}
	}
	return s, nil
}

func sameVars(vs, pv []int32, vars []int) bool {
	for p, v := range vs {
		if int32(vars[v]) != pv[p] {
			return false
		}
	}
	return true
}

func sameFunction(f, g *model.Function) bool {
	if f == g {
		return true
	}
	if f.Kind != g.Kind || f.W != g.W || f.T != g.T || !slices.Equal(f.Shape, g.Shape) || len(f.Table) != len(g.Table) {
		return false
	}
	if len(f.Table) > 0 && &f.Table[0] == &g.Table[0] {
		return true
	}
	return slices.Equal(f.Table, g.Table)
}

// NumVars is the number of variables.
func (s *Solver) NumVars() int { return s.n }

// NumFactors is the number of factors of order ≥ 2 (the ones with messages).
func (s *Solver) NumFactors() int { return len(s.fn) }

// Vars maps the solver's variables to the variables of the model the first solver
// of a chain of Warm starts was built from (the identity for New).
func (s *Solver) Vars() []int { return s.vars }

// Iterations is the number of iterations run over the solver's lifetime.
func (s *Solver) Iterations() int { return s.iters }

// Model is the model the solver was built from.
func (s *Solver) Model() *model.Model { return s.m }

// enumSize is the product of shape as a float, so that it cannot overflow.
func enumSize(shape []int) float64 {
	p := 1.0
	for _, k := range shape {
		p *= float64(k)
	}
	return p
}

// Marginal writes variable v's reparametrised unary D_v at its last backward step —
// the quantity whose minimisers are v's locally optimal labels — into d (one entry
// per label) and returns d. Valid after Solve.
func (s *Solver) Marginal(v int, d []float64) []float64 {
	row := s.D[s.uoff[v]:s.uoff[v+1]]
	d = d[:len(row)]
	copy(d, row)
	return d
}

// TakeMessages copies prev's messages when prev solved a model with the same
// variables and factor scopes in the same order (tables may differ: any messages
// are a valid reparametrisation) and reports whether it did.
func (s *Solver) TakeMessages(prev *Solver) bool {
	if prev == nil || s.n != prev.n || len(s.msg) != len(prev.msg) || !slices.Equal(s.labels, prev.labels) ||
		!slices.Equal(s.fstart, prev.fstart) || !slices.Equal(s.fvar, prev.fvar) {
		return false
	}
	copy(s.msg, prev.msg)
	return true
}
