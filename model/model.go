package model

import (
	"fmt"
	"runtime"
	"sync"
)

// Model is an immutable discrete graphical model; see the package documentation.
type Model struct {
	labels []int32
	funcs  funcList
	offset float64

	// Factor f uses funcs[facFunc[f]] on facVars[facStart[f]:facStart[f+1]].
	facFunc  []int32
	facStart []int
	facVars  []int32

	// Variable v is in factors adjFac[adjStart[v]:adjStart[v+1]] (CSR).
	adjStart []int
	adjFac   []int32
}

// NumVars is the number of variables.
func (m *Model) NumVars() int { return len(m.labels) }

// NumLabels is the label count of variable v.
func (m *Model) NumLabels(v int) int { return int(m.labels[v]) }

// LabelCounts returns the label count of every variable; callers must not modify it.
func (m *Model) LabelCounts() []int32 { return m.labels }

// Offset is the constant energy term (order-0 factors and constants moved out of tables).
func (m *Model) Offset() float64 { return m.offset }

// WithoutOffset is m without its constant term: the sub-model Induced gives of
// every variable in order, which shares m's storage (a model does not change
// once built) instead of copying it factor by factor. It is m where the
// offset is 0.
func (m *Model) WithoutOffset() *Model {
	if m.offset == 0 {
		return m
	}
	c := *m
	c.offset = 0
	return &c
}

// NumFactors is the number of factors of order ≥ 1.
func (m *Model) NumFactors() int { return len(m.facFunc) }

// FactorVars returns the variables of factor f in argument order; do not modify.
func (m *Model) FactorVars(f int) []int32 { return m.facVars[m.facStart[f]:m.facStart[f+1]] }

// FactorFunc is the function index of factor f.
func (m *Model) FactorFunc(f int) int { return int(m.facFunc[f]) }

// NumFunctions is the number of distinct functions.
func (m *Model) NumFunctions() int { return m.funcs.len() }

// Func returns function i; do not modify it.
func (m *Model) Func(i int) *Function { return m.funcs.at(i) }

// FactorFunction returns the function of factor f; do not modify it.
func (m *Model) FactorFunction(f int) *Function { return m.funcs.at(int(m.facFunc[f])) }

// VarFactors returns the factors that contain variable v; do not modify.
func (m *Model) VarFactors(v int) []int32 { return m.adjFac[m.adjStart[v]:m.adjStart[v+1]] }

// CheckLabeling reports whether x is a labeling of m: one label per variable, in range.
func (m *Model) CheckLabeling(x []int) error {
	if len(x) != len(m.labels) {
		return fmt.Errorf("labeling has %d labels, model has %d variables", len(x), len(m.labels))
	}
	for v, l := range x {
		if l < 0 || l >= int(m.labels[v]) {
			return fmt.Errorf("variable %d: label %d out of range [0,%d)", v, l, m.labels[v])
		}
	}
	return nil
}

// FactorValue is θ_f(x_f) for the full labeling x.
func (m *Model) FactorValue(f int, x []int) float64 {
	fn := m.funcs.at(int(m.facFunc[f]))
	vars := m.FactorVars(f)
	if fn.Kind != Explicit {
		return fn.Pairwise(x[vars[0]], x[vars[1]])
	}
	i := 0
	for d, v := range vars {
		i = i*fn.Shape[d] + x[v]
	}
	return fn.Table[i]
}

// Energy is E(x); +Inf when x takes a forbidden state. x must pass CheckLabeling.
// The factors' values are summed in factor order, the same float64 on any
// number of cores; on a large model they are looked up on every core, a block
// at a time, and the block summed (seg2's 3·10⁶ factors: 40 ms on one core).
func (m *Model) Energy(x []int) float64 {
	nf := len(m.facFunc)
	k := min(runtime.GOMAXPROCS(0), nf/energyBlock)
	e := m.offset
	if k < 2 {
		for f := range nf {
			e += m.FactorValue(f, x)
		}
		return e
	}
	vals := make([]float64, energyBlock)
	var wg sync.WaitGroup
	for lo := 0; lo < nf; lo += energyBlock {
		block := vals[:min(energyBlock, nf-lo)]
		values := func(p int) {
			for i := p * len(block) / k; i < (p+1)*len(block)/k; i++ {
				block[i] = m.FactorValue(lo+i, x)
			}
		}
		for p := 1; p < k; p++ {
			wg.Go(func() { values(p) })
		}
		values(0)
		wg.Wait()
		for _, v := range block {
			e += v
		}
	}
	return e
}

