package trws

import "math"

// The kernels compute a message out(y) = min_x h(x) + θ(x, y) for one pairwise kind,
// normalise it to minimum 0 and return the constant subtracted. h has the sender's
// label count, out the receiver's; they may differ (rectangular terms). No kernel
// branches on the kind inside its label loops.

const inf32 = math.MaxFloat32

// fmin is the smaller of a and b, for values that are not NaN: math.Min without
// its NaN and signed-zero cases, which cost a call in the inner loops.
func fmin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

// minPlus64FromTail sets out(y) = min_x h(x) + fmin(tab[x·len(out) + y], big) in
// float64, every minimum as fmin takes it: the exact passes' and the certificate
// check's explicit tables (big +Inf: no clamp). Where the CPU has AVX2, the
// labels y in fours run in exact_amd64.s, the same floats.
func minPlus64FromTail(h, out, tab []float64, big float64) {
	n := len(out)
	_ = tab[len(h)*n-1]
	y0 := 0
	if vector {
		y0 = n &^ 3
		minPlus64FromTailAVX2(h, out, tab, big)
	}
	for y := y0; y < n; y++ {
		best := math.Inf(1)
		for x, hx := range h {
			best = fmin(best, hx+fmin(tab[x*n+y], big))
		}
		out[y] = best
	}
}

// minPlus64FromHead sets out(y) = min_x h(x) + fmin(tab[y·len(h) + x], big), as
// minPlus64FromTail (the labels x in fours in exact_amd64.s).
func minPlus64FromHead(h, out, tab []float64, big float64) {
	m := len(h)
	_ = tab[len(out)*m-1]
	x0 := 0
	if vector {
		x0 = m &^ 3
		minPlus64FromHeadAVX2(h, out, tab, big)
	} else {
		for y := range out {
			out[y] = math.Inf(1)
		}
	}
	for y := range out {
		best, row := out[y], tab[y*m:y*m+m]
		for x := x0; x < m; x++ {
			best = fmin(best, h[x]+fmin(row[x], big))
		}
		out[y] = best
	}
}

// normalize subtracts the minimum of out and returns it.
func normalize(out []float32) float32 {
	if vector && len(out) >= 8 {
		return normalizeAVX2(out)
	}
	return normalizeScalar(out)
}

// normalizeScalar is normalize in Go, for every CPU.
func normalizeScalar(out []float32) float32 {
	m := out[0]
	for _, v := range out[1:] {
		if v < m {
			m = v
		}
	}
	for i := range out {
		out[i] -= m
	}
	return m
}

func minOf(h []float32) float32 {
	m := h[0]
	for _, v := range h[1:] {
		if v < m {
			m = v
		}
	}
	return m
}

// pottsSquare: θ = w·[x≠y] with as many labels on both sides; hmin = min h.
// out = min(h − hmin, w), as Kolmogorov's typePotts.
func pottsSquare(h, out []float32, hmin, w float32) float32 {
	out = out[:len(h)]
	y := 0
	for ; y+4 <= len(h); y += 4 {
		hh, oo := h[y:y+4:y+4], out[y:y+4:y+4]
		oo[0], oo[1], oo[2], oo[3] = min(hh[0]-hmin, w), min(hh[1]-hmin, w), min(hh[2]-hmin, w), min(hh[3]-hmin, w)
	}
	for ; y < len(h); y++ {
		out[y] = min(h[y]-hmin, w)
	}
	return hmin
}

// pottsMessage: θ = w·[x≠y] on any shape. out = min(h − min h, w).
func pottsMessage(h, out []float32, w float32) float32 {
	hmin := minOf(h)
	n := min(len(h), len(out))
	for y, v := range h[:n] {
		v -= hmin
		if v > w {
			v = w
		}
		out[y] = v
	}
	for y := n; y < len(out); y++ {
		out[y] = w
	}
	if len(h) != len(out) { // the minimum of h may lie outside the receiver's labels
		return hmin + normalize(out)
	}
	return hmin
}

// truncLinearMessage: θ = w·min(|x−y|, T), by the two-pass L1 distance transform over
// max(len(h), len(out)) positions, then truncation; hmin = min h. buf needs that many
// entries. Square terms with T ≤ 3 (stereo's usual truncation) take truncLinearNear.
func truncLinearMessage(h, out []float32, hmin, w, T float32, buf []float32) float32 {
	if len(h) == len(out) && T <= 3 {
		return truncLinearNear(h, out, hmin, w, T)
	}
	r := max(len(h), len(out))
	f := buf[:r]
	copy(f, h)
	for y := len(h); y < r; y++ {
		f[y] = inf32
	}
	for y := 1; y < r; y++ {
		if v := f[y-1] + w; v < f[y] {
			f[y] = v
		}
	}
	for y := r - 2; y >= 0; y-- {
		if v := f[y+1] + w; v < f[y] {
			f[y] = v
		}
	}
	top := hmin + w*T
	for y := range out {
		v := f[y]
		if v > top {
			v = top
		}
		out[y] = v
	}
	return normalize(out)
}

