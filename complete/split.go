package complete

import (
	"fmt"
	"slices"

	"github.com/partopt/partopt/model"
)

// Component is one connected part of what persistency left undecided: its
// variables, their alive labels, and its energy over them with every decided
// variable at its label.
type Component struct {
	// Vars are the model's variables of the component, ascending.
	Vars []int
	// Domains[i] are the alive labels of Vars[i], ascending: label j of the
	// component model's variable i is the model's label Domains[i][j].
	Domains [][]int
	// Model is the component's energy: for labelings x of the model that take
	// the decided labels and alive labels elsewhere, E(x) is a constant plus
	// the sum over components of Model.Energy of x's component labels.
	Model *model.Model
}

// States is the number of labelings of c (+Inf past float64).
func (c *Component) States() float64 {
	s := 1.0
	for _, d := range c.Domains {
		s *= float64(len(d))
	}
	return s
}

// Labels maps a labeling of c.Model to the model's labels of c.Vars.
func (c *Component) Labels(local []int) []int {
	out := make([]int, len(local))
	for i, l := range local {
		out[i] = c.Domains[i][l]
	}
	return out
}

// local maps the model's labels of c.Vars (x, indexed by model variable) to a
// labeling of c.Model; ok is false when one is not alive.
func (c *Component) local(x []int) (loc []int, ok bool) {
	loc = make([]int, len(c.Vars))
	for i, v := range c.Vars {
		j, found := slices.BinarySearch(c.Domains[i], x[v])
		if !found {
			return nil, false
		}
		loc[i] = j
	}
	return loc, true
}

// orEvery is alive, or every label of every variable when alive is nil
// (nothing proven: persistency.Result.Domains's nil).
func orEvery(m *model.Model, alive [][]int) [][]int {
	if alive != nil {
		return alive
	}
	alive = make([][]int, m.NumVars())
	for v := range alive {
		alive[v] = make([]int, m.NumLabels(v))
		for l := range alive[v] {
			alive[v][l] = l
		}
	}
	return alive
}

// Decided returns the label of every variable with one alive label, −1 for the
// others, after checking alive against m: one non-empty ascending list of
// labels in range for each variable (nil: every label alive).
func Decided(m *model.Model, alive [][]int) ([]int, error) {
	alive = orEvery(m, alive)
	if len(alive) != m.NumVars() {
		return nil, fmt.Errorf("complete: %d alive label lists for %d variables", len(alive), m.NumVars())
	}
	decided := make([]int, len(alive))
	for v, ls := range alive {
		if len(ls) == 0 {
			return nil, fmt.Errorf("complete: variable %d has no alive label", v)
		}
		for i, l := range ls {
			if l < 0 || l >= m.NumLabels(v) || i > 0 && l <= ls[i-1] {
				return nil, fmt.Errorf("complete: variable %d: alive labels %v are not ascending labels of [0,%d)", v, ls, m.NumLabels(v))
			}
		}
		decided[v] = -1
		if len(ls) == 1 {
			decided[v] = ls[0]
		}
	}
	return decided, nil
}

// Split returns the components of m's undecided variables (those with more
// than one alive label; alive nil: every label): two are in one component
// when a factor holds both. Components come in the order of their smallest
// variable.
func Split(m *model.Model, alive [][]int) ([]Component, error) {
	alive = orEvery(m, alive)
	decided, err := Decided(m, alive)
	if err != nil {
		return nil, err
	}
	n := m.NumVars()
	parent := make([]int32, n)
	for v := range parent {
		parent[v] = int32(v)
	}
	find := func(v int32) int32 {
		for parent[v] != v {
			parent[v] = parent[parent[v]]
			v = parent[v]
		}
		return v
	}
	for f := range m.NumFactors() {
		first := int32(-1)
		for _, u := range m.FactorVars(f) {
			if decided[u] >= 0 {
				continue
			}
			if first < 0 {
				first = find(u)
				continue
			}
			if r := find(u); r != first {
				parent[max(r, first)] = min(r, first)
				first = min(r, first)
			}
		}
	}
	// Component ids in the order of the smallest variable; local indices.
	id := make([]int32, n)
	index := make([]int32, n)
	var comps []Component
	for v := range n {
		if decided[v] >= 0 {
			continue
		}
		r := find(int32(v))
		if int(r) == v {
			id[v] = int32(len(comps))
			comps = append(comps, Component{})
		} else {
			id[v] = id[r]
		}
		c := &comps[id[v]]
		index[v] = int32(len(c.Vars))
		c.Vars = append(c.Vars, v)
		c.Domains = append(c.Domains, alive[v])
	}
	builders := make([]*model.Builder, len(comps))
	for i, c := range comps {
		labels := make([]int, len(c.Vars))
		for j, d := range c.Domains {
			labels[j] = len(d)
		}
		builders[i] = model.NewBuilder(labels)
	}
	var x, vars []int
	var free []int // positions in the scope of the undecided variables
	var table []float64
	for f := range m.NumFactors() {
		scope := m.FactorVars(f)
		x, vars, free = x[:0], vars[:0], free[:0]
		for d, u := range scope {
			x = append(x, max(decided[u], 0))
			if decided[u] < 0 {
				free = append(free, d)
				vars = append(vars, int(index[u]))
			}
		}
		if len(free) == 0 {
			continue // a constant of every completion
		}
		c := id[scope[free[0]]]
		table = restrictedTable(m.FactorFunction(f), x, scope, free, alive, table[:0])
		if err := builders[c].AddTable(vars, table); err != nil {
			return nil, fmt.Errorf("complete: factor %d: %w", f, err)
		}
	}
	for i, b := range builders {
		if comps[i].Model, err = b.Build(); err != nil {
			return nil, fmt.Errorf("complete: component of variable %d: %w", comps[i].Vars[0], err)
		}
	}
	return comps, nil
}

// restrictedTable appends fn's values over the alive labels of the free scope
// positions (last fastest), the others held at x, to dst.
func restrictedTable(fn *model.Function, x []int, scope []int32, free []int, alive [][]int, dst []float64) []float64 {
	pos := make([]int, len(free))
	for _, d := range free {
		x[d] = alive[scope[d]][0]
	}
	for {
		dst = append(dst, fn.Value(x))
		i := len(free) - 1
		for ; i >= 0; i-- {
			d := free[i]
			dom := alive[scope[d]]
			if pos[i]++; pos[i] < len(dom) {
				x[d] = dom[pos[i]]
				break
			}
			pos[i], x[d] = 0, dom[0]
		}
		if i < 0 {
			return dst
		}
	}
}
