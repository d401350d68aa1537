package persistency

import (
	"cmp"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
)

// Improving the test labeling between stages of Eliminate. What a stage leaves
// undecided splits into connected components once the persistent variables are
// fixed (a factor touches one component at most), and the energy is a constant
// plus one term per component. Each component is minimised over its alive labels:
// min-sum variable elimination removes the variables whose tables stay small,
// and a depth-first branch and bound, bounded by every table's minimum over the
// labelings consistent with the search's partial assignment, searches the core
// left. The result is never worse than y; when every search finished it is
// optimal over the alive labels — hence globally, since they contain an optimum.

const (
	// refineEntries bounds each table variable elimination builds, refineTotal
	// all of them in one component (8 bytes an entry).
	refineEntries = 1 << 20
	refineTotal   = 1 << 23
	// refineVars bounds the variables of a component searched.
	refineVars = 512
	// refineWork bounds the work of one refine call's searches over all
	// components, in table lookups; a search that runs out keeps the best
	// labeling found.
	refineWork = 1 << 24
)

// refine returns y improved on the components of the undecided variables (more
// than one alive label; among candidates when they are given), or nil when no
// component was improved.
func refine(m *model.Model, alive [][]int, y []int, candidates []bool) []int {
	return refineWith(m, alive, y, candidates, refineEntries)
}

// refineWith is refine with variable elimination's tables bounded by entries.
func refineWith(m *model.Model, alive [][]int, y []int, candidates []bool, entries int) []int {
	n := m.NumVars()
	open := make([]bool, n)
	for v, ls := range alive {
		open[v] = len(ls) > 1 && (candidates == nil || candidates[v])
	}
	x := slices.Clone(y)
	budget, improved := refineWork, false
	seen := make([]bool, n)
	for v0 := range n {
		if !open[v0] || seen[v0] || budget <= 0 {
			continue
		}
		comp := component(m, open, seen, v0)
		if len(comp) > refineVars {
			continue
		}
		factors := touching(m, comp)
		before := sumFactors(m, factors, x)
		best, work := minimize(m, alive, comp, x, factors, entries, budget)
		budget -= work
		saved := make([]int, len(comp))
		for i, v := range comp {
			saved[i], x[v] = x[v], best[i]
		}
		if improves(sumFactors(m, factors, x), before) {
			improved = true
			continue
		}
		for i, v := range comp {
			x[v] = saved[i]
		}
	}
	if !improved {
		return nil
	}
	return x
}

// guess improves the labeling y of the relaxed solve out: the labels nearest
// each variable's minimum of out's reparametrised unary — where the optimum most
// likely lies, unproven — are searched by refine, with n/4, then n/2, then n such
// labels beyond y's, as long as the guess keeps improving; nil when it does not
// improve. Only y's quality is at stake: the search proves whatever y it is
// given.
func guess(m *model.Model, d *domains, out *Outcome, y []int, candidates []bool) []int {
	mg, ok := out.state.(marginals)
	if !ok {
		return nil
	}
	type near struct {
		gap  float64
		v, c int
	}
	var all []near
	var buf []float64
	for v, ls := range d.labels {
		if candidates != nil && !candidates[v] {
			continue
		}
		buf = mg.Marginal(v, slices.Grow(buf[:0], len(ls)))
		lo := slices.Min(buf)
		for c, x := range buf {
			if ls[c] != y[v] {
				all = append(all, near{x - lo, v, c})
			}
		}
	}
	slices.SortFunc(all, func(a, b near) int { return cmp.Compare(a.gap, b.gap) })
	n := m.NumVars()
	best, improved := m.Energy(y), false
	for _, extra := range []int{n / 4, n / 2, n} {
		alive := make([][]int, n)
		for v := range alive {
			alive[v] = []int{y[v]}
		}
		for _, c := range all[:min(extra, len(all))] {
			alive[c.v] = append(alive[c.v], d.labels[c.v][c.c])
		}
		for v, ls := range alive {
			slices.Sort(ls)
			alive[v] = slices.Compact(ls) // y may have moved onto a near label
		}
		x := refine(m, alive, y, candidates)
		if x == nil {
			break
		}
		if e := m.Energy(x); improves(e, best) {
			y, best, improved = x, e, true
		}
	}
	if !improved {
		return nil
	}
	return y
}

