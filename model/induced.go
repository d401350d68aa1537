package model

import (
	"fmt"
	"math"
	"slices"
)

// SubModel is the model induced by a node set A of a parent model: its variables are
// the nodes of A (in the order given), its factors are the parent factors whose
// variables all lie in A, and its offset is zero. Functions are shared with the parent.
type SubModel struct {
	Model *Model
	// Vars[i] is the parent variable of sub-model variable i.
	Vars []int
	// Factors[j] is the parent factor of sub-model factor j (ascending).
	Factors []int
	// Boundary lists, ascending, the parent factors with variables both in A and
	// outside A (∂E_A in the paper).
	Boundary []int
}

// local returns, for every parent variable, its index in a node list, or -1.
func (m *Model) local(nodes []int) ([]int32, error) {
	loc := make([]int32, len(m.labels))
	for i := range loc {
		loc[i] = -1
	}
	for i, v := range nodes {
		if v < 0 || v >= len(m.labels) {
			return nil, fmt.Errorf("model: node %d out of range [0,%d)", v, len(m.labels))
		}
		if loc[v] >= 0 {
			return nil, fmt.Errorf("model: node %d listed twice", v)
		}
		loc[v] = int32(i)
	}
	return loc, nil
}

// Induced returns the sub-model induced by nodes (distinct variables of m). It costs
// O(NumVars) plus the size of the factors touching nodes.
func (m *Model) Induced(nodes []int) (*SubModel, error) {
	s, b, err := m.InducedBuilder(nodes)
	if err != nil {
		return nil, err
	}
	s.Model, err = b.Build()
	return s, err
}

// InducedBuilder is Induced without the build: the SubModel (Model nil) and a
// Builder that holds its factors, sharing m's functions, for a caller that adds
// terms of its own — boundary potentials — before Build, without copying or
// re-hashing a function per factor.
func (m *Model) InducedBuilder(nodes []int) (*SubModel, *Builder, error) {
	loc, err := m.local(nodes)
	if err != nil {
		return nil, nil, err
	}
	s := &SubModel{Vars: slices.Clone(nodes)}
	for _, v := range nodes {
		for _, f := range m.VarFactors(v) {
			vars := m.FactorVars(int(f))
			inside, first := 0, int32(-1)
			for _, u := range vars {
				if loc[u] >= 0 {
					inside++
					if first < 0 {
						first = u
					}
				}
			}
			if first != int32(v) { // visit each factor once, from its first inside node
				continue
			}
			if inside == len(vars) {
				s.Factors = append(s.Factors, int(f))
			} else {
				s.Boundary = append(s.Boundary, int(f))
			}
		}
	}
	slices.Sort(s.Factors)
	slices.Sort(s.Boundary)

	labels := make([]int32, len(nodes))
	for i, v := range nodes {
		labels[i] = m.labels[v]
	}
	b := newChildBuilder(labels, &m.funcs)
	scopes := 0
	for _, f := range s.Factors {
		scopes += len(m.FactorVars(f))
	}
	b.facFunc = slices.Grow(b.facFunc, len(s.Factors))
	b.facStart = slices.Grow(b.facStart, len(s.Factors))
	b.facVars = slices.Grow(b.facVars, scopes)
	vars := make([]int, 0, 8)
	for _, f := range s.Factors {
		vars = vars[:0]
		for _, u := range m.FactorVars(f) {
			vars = append(vars, int(loc[u]))
		}
		b.appendFactor(m.facFunc[f], vars)
	}
	return s, b, nil
}

// Conditioned is a model with some variables of a parent fixed: for every labeling x
// of the parent that agrees with the fixed labels, parent.Energy(x) equals
// Model.Energy of x restricted to Vars.
type Conditioned struct {
	Model *Model
	// Vars[i] is the parent variable of conditioned variable i (the free variables, ascending).
	Vars []int
}

