package uai

import (
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
)

// MaxWCSPTable bounds the table entries of all cost functions of a WCSP file together
// (128 MiB of float64).
const MaxWCSPTable = 1 << 24

// readWCSP reads toulbar2's weighted CSP format:
//
//	name nbvars maxdomain nbconstraints upperbound
//	domain sizes
//	per cost function: arity v₁ … v_k defaultcost ntuples, then ntuples lines "l₁ … l_k cost"
//
// A cost at or above the upper bound is a forbidden state. Global cost functions
// (keywords instead of tables) are refused. The default cost fills a dense table that
// the file does not spell out, so the tables of one file are capped at MaxWCSPTable
// entries in total: a short file cannot make the reader allocate without bound.
func readWCSP(s *scanner) (*model.Model, error) {
	if _, err := s.word("the problem name"); err != nil {
		return nil, err
	}
	labels, nCons, ub, err := readWCSPHeader(s)
	if err != nil {
		return nil, err
	}
	b := model.NewBuilder(labels)
	cost := func(v float64) float64 {
		if v >= ub {
			return math.Inf(1)
		}
		return v
	}
	var table []float64
	var scope, tuple []int
	budget := MaxWCSPTable
	for c := 0; c < nCons; c++ {
		k, ok := s.readInt(len(labels))
		if !ok {
			return nil, s.fail(fmt.Sprintf("the arity of cost function %d", c))
		}
		scope = scope[:0]
		size := 1
		for i := 0; i < k; i++ {
			v, ok := s.readInt(len(labels) - 1)
			if !ok {
				return nil, s.fail(fmt.Sprintf("a variable of cost function %d (0..%d)", c, len(labels)-1))
			}
			if size > budget/labels[v] {
				return nil, s.errorf("cost function %d: the tables would have more than %d entries in all", c, MaxWCSPTable)
			}
			size *= labels[v]
			scope = append(scope, v)
		}
		budget -= size
		def, ok := s.readFloat()
		if !ok {
			return nil, s.fail(fmt.Sprintf("the default cost of cost function %d (global cost functions are not supported)", c))
		}
		if math.IsNaN(def) || def < 0 {
			return nil, s.errorf("cost function %d: default cost %v (global cost functions are not supported)", c, def)
		}
		nt, ok := s.readInt(size)
		if !ok {
			return nil, s.fail(fmt.Sprintf("the tuple count of cost function %d (at most %d)", c, size))
		}
		table = table[:0]
		for i := 0; i < size; i++ {
			table = append(table, cost(def))
		}
		for t := 0; t < nt; t++ {
			tuple = tuple[:0]
			idx := 0
			for d, v := range scope {
				l, ok := s.readInt(labels[v] - 1)
				if !ok {
					return nil, s.fail(fmt.Sprintf("label %d of tuple %d of cost function %d (0..%d)", d, t, c, labels[v]-1))
				}
				idx = idx*labels[v] + l
			}
			w, ok := s.readFloat()
			if !ok {
				return nil, s.fail(fmt.Sprintf("the cost of tuple %d of cost function %d", t, c))
			}
			if math.IsNaN(w) || math.IsInf(w, -1) {
				return nil, s.errorf("cost function %d, tuple %d: cost %v is not allowed", c, t, w)
			}
			table[idx] = cost(w)
		}
		if err := b.AddTable(scope, table); err != nil {
			return nil, s.errorf("cost function %d: %v", c, err)
		}
	}
	if err := s.expectEOF(); err != nil {
		return nil, err
	}
	return b.Build()
}

// readWCSPHeader reads "nbvars maxdomain nbconstraints upperbound" and the domain sizes.
func readWCSPHeader(s *scanner) (labels []int, nCons int, ub float64, err error) {
	fail := func(err error) ([]int, int, float64, error) { return nil, 0, 0, err }
	n, err := s.int("the number of variables", maxCount)
	if err != nil {
		return fail(err)
	}
	maxDom, err := s.int("the maximum domain size", maxCount)
	if err != nil {
		return fail(err)
	}
	if nCons, err = s.int("the number of cost functions", maxCount); err != nil {
		return fail(err)
	}
	var ok bool
	if ub, ok = s.readFloat(); !ok {
		return fail(s.fail("the upper bound (a number)"))
	}
	if math.IsNaN(ub) || ub <= 0 {
		return fail(s.errorf("upper bound %v: want > 0", ub))
	}
	labels = make([]int, 0, min(n, s.sizeHint/2))
	for v := 0; v < n; v++ {
		k, ok := s.readInt(maxDom)
		if !ok {
			return fail(s.fail(fmt.Sprintf("the domain size of variable %d (1..%d)", v, maxDom)))
		}
		if k < 1 {
			return fail(s.errorf("variable %d has domain size %d, want ≥ 1", v, k))
		}
		labels = append(labels, k)
	}
	return labels, nCons, ub, nil
}