// energyBlock is the factors Energy looks up on every core at a time: a
// model of fewer than two blocks stays on one (a second core woken from idle
// costs ~30 µs).
const energyBlock = 1 << 16

// Validate re-checks every invariant of m: label counts, functions, factor scopes
// against label counts, distinct variables per factor, and the adjacency.
func (m *Model) Validate() error {
	for v, k := range m.labels {
		if k < 1 {
			return fmt.Errorf("variable %d has %d labels", v, k)
		}
	}
	if err := CheckValue(m.offset); err != nil {
		return fmt.Errorf("offset: %w", err)
	}
	for i := 0; i < m.funcs.len(); i++ {
		if err := m.funcs.at(i).validate(); err != nil {
			return fmt.Errorf("function %d: %w", i, err)
		}
	}
	for f := range m.facFunc {
		if int(m.facFunc[f]) >= m.funcs.len() || m.facFunc[f] < 0 {
			return fmt.Errorf("factor %d: function %d out of range", f, m.facFunc[f])
		}
		if err := checkScope(m.labels, m.FactorFunction(f), m.FactorVars(f)); err != nil {
			return fmt.Errorf("factor %d: %w", f, err)
		}
	}
	seen := 0
	for v := range m.labels {
		for _, f := range m.VarFactors(v) {
			if !contains(m.FactorVars(int(f)), int32(v)) {
				return fmt.Errorf("adjacency of variable %d lists factor %d, which does not contain it", v, f)
			}
			seen++
		}
	}
	if seen != len(m.facVars) {
		return fmt.Errorf("adjacency has %d entries, factors have %d", seen, len(m.facVars))
	}
	return nil
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkScope checks that vars fit fn: right order, in range, matching label counts, distinct.
func checkScope[T int | int32](labels []int32, fn *Function, vars []T) error {
	if len(vars) != len(fn.Shape) {
		return fmt.Errorf("%d variables for a function of order %d", len(vars), len(fn.Shape))
	}
	for d, v := range vars {
		if v < 0 || int(v) >= len(labels) {
			return fmt.Errorf("variable %d out of range [0,%d)", v, len(labels))
		}
		if int(labels[v]) != fn.Shape[d] {
			return fmt.Errorf("variable %d has %d labels, function argument %d has %d", v, labels[v], d, fn.Shape[d])
		}
		for _, u := range vars[:d] {
			if u == v {
				return fmt.Errorf("variable %d appears twice", v)
			}
		}
	}
	return nil
}

// buildAdjacency fills the variable→factor CSR arrays.
func (m *Model) buildAdjacency() {
	n := len(m.labels)
	m.adjStart = make([]int, n+1)
	for _, v := range m.facVars {
		m.adjStart[v+1]++
	}
	for v := 0; v < n; v++ {
		m.adjStart[v+1] += m.adjStart[v]
	}
	m.adjFac = make([]int32, len(m.facVars))
	next := make([]int, n)
	copy(next, m.adjStart[:n])
	for f := range m.facFunc {
		for _, v := range m.FactorVars(f) {
			m.adjFac[next[v]] = int32(f)
			next[v]++
		}
	}
}

// MemoryBytes estimates the heap bytes held by m.
func (m *Model) MemoryBytes() int64 {
	b := int64(4*len(m.labels) + 4*len(m.facFunc) + 8*len(m.facStart) + 4*len(m.facVars) +
		8*len(m.adjStart) + 4*len(m.adjFac))
	for i := 0; i < m.funcs.len(); i++ {
		f := m.funcs.at(i)
		b += 72 + int64(8*len(f.Table)) // shapes are mostly shared
	}
	return b
}
