package persistency

import (
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
)

// Variant selects the boundary potential.
type Variant int

const (
	// Invariant is the boundary potential of the optimal reparametrisation (paper §6):
	// θ̂(x_I) = 0 if x_I = y_I, else min_{x_O} [θ(x_I,x_O) − θ(y_I,x_O)]. It is never
	// weaker than Original and, unlike it, does not depend on the reparametrisation.
	Invariant Variant = iota
	// Original is eq. 3.4 and its higher-order form (§8): θ̂(x_I) = max_{x_O} θ(x_I,x_O)
	// if x_I = y_I, else min_{x_O} θ(x_I,x_O).
	Original
)

func (v Variant) String() string {
	if v == Original {
		return "original"
	}
	return "invariant"
}

// ParseVariant reads "invariant" or "original".
func ParseVariant(s string) (Variant, error) {
	switch s {
	case "invariant":
		return Invariant, nil
	case "original":
		return Original, nil
	}
	return 0, fmt.Errorf("persistency: unknown boundary variant %q (want invariant or original)", s)
}

// diff is θ(x_I,x_O) − θ(y_I,x_O) for the invariant potential, with forbidden states:
// a forbidden x costs nothing to bound (+Inf: no constraint on the minimum); a finite x
// against a forbidden y makes y unprovable (−Inf).
func diff(a, b float64) float64 {
	switch {
	case math.IsInf(a, 1):
		return math.Inf(1)
	case math.IsInf(b, 1):
		return math.Inf(-1)
	}
	return a - b
}

// BoundaryPotential returns the boundary potential of a factor with function fn whose
// arguments at the positions in (ascending) lie inside A and take the test labels y
// (one per inside position); the other arguments lie outside. The result is a table
// over the inside arguments (last fastest). An entry −Inf (only with Invariant, when y
// is forbidden together with an outside labeling that x is not) means the test
// labeling can never satisfy the criterion.
func BoundaryPotential(fn *model.Function, in []int, y []int, v Variant) []float64 {
	if fn.Kind == model.Potts && len(in) == 1 {
		return pottsBoundary(fn, in[0], y[0], v)
	}
	order := fn.Order()
	isIn := make([]bool, order)
	for _, p := range in {
		isIn[p] = true
	}
	inSize, outSize := 1, 1
	for p, k := range fn.Shape {
		if isIn[p] {
			inSize *= k
		} else {
			outSize *= k
		}
	}
	// Enumerate every argument assignment once, tracking the inside and outside indices.
	x := make([]int, order)
	inIdx := func() int {
		i := 0
		for p, k := range fn.Shape {
			if isIn[p] {
				i = i*k + x[p]
			}
		}
		return i
	}
	outIdx := func() int {
		i := 0
		for p, k := range fn.Shape {
			if !isIn[p] {
				i = i*k + x[p]
			}
		}
		return i
	}
	yIdx := 0
	for j, p := range in {
		yIdx = yIdx*fn.Shape[p] + y[j]
	}
	tab := make([]float64, inSize)
	var atY []float64
	if v == Invariant {
		atY = make([]float64, outSize) // θ(y_I, x_O)
	}
	for i := range tab {
		tab[i] = math.Inf(1)
		if v == Original && i == yIdx {
			tab[i] = math.Inf(-1)
		}
	}
	visit := func(fnx func(ii, oi int, val float64)) {
		for p := range x {
			x[p] = 0
		}
		for {
			fnx(inIdx(), outIdx(), fn.Value(x))
			p := order - 1
			for ; p >= 0; p-- {
				if x[p]++; x[p] < fn.Shape[p] {
					break
				}
				x[p] = 0
			}
			if p < 0 {
				return
			}
		}
	}
	if v == Original {
		visit(func(ii, _ int, val float64) {
			if ii == yIdx {
				tab[ii] = math.Max(tab[ii], val)
			} else {
				tab[ii] = math.Min(tab[ii], val)
			}
		})
		return tab
	}
	visit(func(ii, oi int, val float64) {
		if ii == yIdx {
			atY[oi] = val
		}
	})
	visit(func(ii, oi int, val float64) {
		if ii != yIdx {
			tab[ii] = math.Min(tab[ii], diff(val, atY[oi]))
		}
	})
	tab[yIdx] = 0
	return tab
}

// pottsBoundary is BoundaryPotential of a Potts term w·[a≠b] with one inside argument
// (at position pos, test label y), in closed form: O(K), no K×K table.
func pottsBoundary(fn *model.Function, pos, y int, v Variant) []float64 {
	ku, kv := fn.Shape[pos], fn.Shape[1-pos]
	w := fn.W
	otherThanY := kv > 1 || y != 0 // some outside label differs from y
	tab := make([]float64, ku)
	for x := range tab {
		switch {
		case x == y && v == Invariant:
			tab[x] = 0
		case x == y: // max_b w·[y≠b]
			if otherThanY {
				tab[x] = w
			}
		case v == Original: // min_b w·[x≠b]
			if x >= kv {
				tab[x] = w
			}
		case x < kv: // min_b w·([x≠b] − [y≠b]), attained at b = x
			tab[x] = -w
		case !otherThanY: // the only outside label is y
			tab[x] = w
		}
	}
	return tab
}
