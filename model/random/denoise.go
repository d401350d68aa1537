package random

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/partopt/partopt/model"
)

// Parameters of the ground-truth field of PottsDenoising.
const (
	denoiseWaves = 4 // plane waves summed into the field
	// Wavelengths are uniform in [L/denoiseMinDiv, L/denoiseMaxDiv] pixels, L = max(w, h),
	// and never below denoiseMinWavelength (which only matters for grids under 16 pixels).
	denoiseMinDiv        = 8
	denoiseMaxDiv        = 2
	denoiseMinWavelength = 2
)

// PottsDenoising returns the image-denoising benchmark of the TRW-S issue: a w×h
// 4-connected grid (variable y·w+x) with k labels per variable, whose unaries are
// truncated quadratic data terms of a noisy observation of a smooth piecewise-constant
// label image, and whose edges all share one Potts function of weight lambda. The
// reference instance is PottsDenoising(random.New(seed), 256, 256, 8, 1.2, 4, 2).
//
// The ground truth is the sum of 4 plane waves sin(2π(x·cos α + y·sin α)/λ + φ), each
// with direction α uniform in [0, 2π), wavelength λ uniform in [L/8, L/2] pixels
// (L = max(w, h), at least 2 pixels) and phase φ uniform in [0, 2π). The field is
// normalised to [0, 1] (min to 0, max to 1; a constant field is 0) and cut into k equal
// bins, giving the true label t_v = min(⌊k·field⌋, k−1) ∈ 0..k−1. The observation is
// y_v = t_v + sigma·N(0,1), and variable v gets its own explicit unary table
// θ_v(l) = min((y_v − l)², trunc) (tables that are identical, such as the all-trunc
// table of a far outlier, share one function). Each pixel in raster order adds the edge
// to its right neighbour, then to its lower one: factors (v, v+1) and (v, v+w). All
// unary factors come first, in variable order, then the edges, so the model has
// w·h + (w−1)·h + w·(h−1) factors, and function 0 is the Potts function.
//
// The random draws are, in order: α, λ, φ of each wave, then one NormFloat64 per pixel
// in raster order; the model is a pure function of the generator's state.
// PottsDenoising panics unless w, h ≥ 0, k ≥ 1, sigma ≥ 0 and finite, trunc > 0
// (+Inf allowed: no truncation) and lambda ≥ 0 and finite.
func PottsDenoising(rng *rand.Rand, w, h, k int, sigma, trunc, lambda float64) *model.Model {
	m, _ := pottsDenoising(rng, w, h, k, sigma, trunc, lambda)
	return m
}

// pottsDenoising is PottsDenoising that also returns the ground-truth labeling.
func pottsDenoising(rng *rand.Rand, w, h, k int, sigma, trunc, lambda float64) (*model.Model, []int) {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if w < 0 || h < 0 || k < 1 || !(finite(sigma) && sigma >= 0) || !(trunc > 0) || !(finite(lambda) && lambda >= 0) {
		panic(fmt.Sprintf("random: PottsDenoising(%d, %d, %d, %v, %v, %v): want w, h ≥ 0, k ≥ 1, sigma ≥ 0, trunc > 0, lambda ≥ 0",
			w, h, k, sigma, trunc, lambda))
	}
	truth := denoiseTruth(rng, w, h, k)
	n := w * h
	labels := make([]int, n)
	for v := range labels {
		labels[v] = k
	}
	edges := max(w-1, 0)*h + w*max(h-1, 0)
	b := model.NewBuilder(labels)
	b.Grow(n+edges, n+2*edges)
	potts, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{k, k}, W: lambda})
	must(err)

	shape := []int{k}
	t := make([]float64, k)
	flat := -1 // the all-trunc table, shared whatever the Builder's cache keeps
	for v := range n {
		y := float64(truth[v]) + sigma*rng.NormFloat64()
		all := true
		for l := range t {
			d := y - float64(l)
			t[l] = math.Min(d*d, trunc)
			all = all && t[l] == trunc
		}
		fn := flat
		if !all || flat < 0 {
			fn, err = b.AddFunction(model.Function{Kind: model.Explicit, Shape: shape, Table: t})
			must(err)
			if all {
				flat = fn
			}
		}
		must(b.AddFactor(fn, v))
	}
	for y := range h {
		for x := range w {
			v := y*w + x
			if x+1 < w {
				must(b.AddFactor(potts, v, v+1))
			}
			if y+1 < h {
				must(b.AddFactor(potts, v, v+w))
			}
		}
	}
	return build(b), truth
}

// denoiseTruth draws the plane waves and returns the binned ground-truth labels.
func denoiseTruth(rng *rand.Rand, w, h, k int) []int {
	type wave struct{ cx, cy, phase float64 }
	size := float64(max(w, h))
	lo := math.Max(size/denoiseMinDiv, denoiseMinWavelength)
	hi := math.Max(size/denoiseMaxDiv, lo)
	var waves [denoiseWaves]wave
	for i := range waves {
		alpha := 2 * math.Pi * rng.Float64()
		lambda := lo + (hi-lo)*rng.Float64()
		phase := 2 * math.Pi * rng.Float64()
		waves[i] = wave{2 * math.Pi * math.Cos(alpha) / lambda, 2 * math.Pi * math.Sin(alpha) / lambda, phase}
	}
	field := make([]float64, w*h)
	fmin, fmax := math.Inf(1), math.Inf(-1)
	for y := range h {
		for x := range w {
			f := 0.0
			for _, wv := range waves {
				f += math.Sin(wv.cx*float64(x) + wv.cy*float64(y) + wv.phase)
			}
			field[y*w+x] = f
			fmin, fmax = math.Min(fmin, f), math.Max(fmax, f)
		}
	}
	truth := make([]int, w*h)
	if !(fmax > fmin) {
		return truth
	}
	for v, f := range field {
		truth[v] = min(int(float64(k)*(f-fmin)/(fmax-fmin)), k-1)
	}
	return truth
}
