package model

import "math"

// MinPlus sets out[j] = min_i h[i] + θ(i, j) for an order-2 function: h over
// its first argument and out over its second, or the other way round when
// fromSecond. Potts and truncated-linear functions take O(K) (a distance
// transform), the others O(K²) by rows. Each out[j] is the value h[i] + θ(i, j)
// of one label i, computed as the O(K²) minimisation computes it; the
// transform picks that i by comparisons of rounded sums, so where two labels
// are within a rounding of each other it may keep the larger (an ulp, never
// less than the true minimum). A NaN in h makes out NaN.
func (f *Function) MinPlus(h, out []float64, fromSecond bool, buf *[]float64) {
	for _, v := range h {
		if v != v {
			for j := range out {
				out[j] = math.NaN()
			}
			return
		}
	}
	switch f.Kind {
	case Potts:
		// min_i h(i) + W·[i ≠ j] = min(h(j), min h + W) for W ≥ 0.
		lo := math.Inf(1)
		for _, v := range h {
			lo = min(lo, v)
		}
		for j := range out {
			out[j] = lo + f.W
			if j < len(h) {
				out[j] = min(out[j], h[j]+0)
			}
		}
		return
	case TruncatedLinear:
		f.minPlusLinear(h, out)
		return
	}
	for j := range out {
		out[j] = math.Inf(1)
	}
	if !fromSecond {
		for i, hi := range h {
			for j, t := range f.Row(i, buf) {
				out[j] = min(out[j], hi+t)
			}
		}
		return
	}
	for j := range out {
		best := math.Inf(1)
		for i, t := range f.Row(j, buf) {
			best = min(best, h[i]+t)
		}
		out[j] = best
	}
}

// minPlusLinear is MinPlus of a truncated-linear function (symmetric, so either
// direction): W·min(d, T) = min(W·d, W·T) exactly for W ≥ 0 (rounding is
// monotone), so out[j] is the least of the untruncated transform's value and
// min h + W·T. Along one direction the label that minimises h(i) + W·|i − j|
// stays the best of those seen (their difference does not depend on j), so one
// pass each way keeps one candidate.
func (f *Function) minPlusLinear(h, out []float64) {
	w := f.W
	lo := math.Inf(1)
	for _, v := range h {
		lo = min(lo, v)
	}
	cut := math.Inf(1)
	if !math.IsInf(f.T, 1) {
		cut = lo + w*f.T
	}
	value := func(i, j int) float64 {
		d := i - j
		if d < 0 {
			d = -d
		}
		return h[i] + w*float64(d)
	}
	best := -1 // the best label ≤ j so far
	for j := range out {
		if j < len(h) && (best < 0 || h[j]+0 <= value(best, j)) {
			best = j
		}
		out[j] = cut
		if best >= 0 {
			out[j] = min(out[j], value(best, j))
		}
	}
	best = -1 // the best label ≥ j
	for i := len(h) - 1; i >= len(out); i-- {
		if best < 0 || h[i] < h[best]+w*float64(best-i) {
			best = i
		}
	}
	for j := len(out) - 1; j >= 0; j-- {
		if j < len(h) && (best < 0 || h[j]+0 <= value(best, j)) {
			best = j
		}
		if best >= 0 {
			out[j] = min(out[j], value(best, j))
		}
	}
}

// MinSum returns min over (x, y) of a[x] + θ(x, y) + b[y] for an order-2
// function (a over its first argument, b its second): MinPlus, then one pass
// over b. NaN anywhere gives NaN.
func (f *Function) MinSum(a, b []float64, buf *[]float64) float64 {
	if cap(*buf) < len(b)+f.Shape[1] {
		*buf = make([]float64, len(b)+f.Shape[1])
	}
	out, rows := (*buf)[:len(b)], (*buf)[len(b):len(b)]
	f.MinPlus(a, out, false, &rows)
	best := math.Inf(1)
	for y, v := range out {
		if s := v + b[y]; s < best || s != s {
			best = s
		}
		if best != best {
			return best
		}
	}
	return best
}