// improves says whether energy a is lower than b by more than the tolerance
// (any finite energy improves on +Inf).
func improves(a, b float64) bool {
	if math.IsInf(b, 1) {
		return a < b
	}
	return a < b-tolerance(b)
}

// touching lists the factors touching the variables comp, ascending.
func touching(m *model.Model, comp []int) []int {
	var fs []int
	for _, v := range comp {
		for _, f := range m.VarFactors(v) {
			fs = append(fs, int(f))
		}
	}
	slices.Sort(fs)
	return slices.Compact(fs)
}

// sumFactors is the sum of factors at x.
func sumFactors(m *model.Model, factors []int, x []int) float64 {
	e := 0.0
	for _, f := range factors {
		e += m.FactorValue(f, x)
	}
	return e
}

// component lists the open variables connected to v0 through factors, in
// breadth-first order (so that factors complete early in the search), marking
// them seen.
func component(m *model.Model, open, seen []bool, v0 int) []int {
	comp := []int{v0}
	seen[v0] = true
	for i := 0; i < len(comp); i++ {
		for _, f := range m.VarFactors(comp[i]) {
			for _, u := range m.FactorVars(int(f)) {
				if open[u] && !seen[u] {
					seen[u] = true
					comp = append(comp, int(u))
				}
			}
		}
	}
	return comp
}

// scopeSize is the entries of a table over the positions scope with the
// labels dom (by position), or limit+1 once past limit.
func scopeSize(dom [][]int, scope []int, limit int) int {
	s := 1
	for _, p := range scope {
		if s *= len(dom[p]); s > limit {
			return limit + 1
		}
	}
	return s
}

// nextEliminated is the variable elimination removes next: the first of the
// smallest scope among those not gone (−1: none left).
func nextEliminated(gone []bool, sizes []int) int {
	best := -1
	for p, g := range gone {
		if !g && (best < 0 || sizes[p] < sizes[best]) {
			best = p
		}
	}
	return best
}

// vtable is a table over component positions vars (ascending), row-major over
// their alive labels (last fastest).
type vtable struct {
	vars, dims []int
	t          []float64
	gone       bool // eliminated into a bucket
}

func newTable(alive [][]int, vars []int) *vtable {
	t := &vtable{vars: vars, dims: make([]int, len(vars))}
	size := 1
	for k, p := range vars {
		t.dims[k] = len(alive[p])
		size *= t.dims[k]
	}
	t.t = make([]float64, 0, size)
	return t
}

