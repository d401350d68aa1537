package complete

import (
	"container/heap"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
)

// table is a function of the variables scope (last fastest) by its values.
type table struct {
	scope  []int
	values []float64
}

// order is a greedy elimination order of m's variables whose largest joint
// table (a variable's neighbourhood with itself, in labelings) is at most
// limit, with that table's size; ok false when neither heuristic finds one.
// Two heuristics, the order of fewer table entries in all kept: min-weight
// (the smallest table first; best on trees and chains) and min-fill (the
// fewest new edges first, ties by weight; narrower on grid-shaped
// components: 12 instead of 13 on a 12×9 grid, 58 instead of 62 on 40×40).
func order(m *model.Model, limit float64) (seq []int, largest float64, ok bool) {
	best := math.Inf(1)
	for _, fill := range []bool{false, true} {
		o := greedyOrder(m, limit, fill)
		if o.ok && o.total < best {
			seq, largest, ok, best = o.seq, o.largest, true, o.total
		}
	}
	return seq, largest, ok
}

// Width is the width of m's elimination order by min-fill (the most
// neighbours a variable has when it is eliminated; 1 on a tree, about the
// shorter side on a grid): an upper bound on its treewidth, what an engine's
// tree-decomposition search costs with.
func Width(m *model.Model) int {
	return greedyOrder(m, math.Inf(1), true).width
}

// elimination is a greedy elimination order: seq, its largest table (in
// entries, the variable with its neighbours), the sum of its tables, and its
// width (the most neighbours); ok false when a table passed the limit.
type elimination struct {
	seq            []int
	largest, total float64
	width          int
	ok             bool
}

// greedyOrder is order by one heuristic (minimum fill when fill, else minimum
// weight); it stops, not ok, as soon as a table passes limit.
func greedyOrder(m *model.Model, limit float64, fill bool) (o elimination) {
	n := m.NumVars()
	adj := make([]map[int]struct{}, n)
	for v := range adj {
		adj[v] = map[int]struct{}{}
	}
	for f := range m.NumFactors() {
		scope := m.FactorVars(f)
		for _, u := range scope {
			for _, w := range scope {
				if u != w {
					adj[u][int(w)] = struct{}{}
				}
			}
		}
	}
	weight := func(v int) float64 {
		w := float64(m.NumLabels(v))
		for u := range adj[v] {
			w *= float64(m.NumLabels(u))
		}
		return w
	}
	key := func(v int) weighted {
		k := weighted{w: weight(v), v: v}
		if fill {
			for a := range adj[v] {
				for b := range adj[v] {
					if _, ok := adj[a][b]; a < b && !ok {
						k.fill++
					}
				}
			}
		}
		return k
	}
	// A heap of keys, stale entries skipped: O((n + fill) log n).
	keys := make([]weighted, n)
	q := &byWeight{}
	for v := range keys {
		keys[v] = key(v)
		q.items = append(q.items, keys[v])
	}
	heap.Init(q)
	done := make([]bool, n)
	for len(o.seq) < n {
		it := heap.Pop(q).(weighted)
		best := it.v
		if done[best] || it != keys[best] {
			continue
		}
		if it.w > limit {
			return elimination{largest: it.w}
		}
		o.largest, o.total, o.width = max(o.largest, it.w), o.total+it.w, max(o.width, len(adj[best]))
		o.seq = append(o.seq, best)
		done[best] = true
		for u := range adj[best] { // the neighbours become a clique
			delete(adj[u], best)
			for x := range adj[best] {
				if x != u {
					adj[u][x] = struct{}{}
				}
			}
		}
		// Whose key may change: the neighbours (their neighbourhoods grew),
		// and for min-fill their neighbours too (edges among theirs appeared).
		changed := map[int]struct{}{}
		for u := range adj[best] {
			changed[u] = struct{}{}
			if fill {
				for x := range adj[u] {
					changed[x] = struct{}{}
				}
			}
		}
		adj[best] = nil
		for u := range changed {
			if k := key(u); k != keys[u] {
				keys[u] = k
				heap.Push(q, k)
			}
		}
	}
	o.ok = true
	return o
}

// weighted is a variable's elimination key: its fill (min-fill only) and its
// weight.
type weighted struct {
	fill int
	w    float64
	v    int
}

// byWeight is a min-heap of keys by fill, then weight, ties by variable (a
// deterministic order).
type byWeight struct{ items []weighted }

func (h *byWeight) Len() int { return len(h.items) }
func (h *byWeight) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.fill != b.fill {
		return a.fill < b.fill
	}
	return a.w < b.w || a.w == b.w && a.v < b.v
}
func (h *byWeight) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *byWeight) Push(x any)    { h.items = append(h.items, x.(weighted)) }
func (h *byWeight) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}

