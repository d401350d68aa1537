package gen

import (
	"math"
	"math/rand/v2"
	"slices"
)

// kmeans clusters the colours c (three per point) into k centres: k-means++ seeding
// and at most iters Lloyd steps on at most sample points drawn by a PCG generator
// seeded with seed. Empty clusters keep their centre. Centres are returned sorted by
// R+G+B (ties by R, then G), so labels mean the same thing from run to run.
func kmeans(c []float32, k, iters, sample int, seed uint64) [][3]float32 {
	n := len(c) / 3
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pts := c
	if n > sample {
		pts = make([]float32, 0, 3*sample)
		for range sample {
			i := rng.IntN(n)
			pts = append(pts, c[3*i:3*i+3]...)
		}
		n = sample
	}
	cent := make([][3]float32, 0, k)
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Inf(1)
	}
	next := rng.IntN(n)
	for len(cent) < k {
		cent = append(cent, [3]float32(pts[3*next:3*next+3]))
		var total float64
		for i := range d {
			d[i] = min(d[i], dist2(pts[3*i:], cent[len(cent)-1][:]))
			total += d[i]
		}
		if total == 0 { // fewer distinct colours than k: any point will do
			next = rng.IntN(n)
			continue
		}
		r := rng.Float64() * total
		next = n - 1
		for i, v := range d {
			if r < v {
				next = i
				break
			}
			r -= v
		}
	}
	assign := make([]int, n)
	sum := make([][3]float64, k)
	cnt := make([]int, k)
	for it := range iters {
		changed := false
		for i := range n {
			l := nearest(pts[3*i:], cent)
			if l != assign[i] {
				changed, assign[i] = true, l
			}
		}
		if it > 0 && !changed {
			break
		}
		clear(sum)
		clear(cnt)
		for i, l := range assign {
			for j := range 3 {
				sum[l][j] += float64(pts[3*i+j])
			}
			cnt[l]++
		}
		for l := range cent {
			if cnt[l] > 0 {
				for j := range 3 {
					cent[l][j] = float32(sum[l][j] / float64(cnt[l]))
				}
			}
		}
	}
	slices.SortStableFunc(cent, func(a, b [3]float32) int {
		sa, sb := a[0]+a[1]+a[2], b[0]+b[1]+b[2]
		switch {
		case sa != sb:
			return cmpF(sa, sb)
		case a[0] != b[0]:
			return cmpF(a[0], b[0])
		default:
			return cmpF(a[1], b[1])
		}
	})
	return cent
}

func cmpF(a, b float32) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// nearest is the index of the centre closest to the colour p (lowest index on ties).
func nearest(p []float32, cent [][3]float32) int {
	best, bd := 0, math.Inf(1)
	for l := range cent {
		if d := dist2(p, cent[l][:]); d < bd {
			best, bd = l, d
		}
	}
	return best
}
