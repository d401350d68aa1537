package trws

import (
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
)

// Difference edges hold label elimination's verification term g(a, b) = f(L(a), L(b))
// − f(P(a), P(b)) of a parametric f (model.Difference) without a table. On each side
// every label is immovable (P = L) or movable, sent to the side's one test label y.
// Splitting the sender's labels by that, the message into receiver label b is
//
//	b immovable: min( min_{a imm} h(a),           DT_mov(L(b)) − f(y_s, L(b)) )
//	b movable:   min( DT'_imm(L(b)),               DT_mov(L(b)) − f(y_s, y_r) )
//
// with DT_mov(l) = min_{a mov} h(a) + f(L(a), l) and DT'_imm(l) = min_{a imm} h(a) −
// f(L(a), y_r) + f(L(a), l): two distance transforms of f's kind over the labels
// [0, R), O(R + K) instead of the table's O(K²).

// difference is a Difference edge in the solver's orientation (tail, head).
type difference struct {
	side [2]*model.LabelMap // tail's map, head's map
	y    [2]int32           // each side's test label (−1: no movable label)
	base uint8              // kind of f
	r    int32              // 1 + the largest label L of either side
}

// newDifference checks fn's maps (each side's movable labels share one image) and
// returns the edge in the solver's orientation, or an error.
func newDifference(fn *model.Function, swap bool) (difference, error) {
	d := difference{side: fn.Args, y: [2]int32{-1, -1}}
	if swap {
		d.side[0], d.side[1] = d.side[1], d.side[0]
	}
	if d.base = kernelKind(fn.Base); d.base == kindTable || d.base == kindDifference {
		return d, fmt.Errorf("trws: a difference of base kind %v", fn.Base)
	}
	for s, mp := range d.side {
		for a, l := range mp.Labels {
			d.r = max(d.r, int32(l)+1)
			if p := mp.Images[a]; p != l {
				if d.y[s] >= 0 && d.y[s] != int32(p) {
					return d, fmt.Errorf("trws: a difference whose moved labels go to %d and %d: one test label per side expected", d.y[s], p)
				}
				d.y[s] = int32(p)
			}
		}
	}
	return d, nil
}

// baseValue is f(a, b) of a parametric kind in float32.
func baseValue(kind uint8, w, t float32, a, b int32) float32 {
	switch kind {
	case kindPotts:
		if a == b {
			return 0
		}
		return w
	case kindTruncLinear:
		d := a - b
		if d < 0 {
			d = -d
		}
		return w * min(float32(d), t)
	}
	d := float32(a - b)
	return w * min(d*d, t)
}

// differenceValue is g_e(a, b), a the tail's label.
func (s *Solver) differenceValue(e int32, a, b int32) float32 {
	d := &s.difs[s.dif[e]]
	w, t := s.w[e], s.t[e]
	tl, hl := d.side[0], d.side[1]
	return baseValue(d.base, w, t, int32(tl.Labels[a]), int32(hl.Labels[b])) -
		baseValue(d.base, w, t, int32(tl.Images[a]), int32(hl.Images[b]))
}

// differenceMessage sends along Difference edge e the message min_a h(a) + g(a, ·)
// into out (see the top of the file) and returns its normalisation constant.
func (s *Solver) differenceMessage(e int32, h, out []float32, fromTail bool) float32 {
	d := &s.difs[s.dif[e]]
	from, to, ys, yr := d.side[0], d.side[1], d.y[0], d.y[1]
	if !fromTail {
		from, to, ys, yr = to, from, yr, ys
	}
	base, w, t := d.base, s.w[e], s.t[e]
	r := int(d.r)
	mov, imm := s.dbuf[:r], s.dbuf[r:2*r]
	movL, movH, immL, immH := s.dlab[:0], s.dval[:0], s.dlab[r:r], s.dval[r:r]
	immMin := float32(inf32)
	for a, l := range from.Labels {
		if from.Images[a] != l {
			movL, movH = append(movL, int32(l)), append(movH, h[a])
			continue
		}
		immMin = min(immMin, h[a])
		if yr >= 0 {
			immL, immH = append(immL, int32(l)), append(immH, h[a]-baseValue(base, w, t, int32(l), yr))
		}
	}
	if len(movL) > 0 {
		s.envelope(base, w, t, movL, movH, mov)
	}
	if len(immL) > 0 {
		s.envelope(base, w, t, immL, immH, imm)
	}
	moved := float32(inf32) // f(y_s, y_r): what a movable receiver label pays from y_s
	if ys >= 0 && yr >= 0 {
		moved = baseValue(base, w, t, ys, yr)
	}
	for b, l := range to.Labels {
		var v float32
		switch {
		case to.Images[b] != l && ys >= 0:
			v = min(imm[l], mov[l]-moved)
		case to.Images[b] != l:
			v = imm[l]
		case ys >= 0:
			v = min(immMin, mov[l]-baseValue(base, w, t, ys, int32(l)))
		default:
			v = immMin
		}
		out[b] = v
	}
	return normalize(out)
}

