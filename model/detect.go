package model

import "math"

// DetectTolerance is the relative tolerance of structure detection: a table entry may
// differ from the recognised closed form c + f(a,b) by DetectTolerance·max|θ−c| plus
// the rounding floor of the table's magnitude (64 ulps of max|θ|, times the largest
// squared distance, since W is measured on one rounded entry). Decimal files rarely
// hold exactly representable weights (0.1+0.2 ≠ 0.3), so exact equality would miss
// most real Potts and truncated tables; the energy of any labeling moves by at most
// that much per factor.
const DetectTolerance = 1e-9

// DetectPairwise recognises an explicit ka×kb table (last argument fastest) that equals
// c + f(a,b) for a Potts, truncated linear or truncated quadratic f with W > 0. It
// returns the parametric function, the constant c and true, or false when the table
// has no such form (forbidden entries never do: they stay explicit).
func DetectPairwise(ka, kb int, t []float64) (Function, float64, bool) {
	if ka < 2 || kb < 2 || len(t) != ka*kb {
		return Function{}, 0, false
	}
	c := t[0]
	spread, magnitude := 0.0, 0.0
	for _, v := range t {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return Function{}, 0, false
		}
		spread = math.Max(spread, math.Abs(v-c))
		magnitude = math.Max(magnitude, math.Abs(v))
	}
	D := max(ka, kb) - 1
	tol := DetectTolerance*spread + 64*0x1p-52*magnitude*float64(D*D)
	// g(d): the profile along the first row, then the first column.
	g := func(d int) float64 {
		if d < kb {
			return t[d] - c
		}
		return t[d*kb] - c
	}
	w := g(1)
	if w <= tol {
		return Function{}, 0, false
	}
	shape := []int{ka, kb}
	// The first distance at which the profile falls below its untruncated form fixes T.
	truncation := func(sq bool) float64 {
		for d := 1; d <= D; d++ {
			fd := float64(d)
			if sq {
				fd *= fd
			}
			if g(d) < w*fd-tol {
				return g(d) / w
			}
		}
		if sq {
			return float64(D * D)
		}
		return float64(D)
	}
	candidates := []Function{
		{Kind: Potts, Shape: shape, W: w},
		{Kind: TruncatedLinear, Shape: shape, W: w, T: truncation(false)},
		{Kind: TruncatedQuadratic, Shape: shape, W: w, T: truncation(true)},
	}
	for _, f := range candidates {
		if f.Kind != Potts && f.T <= 0 {
			continue
		}
		if matches(&f, ka, kb, t, c, tol) {
			return f, c, true
		}
	}
	return Function{}, 0, false
}

func matches(f *Function, ka, kb int, t []float64, c, tol float64) bool {
	for a := 0; a < ka; a++ {
		row := t[a*kb : (a+1)*kb]
		for b, v := range row {
			if math.Abs(v-c-f.Pairwise(a, b)) > tol {
				return false
			}
		}
	}
	return true
}