// eliminate minimises m exactly by variable elimination (min-sum bucket
// elimination) along order's sequence, when no joint table along it has more
// than limit entries and all of them together no more than total; ok is false
// otherwise. width is the largest table's variable count less one (1 for a
// tree).
func eliminate(m *model.Model, limit, total float64) (x []int, width int, ok bool) {
	n := m.NumVars()
	seq, _, fits := order(m, limit)
	if !fits {
		return nil, 0, false
	}
	pos := make([]int, n)
	for i, v := range seq {
		pos[v] = i
	}
	buckets := make([][]table, n)
	first := func(scope []int) int { // the scope's variable eliminated first
		b := scope[0]
		for _, u := range scope[1:] {
			if pos[u] < pos[b] {
				b = u
			}
		}
		return b
	}
	for f := range m.NumFactors() {
		fn := m.FactorFunction(f)
		scope := intScope(m.FactorVars(f))
		t := table{scope: scope, values: make([]float64, 0, int(tableSize(m, scope)))}
		t.values = explicit(fn, t.values)
		v := first(scope)
		buckets[v] = append(buckets[v], t)
	}
	// Eliminate in order, keeping each variable's argmin over its bucket's
	// other variables (rest) for the way back.
	type step struct {
		rest   []int
		argmin []int32
	}
	steps := make([]step, n)
	used := 0.0
	for _, v := range seq {
		bucket := buckets[v]
		var rest []int
		seen := map[int]bool{v: true}
		for _, t := range bucket {
			for _, u := range t.scope {
				if !seen[u] {
					seen[u] = true
					rest = append(rest, u)
				}
			}
		}
		width = max(width, len(rest))
		size := tableSize(m, rest)
		if used += size; used > total {
			return nil, 0, false
		}
		out := table{scope: rest, values: make([]float64, int(size))}
		argmin := make([]int32, int(size))
		// sv[j], sr[d][j]: the step of table j's index when v's label, rest[d]'s
		// label, grows by one (0 when it is not in the table).
		sv := make([]int, len(bucket))
		sr := make([][]int, len(rest))
		for d := range sr {
			sr[d] = make([]int, len(bucket))
		}
		for j, t := range bucket {
			s := 1
			for d := len(t.scope) - 1; d >= 0; d-- {
				u := t.scope[d]
				if u == v {
					sv[j] = s
				} else {
					sr[slices.Index(rest, u)][j] = s
				}
				s *= m.NumLabels(u)
			}
		}
		kv := m.NumLabels(v)
		labels := make([]int, len(rest))
		base := make([]int, len(bucket))
		for i := range out.values {
			best, arg := math.Inf(1), int32(0)
			for l := range kv {
				s := 0.0
				for j, t := range bucket {
					s += t.values[base[j]+l*sv[j]]
				}
				if s < best {
					best, arg = s, int32(l)
				}
			}
			out.values[i], argmin[i] = best, arg
			for d := len(rest) - 1; d >= 0; d-- { // next labeling of rest, last fastest
				k := m.NumLabels(rest[d])
				if labels[d]++; labels[d] < k {
					for j, s := range sr[d] {
						base[j] += s
					}
					break
				}
				for j, s := range sr[d] {
					base[j] -= (k - 1) * s
				}
				labels[d] = 0
			}
		}
		steps[v] = step{rest, argmin}
		if len(rest) > 0 {
			u := first(rest)
			buckets[u] = append(buckets[u], out)
		}
		buckets[v] = nil
	}
	x = make([]int, n)
	for i := len(seq) - 1; i >= 0; i-- {
		v := seq[i]
		st := steps[v]
		idx := 0
		for _, u := range st.rest {
			idx = idx*m.NumLabels(u) + x[u]
		}
		x[v] = int(st.argmin[idx])
	}
	return x, width, true
}

// explicit appends fn's table (last argument fastest) to dst.
func explicit(fn *model.Function, dst []float64) []float64 {
	if fn.Kind == model.Explicit {
		return append(dst, fn.Table...)
	}
	for a := range fn.Shape[0] {
		for b := range fn.Shape[1] {
			dst = append(dst, fn.Pairwise(a, b))
		}
	}
	return dst
}

// tableSize is the number of joint labelings of scope.
func tableSize(m *model.Model, scope []int) float64 {
	s := 1.0
	for _, u := range scope {
		s *= float64(m.NumLabels(u))
	}
	return s
}

func intScope(vs []int32) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = int(v)
	}
	return out
}