// envelope sets out(l) = min_k vals[k] + θ(labels[k], l) for the labels l of out,
// under a parametric kind: directly from one or two terms, else by the distance
// transform of the dense array they define.
func (s *Solver) envelope(kind uint8, w, t float32, labels []int32, vals []float32, out []float32) {
	if len(labels) <= 2 {
		for l := range out {
			v := vals[0] + baseValue(kind, w, t, labels[0], int32(l))
			if len(labels) == 2 {
				v = min(v, vals[1]+baseValue(kind, w, t, labels[1], int32(l)))
			}
			out[l] = v
		}
		return
	}
	for l := range out {
		out[l] = inf32
	}
	for k, l := range labels {
		out[l] = vals[k]
	}
	s.transform(kind, out, w, t)
}

// transform replaces f by its distance transform under a parametric kind, f(l) ←
// min_k f(k) + θ(k, l), in place; inf32 entries are absent labels (all absent: f
// stays).
func (s *Solver) transform(kind uint8, f []float32, w, t float32) {
	lo := minOf(f)
	if lo >= inf32 {
		return
	}
	top := lo + w
	switch {
	case kind == kindTruncLinear && t <= 3:
		nearLinear(f, lo+w*t, w, t)
		return
	case kind == kindTruncLinear:
		top = lo + w*t
		for l := 1; l < len(f); l++ {
			f[l] = min(f[l], f[l-1]+w)
		}
		for l := len(f) - 2; l >= 0; l-- {
			f[l] = min(f[l], f[l+1]+w)
		}
	case kind == kindTruncQuad:
		top = lo + w*t
		if w > 0 {
			s.parabolas(f, float64(w))
		}
	}
	for l, v := range f {
		f[l] = min(v, top)
	}
}

// nearLinear is the truncated linear transform for T ≤ 3 (stereo's usual
// truncation), in place: only labels less than T apart cost less than top, so
// f(l) ← min(f(l), f(l±1) + w, f(l±2) + 2w, top), the last two terms only where
// T > 1 and T > 2.
func nearLinear(f []float32, top, w, t float32) {
	if t <= 1 {
		for l, v := range f {
			f[l] = min(v, top)
		}
		return
	}
	w2 := 2 * w
	if t <= 2 {
		w2 = inf32
	}
	p1, p2 := float32(inf32), float32(inf32) // f(l−1), f(l−2) before the update
	n := len(f)
	for l := range n {
		c := f[l]
		v := min(c, top, p1+w, p2+w2)
		if l+1 < n {
			v = min(v, f[l+1]+w)
		}
		if l+2 < n {
			v = min(v, f[l+2]+w2)
		}
		f[l] = v
		p2, p1 = p1, c
	}
}