// truncLinearNear is truncLinearMessage on a square term with T ≤ 3: only labels
// less than T apart cost less than the truncation, so out(y) = min(h(x) + w·|x−y|
// over |x−y| < T, hmin + w·T) — at most two neighbours on each side, and no chain
// of dependent minima as in the distance transform.
func truncLinearNear(h, out []float32, hmin, w, T float32) float32 {
	k := len(h)
	out = out[:k]
	top := hmin + w*T
	lo := float32(inf32)
	switch {
	case T <= 1:
		for y, v := range h {
			v = min(v, top)
			out[y] = v
			lo = min(lo, v)
		}
	case T <= 2 && k >= 10 && vector:
		return truncLinear2(h, out, w, top)
	case T <= 2 && k >= 2:
		lo = min(h[0], top, h[1]+w)
		out[0] = lo
		for y := 1; y < k-1; y++ {
			v := min(h[y], top, min(h[y-1], h[y+1])+w)
			out[y] = v
			lo = min(lo, v)
		}
		v := min(h[k-1], top, h[k-2]+w)
		out[k-1] = v
		lo = min(lo, v)
	case T <= 2:
		lo = min(h[0], top)
		out[0] = lo
	default:
		w2 := 2 * w
		for y := range k {
			v := min(h[y], top)
			if y > 0 {
				v = min(v, h[y-1]+w)
			}
			if y > 1 {
				v = min(v, h[y-2]+w2)
			}
			if y+1 < k {
				v = min(v, h[y+1]+w)
			}
			if y+2 < k {
				v = min(v, h[y+2]+w2)
			}
			out[y] = v
			lo = min(lo, v)
		}
	}
	for y := range out {
		out[y] -= lo
	}
	return lo
}

// truncQuadMessage: θ = w·min((x−y)², T), by the lower envelope of parabolas
// (Felzenszwalb & Huttenlocher) in float64, then truncation. v and z need len(h)+1
// entries.
func truncQuadMessage(h, out []float32, w, T float32, v []int32, z []float64) float32 {
	hmin := minOf(h)
	if w <= 0 {
		for y := range out {
			out[y] = 0
		}
		return hmin
	}
	wf := float64(w)
	// z[0] = −Inf stops the pops at k = 0: the first parabola is never removed by
	// the intersection test alone, only overtaken.
	k := 0
	v[0], z[0], z[1] = 0, math.Inf(-1), math.Inf(1)
	for q := 1; q < len(h); q++ {
		fq := float64(h[q]) + wf*float64(q*q)
		var s float64
		for {
			p := int(v[k])
			s = (fq - (float64(h[p]) + wf*float64(p*p))) / (2 * wf * float64(q-p))
			if s > z[k] {
				break
			}
			k--
		}
		k++
		v[k], z[k], z[k+1] = int32(q), s, math.Inf(1)
	}
	top := hmin + w*T
	k = 0
	for y := range out {
		for z[k+1] < float64(y) {
			k++
		}
		d := float64(y) - float64(v[k])
		out[y] = min(float32(wf*d*d+float64(h[v[k]])), top)
	}
	return normalize(out)
}

// tableMessageFromTail: out(y) = min_x h(x) + tab[x·len(out) + y] (rows = sender labels).
func tableMessageFromTail(h, out, tab []float32) float32 {
	if vector {
		minPlusFromTail(h, out, tab)
		return normalize(out)
	}
	return tableFromTailScalar(h, out, tab)
}

// tableFromTailScalar is tableMessageFromTail in Go, for every CPU. Four rows are
// folded per pass over out, so each out(y) is loaded and stored a quarter as often
// (dense protein tables: ~1.4× the row-at-a-time loop).
func tableFromTailScalar(h, out, tab []float32) float32 {
	kb := len(out)
	h0 := h[0]
	for y, t := range tab[:kb] {
		out[y] = h0 + t
	}
	x := 1
	for ; x+4 <= len(h); x += 4 {
		ha, hb, hc, hd := h[x], h[x+1], h[x+2], h[x+3]
		ra := tab[x*kb : x*kb+kb]
		rb, rc, rd := tab[(x+1)*kb:(x+2)*kb], tab[(x+2)*kb:(x+3)*kb], tab[(x+3)*kb:(x+4)*kb]
		rb, rc, rd, o := rb[:len(ra)], rc[:len(ra)], rd[:len(ra)], out[:len(ra)]
		for y, t := range ra {
			o[y] = min(o[y], ha+t, hb+rb[y], hc+rc[y], hd+rd[y])
		}
	}
	for ; x < len(h); x++ {
		hx := h[x]
		row := tab[x*kb : x*kb+kb]
		for y, t := range row {
			out[y] = min(out[y], hx+t)
		}
	}
	return normalize(out)
}

// tableMessageFromHead: out(x) = min_y h(y) + tab[x·len(h) + y] (rows = receiver labels).
func tableMessageFromHead(h, out, tab []float32) float32 {
	if vector {
		minPlusFromHead(h, out, tab)
		return normalize(out)
	}
	return tableFromHeadScalar(h, out, tab)
}

// tableFromHeadScalar is tableMessageFromHead in Go, for every CPU. Each row's
// minimum runs in four independent accumulators: one running minimum is a chain of
// dependent MINSS (2× slower on 81 labels).
func tableFromHeadScalar(h, out, tab []float32) float32 {
	kh := len(h)
	for x := range out {
		row := tab[x*kh : x*kh+kh]
		row = row[:len(h)]
		m0, m1, m2, m3 := h[0]+row[0], float32(inf32), float32(inf32), float32(inf32)
		y := 1
		for ; y+4 <= kh; y += 4 {
			hh, rr := h[y:y+4:y+4], row[y:y+4:y+4]
			m0, m1 = min(m0, hh[0]+rr[0]), min(m1, hh[1]+rr[1])
			m2, m3 = min(m2, hh[2]+rr[2]), min(m3, hh[3]+rr[3])
		}
		for ; y < kh; y++ {
			m0 = min(m0, h[y]+row[y])
		}
		out[x] = min(min(m0, m1), min(m2, m3))
	}
	return normalize(out)
}