// Condition fixes variable v to label fixed[v] wherever fixed[v] ≥ 0 (len(fixed) ==
// NumVars; −1 means free). Factors over fixed variables only move to the offset;
// factors with some fixed variables become lower-order factors of the free ones, and
// all unary results for one variable are summed into one new unary factor. Factors
// with no fixed variable keep their shared function. With nothing fixed, Model
// is m itself (the same factors, in the same order, as a copy would have).
func (m *Model) Condition(fixed []int) (*Conditioned, error) {
	if len(fixed) != len(m.labels) {
		return nil, fmt.Errorf("model: condition: %d entries for %d variables", len(fixed), len(m.labels))
	}
	c := &Conditioned{Vars: make([]int, 0, len(fixed))}
	for v, l := range fixed {
		if l >= int(m.labels[v]) || l < -1 {
			return nil, fmt.Errorf("model: condition: variable %d: label %d out of range [0,%d)", v, l, m.labels[v])
		}
		if l < 0 {
			c.Vars = append(c.Vars, v)
		}
	}
	if len(c.Vars) == len(fixed) {
		c.Model = m
		return c, nil
	}
	loc, _ := m.local(c.Vars)
	labels := make([]int32, len(c.Vars))
	for i, v := range c.Vars {
		labels[i] = m.labels[v]
	}
	b := newChildBuilder(labels, &m.funcs)
	b.offset = m.offset
	unary := make([][]float64, len(c.Vars))

	var x, free, vars []int
	var table []float64
	for f := range m.facFunc {
		fn := m.funcs.at(int(m.facFunc[f]))
		fv := m.FactorVars(f)
		x, free, vars = x[:0], free[:0], vars[:0]
		for d, u := range fv {
			if fixed[u] >= 0 {
				x = append(x, fixed[u])
			} else {
				x = append(x, 0)
				free = append(free, d)
				vars = append(vars, int(loc[u]))
			}
		}
		switch {
		case len(free) == len(fv):
			b.appendFactor(m.facFunc[f], vars)
		case len(free) == 0:
			b.offset += fn.Value(x)
		default:
			table = reducedTable(fn, x, free, table[:0])
			if len(free) == 1 {
				acc := unary[vars[0]]
				if acc == nil {
					acc = make([]float64, len(table))
					unary[vars[0]] = acc
				}
				for i, t := range table {
					acc[i] += t
				}
				continue
			}
			if err := b.AddTable(vars, table); err != nil {
				return nil, err
			}
		}
	}
	for v, t := range unary {
		if t != nil {
			if err := b.AddTable([]int{v}, t); err != nil {
				return nil, err
			}
		}
	}
	var err error
	c.Model, err = b.Build()
	return c, err
}

// reducedTable enumerates fn over its free argument positions (last fastest), the
// others held at x, appending the values to dst.
func reducedTable(fn *Function, x []int, free []int, dst []float64) []float64 {
	for {
		dst = append(dst, fn.Value(x))
		i := len(free) - 1
		for ; i >= 0; i-- {
			d := free[i]
			x[d]++
			if x[d] < fn.Shape[d] {
				break
			}
			x[d] = 0
		}
		if i < 0 {
			return dst
		}
	}
}

// Restrict returns m with every label outside domains forbidden: one unary factor
// per variable that loses labels, +Inf on them and 0 on the others (domains[v]
// lists v's allowed labels; len(domains) == NumVars). The factors of m keep their
// shared functions, so a labeling within the domains has the same energy in both.
func (m *Model) Restrict(domains [][]int) (*Model, error) {
	if len(domains) != len(m.labels) {
		return nil, fmt.Errorf("model: restrict: %d domains for %d variables", len(domains), len(m.labels))
	}
	b := newChildBuilder(m.labels, &m.funcs)
	b.offset = m.offset
	b.Grow(len(m.facFunc)+len(domains), len(m.facVars)+len(domains))
	for f := range m.facFunc {
		b.appendFactor(m.facFunc[f], intVars(m.FactorVars(f)))
	}
	for v, allowed := range domains {
		k := int(m.labels[v])
		if len(allowed) == k {
			continue
		}
		t := make([]float64, k)
		for l := range t {
			t[l] = math.Inf(1)
		}
		for _, l := range allowed {
			if l < 0 || l >= k {
				return nil, fmt.Errorf("model: restrict: variable %d: label %d out of range [0,%d)", v, l, k)
			}
			t[l] = 0
		}
		if len(allowed) == 0 {
			return nil, fmt.Errorf("model: restrict: variable %d has no allowed label", v)
		}
		if err := b.AddTable([]int{v}, t); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// intVars converts a factor's variables for appendFactor.
func intVars(vs []int32) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = int(v)
	}
	return out
}