// minimize minimises the factors touching a component (the variables comp, with
// the alive labels alive[v]; every other variable at x), eliminating variables
// while their tables stay within entries, then searching, with at most budget
// table lookups in all. It returns the best labeling found by position (at least
// as good as x's) and the lookups used.
func minimize(m *model.Model, alive [][]int, comp []int, x []int, factors []int, entries, budget int) ([]int, int) {
	dom := make([][]int, len(comp)) // by position
	pos := make(map[int]int, len(comp))
	for p, v := range comp {
		pos[v], dom[p] = p, alive[v]
	}
	size := func(vars []int) int { return scopeSize(dom, vars, entries) }
	// The factors as tables over their component variables, the others at x.
	var tabs []*vtable
	saved := slices.Clone(x)
	for _, f := range factors {
		var vars []int
		for _, u := range m.FactorVars(f) {
			if p, ok := pos[int(u)]; ok {
				vars = append(vars, p)
			}
		}
		slices.Sort(vars)
		t := newTable(dom, vars)
		forEachAssignment(dom, vars, func(a []int) {
			for i, p := range vars {
				x[comp[p]] = dom[p][a[i]]
			}
			t.t = append(t.t, m.FactorValue(f, x))
		})
		tabs = append(tabs, t)
	}
	copy(x, saved)

	// Variable elimination, smallest new table first, while tables stay small.
	type bucket struct {
		v    int
		tabs []*vtable
	}
	var buckets []bucket
	gone := make([]bool, len(comp))
	total, work := 0, 0
	// The tables of each variable, in the order of tabs (kept as tables are
	// eliminated and made): choosing the next variable reads its own tables,
	// not every table (a 400-variable spin glass spent 0.3 s on that).
	byVar := make([][]*vtable, len(comp))
	for _, t := range tabs {
		total += len(t.t)
		for _, p := range t.vars {
			byVar[p] = append(byVar[p], t)
		}
	}
	// Each variable's scope (itself and every variable sharing a table) and its
	// size, recomputed only for the variables whose tables an elimination changed.
	scopes, sizes := make([][]int, len(comp)), make([]int, len(comp))
	rescope := func(p int) {
		scope := []int{p}
		for _, t := range byVar[p] {
			scope = union(scope, t.vars)
		}
		scopes[p], sizes[p] = scope, size(scope)
	}
	for p := range comp {
		rescope(p)
	}
	for {
		best := nextEliminated(gone, sizes)
		if best < 0 {
			break
		}
		bestSize, bestScope := sizes[best], scopes[best]
		in := slices.Clone(byVar[best])
		if bestSize > entries || total+bestSize > refineTotal || work+bestSize*len(in) > budget {
			break
		}
		total, work = total+bestSize, work+bestSize*len(in)
		gone[best] = true
		at := make([][]int, len(in)) // each table's variables as indices into bestScope
		for k, t := range in {
			at[k] = make([]int, len(t.vars))
			for j, p := range t.vars {
				at[k][j], _ = slices.BinarySearch(bestScope, p)
			}
		}
		i := slices.Index(bestScope, best)
		scope := slices.Delete(slices.Clone(bestScope), i, i+1)
		nt := newTable(dom, scope)
		// Each table's entry for best's label l is its entry for label 0 plus l
		// times best's stride in it; that entry (base) moves by a fixed amount
		// when the assignment of scope rises at a position (advance): up by the
		// table's stride of that variable, down by what the later positions,
		// back at 0, had added.
		stride, base := make([]int, len(in)), make([]int, len(in))
		move := make([][]int, len(in)) // move[k][q]: table k's, at position q of scope
		for k, t := range in {
			step := make([]int, len(scope)) // the table's stride of scope[q] (0: not its variable)
			st := 1
			for j := len(at[k]) - 1; j >= 0; j-- {
				switch q := at[k][j]; {
				case q == i:
					stride[k] = st
				case q < i:
					step[q] = st
				default:
					step[q-1] = st
				}
				st *= t.dims[j]
			}
			move[k] = make([]int, len(scope))
			back := 0
			for q := len(scope) - 1; q >= 0; q-- {
				move[k][q] = step[q] - back
				back += (len(dom[scope[q]]) - 1) * step[q]
			}
		}
		a := make([]int, len(scope))
		sums := make([]float64, len(dom[best])) // by best's label, the tables added in order
		for {
			clear(sums)
			for k, t := range in {
				tt, b, st := t.t, base[k], stride[k]
				for l := range sums {
					sums[l] += tt[b+l*st]
				}
			}
			nt.t = append(nt.t, slices.Min(sums))
			q := advance(dom, scope, a)
			if q < 0 {
				break
			}
			for k := range in {
				base[k] += move[k][q]
			}
		}
		buckets = append(buckets, bucket{best, in})
		tabs = append(tabs, nt)
		for _, t := range in {
			t.gone = true
			for _, p := range t.vars {
				byVar[p] = slices.DeleteFunc(byVar[p], func(u *vtable) bool { return u == t })
			}
		}
		for _, p := range nt.vars { // rescope reads p's own tables only
			byVar[p] = append(byVar[p], nt)
			rescope(p)
		}
	}

	// Branch and bound over the core left, starting from x's labels.
	label := make([]int, len(comp)) // indices into dom
	for p, v := range comp {
		label[p], _ = slices.BinarySearch(dom[p], x[v])
	}
	var core []int
	for p := range comp {
		if !gone[p] {
			core = append(core, p)
		}
	}
	if len(core) > 0 {
		// the tables left, in the order they were made
		bb := newBnb(slices.DeleteFunc(tabs, func(t *vtable) bool { return t.gone }), dom, core, label)
		work += bb.run(budget - work)
		for _, p := range core {
			label[p] = bb.bestA[p]
		}
	}
	// Back-substitution, last eliminated first: each bucket's other variables
	// are set by then.
	for i := len(buckets) - 1; i >= 0; i-- {
		b := buckets[i]
		at := make([][]int, len(b.tabs)) // positions index label directly
		for k, t := range b.tabs {
			at[k] = t.vars
		}
		bestL, lo := 0, math.Inf(1)
		for l := range dom[b.v] {
			label[b.v] = l
			if s := sumAt(b.tabs, at, label); s < lo {
				bestL, lo = l, s
			}
		}
		label[b.v] = bestL
	}
	out := make([]int, len(comp))
	for p, c := range label {
		out[p] = dom[p][c]
	}
	return out, work
}