// parabolas is the untruncated quadratic distance transform of f over its present
// (finite) entries: the lower envelope of the parabolas w·(l − k)² + f(k)
// (Felzenszwalb & Huttenlocher), in float64.
func (s *Solver) parabolas(f []float32, w float64) {
	v, z := s.envV[:0], s.envZ[:0]
	for q, fq := range f {
		if fq >= inf32 {
			continue
		}
		gq := float64(fq) + w*float64(q*q)
		var x float64
		for len(v) > 0 {
			p := int(v[len(v)-1])
			x = (gq - (float64(f[p]) + w*float64(p*p))) / (2 * w * float64(q-p))
			if x > z[len(z)-1] {
				break
			}
			v, z = v[:len(v)-1], z[:len(z)-1]
		}
		if len(v) == 0 {
			x = math.Inf(-1)
		}
		v, z = append(v, int32(q)), append(z, x)
	}
	vals := s.dbuf[2*len(f) : 3*len(f)]
	for k, p := range v {
		vals[k] = f[p]
	}
	k := 0
	for l := range f {
		for k+1 < len(v) && z[k+1] < float64(l) {
			k++
		}
		dl := float64(l) - float64(v[k])
		f[l] = float32(w*dl*dl + float64(vals[k]))
	}
}

// setDifference makes edge e the Difference term fn (the model factor lists the head
// first when swap), sizing the solver's buffers for it.
func (s *Solver) setDifference(e int, fn *model.Function, swap bool) error {
	d, err := newDifference(fn, swap)
	if err != nil {
		return err
	}
	for len(s.dif) < len(s.kind) { // New calls it while the edges are appended
		s.dif = append(s.dif, -1)
	}
	if s.dif[e] < 0 {
		s.dif[e] = int32(len(s.difs))
		s.difs = append(s.difs, d)
	} else {
		s.difs[s.dif[e]] = d
	}
	s.kind[e], s.w[e], s.t[e] = kindDifference, float32(fn.W), float32(math.Min(fn.T, math.MaxFloat32))
	s.fn[e] = fn
	s.generalPasses()
	s.sizeDifference(d.r)
	if d.base == kindPotts && TablesCheaper(fn.Shape[0], fn.Shape[1], int(d.r)) {
		s.setPattern(e, d)
	}
	return nil
}

// sizeDifference grows the buffers of the Difference kernels for labels [0, r).
func (s *Solver) sizeDifference(r int32) {
	if n := 3 * int(r); n > len(s.dbuf) {
		s.dbuf, s.dlab, s.dval = make([]float32, n), make([]int32, 2*int(r)), make([]float32, 2*int(r))
	}
	if n := max(int(r), s.mk) + 2; n > len(s.envV) {
		s.envV, s.envZ = make([]int32, n), make([]float64, n)
	}
}

// SetFunction replaces the term of edge e (as SetTable) by fn, a parametric
// pairwise kind (Potts, truncated linear or quadratic) or model.Difference, with
// the edge's shape in the factor's argument order; messages are kept. The solver
// keeps fn: the caller must not change it.
func (s *Solver) SetFunction(e int, fn *model.Function) error {
	s.src = nil
	if e < 0 || e >= len(s.tail) {
		return fmt.Errorf("trws: SetFunction: edge %d out of range [0,%d)", e, len(s.tail))
	}
	first, second := s.labels[s.tail[e]], s.labels[s.head[e]]
	if s.swap[e] {
		first, second = second, first
	}
	if err := fn.Validate(); err != nil {
		return fmt.Errorf("trws: SetFunction: edge %d: %w", e, err)
	}
	if len(fn.Shape) != 2 || fn.Shape[0] != int(first) || fn.Shape[1] != int(second) {
		return fmt.Errorf("trws: SetFunction: a %v function for a %d×%d edge", fn.Shape, first, second)
	}
	if fn.Kind == model.Explicit {
		return fmt.Errorf("trws: SetFunction: an explicit table (SetTable takes those)")
	}
	if r := fn.Range(); r >= float64(s.big)/4 {
		return fmt.Errorf("trws: SetFunction: edge %d: values up to %v are beyond the solver's penalty for +Inf (%v)", e, r, s.big)
	}
	if fn.Kind == model.Difference {
		return s.setDifference(e, fn, s.swap[e])
	}
	s.kind[e], s.w[e], s.t[e] = kernelKind(fn.Kind), float32(fn.W), float32(math.Min(fn.T, math.MaxFloat32))
	s.fn[e] = fn
	s.generalPasses()
	if s.dif != nil {
		s.dif[e] = -1
	}
	return nil
}
