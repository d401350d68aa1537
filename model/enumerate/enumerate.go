package enumerate

import (
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
)

// Count returns the number of labelings of m, the product of its label counts,
// or an error when it exceeds limit (checked without overflow).
func Count(m *model.Model, limit int) (int, error) {
	n := 1
	for v := range m.NumVars() {
		k := m.NumLabels(v)
		if n > limit/k {
			return 0, fmt.Errorf("enumerate: model has more than %d labelings (%d variables)", limit, m.NumVars())
		}
		n *= k
	}
	if n > limit {
		return 0, fmt.Errorf("enumerate: model has %d labelings, more than %d", n, limit)
	}
	return n, nil
}

// Minimize returns a labeling of minimum energy and its energy, m.Energy(labeling),
// by enumerating all labelings; it fails when m has more than limit labelings. Among
// equal minima it returns the first in lexicographic order (variable 0 most
// significant). When every labeling has energy +Inf it returns the all-zero labeling
// and +Inf.
//
// The enumeration is depth first over variables 0..n-1 with prefix sums: each factor
// is added when its last variable (in index order) is set, and subtrees with a +Inf
// prefix are skipped. Time is O(L·d) for L labelings and d factors per variable on
// average; memory is O(n + factors).
func Minimize(m *model.Model, limit int) (labeling []int, energy float64, err error) {
	if _, err := Count(m, limit); err != nil {
		return nil, 0, err
	}
	n := m.NumVars()
	// Factors grouped by their largest variable (CSR).
	start := make([]int, n+1)
	last := make([]int, m.NumFactors())
	for f := range last {
		l := 0
		for _, v := range m.FactorVars(f) {
			l = max(l, int(v))
		}
		last[f] = l
		start[l+1]++
	}
	for v := range n {
		start[v+1] += start[v]
	}
	byLast := make([]int, m.NumFactors())
	next := append([]int(nil), start[:n]...)
	for f, l := range last {
		byLast[next[l]] = f
		next[l]++
	}

	x := make([]int, n)
	best := make([]int, n)
	bestE := math.Inf(1)
	found := false
	// prefix[v] is the offset plus every factor whose last variable is < v.
	prefix := make([]float64, n+1)
	prefix[0] = m.Offset()
	if math.IsInf(prefix[0], 1) {
		return best, math.Inf(1), nil
	}
	v := 0 // the variable to set next; x[v] is its next label to try
	for {
		if v == n {
			if e := prefix[n]; e < bestE {
				bestE, found = e, true
				copy(best, x)
			}
			v--
			if v < 0 {
				break
			}
			x[v]++
			continue
		}
		if x[v] == m.NumLabels(v) {
			// Exhausted: reset and go back.
			x[v] = 0
			v--
			if v < 0 {
				break
			}
			x[v]++
			continue
		}
		e := prefix[v]
		for _, f := range byLast[start[v]:start[v+1]] {
			e += m.FactorValue(f, x)
		}
		if math.IsInf(e, 1) {
			x[v]++
			continue
		}
		prefix[v+1] = e
		v++
	}
	if !found {
		return make([]int, n), math.Inf(1), nil
	}
	return best, m.Energy(best), nil
}