// bnb is a depth-first branch and bound over the core variables (ascending
// positions) of tables over them. A table's variables are ascending too, so the
// assigned ones are a prefix of them and its labelings consistent with the
// partial assignment are one block of its entries: mins[k][i] is the minimum of
// the block of prefix i of length k, the bound the search adds up.
type bnb struct {
	tabs  []*vtable
	mins  [][][]float64 // per table, per prefix length
	dom   [][]int
	core  []int
	a     []int // indices into dom, by position
	best  float64
	bestA []int
	work  int // table lookups so far
	limit int
}

func newBnb(tabs []*vtable, dom [][]int, core []int, start []int) *bnb {
	s := &bnb{tabs: tabs, dom: dom, core: core, a: slices.Clone(start)}
	for _, t := range tabs {
		levels := make([][]float64, len(t.vars)+1)
		levels[len(t.vars)] = t.t
		for k := len(t.vars) - 1; k >= 0; k-- {
			next, d := levels[k+1], t.dims[k]
			cur := make([]float64, len(next)/d)
			for i := range cur {
				cur[i] = slices.Min(next[i*d : (i+1)*d])
			}
			levels[k] = cur
		}
		s.mins = append(s.mins, levels)
	}
	s.best, s.bestA = s.bound(len(core)), slices.Clone(start)
	return s
}

// bound is the sum over the tables of their minimum consistent with the first
// depth core variables' labels in s.a.
func (s *bnb) bound(depth int) float64 {
	sum := 0.0
	for ti, t := range s.tabs {
		i, k := 0, 0
		for ; k < len(t.vars) && (depth == len(s.core) || t.vars[k] < s.core[depth]); k++ {
			i = i*t.dims[k] + s.a[t.vars[k]]
		}
		sum += s.mins[ti][k][i]
	}
	return sum
}

// run searches with at most limit table lookups and returns the lookups used.
func (s *bnb) run(limit int) int {
	s.limit = limit
	s.dfs(0)
	return s.work
}

func (s *bnb) dfs(depth int) {
	if depth == len(s.core) {
		if e := s.bound(depth); improves(e, s.best) {
			s.best = e
			copy(s.bestA, s.a)
		}
		return
	}
	p := s.core[depth]
	type child struct {
		l     int
		bound float64
	}
	s.work += len(s.dom[p]) * len(s.tabs)
	children := make([]child, 0, len(s.dom[p]))
	for l := range s.dom[p] {
		s.a[p] = l
		children = append(children, child{l, s.bound(depth + 1)})
	}
	slices.SortStableFunc(children, func(a, b child) int { return cmp.Compare(a.bound, b.bound) })
	for _, c := range children {
		if !improves(c.bound, s.best) || s.work >= s.limit {
			return
		}
		s.a[p] = c.l
		s.dfs(depth + 1)
	}
}

// sumAt is the sum of tabs at the assignment a (indices into alive labels), where
// at[k][j] is the index in a of table k's variable j.
func sumAt(tabs []*vtable, at [][]int, a []int) float64 {
	s := 0.0
	for k, t := range tabs {
		s += t.t[t.index(at[k], a)]
	}
	return s
}

// index is the position in t of the assignment a, read at positions at.
func (t *vtable) index(at, a []int) int {
	i := 0
	for j, q := range at {
		i = i*t.dims[j] + a[q]
	}
	return i
}

// forEachAssignment calls visit with every assignment of vars (indices into
// their alive labels), the last variable fastest; a is reused.
func forEachAssignment(alive [][]int, vars []int, visit func(a []int)) {
	a := make([]int, len(vars))
	for q := 0; q >= 0; q = advance(alive, vars, a) {
		visit(a)
	}
}

// advance steps a, an assignment of vars, to the next one, the last variable
// fastest, and returns the position that rose (every later one went back to
// 0), or −1 after the last assignment (a back to all 0).
func advance(alive [][]int, vars []int, a []int) int {
	for q := len(vars) - 1; q >= 0; q-- {
		if a[q]++; a[q] < len(alive[vars[q]]) {
			return q
		}
		a[q] = 0
	}
	return -1
}

// union is the ascending union of the ascending lists a and b.
func union(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}
