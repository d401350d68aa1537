package trws

import (
	"math"

	"github.com/partopt/partopt/model"
)

// polish runs one forward and one backward pass in float64, from the float32
// messages from (the solver's own or a draft's, laid out as Certificate.Messages:
// edge by edge, into the factor's first variable, then into its second), with exact
// energies (+Inf as the penalty) and the plain O(K²) minimisation for every kind. It
// returns the messages in that layout, so that a certificate takes them without a
// copy. After it, the backward
// decomposition holds to float64 rounding: min_b [θ̃_e + γ·D_head] equals the
// message's normalisation constant for every tail label, so the gap of a consistent
// labeling is ~1e-12 instead of float32's ~1e-6.
func (s *Solver) polish(from []float32) []float64 {
	ne := len(s.tail)
	chead, ctail := make([]int32, ne), make([]int32, ne) // where each message is in msg
	k, before := s.edgeRanges()
	spreadParts(ne, k, func(p, lo, hi int) {
		size := before[p]
		for e := lo; e < hi; e++ {
			kh, kt := s.labels[s.head[e]], s.labels[s.tail[e]]
			if s.swap[e] { // the head is the factor's first variable
				chead[e], ctail[e] = size, size+kh
			} else {
				ctail[e], chead[e] = size, size+kt
			}
			size += kh + kt
		}
	})
	msg := make([]float64, before[k])
	spread(len(from), func(lo, hi int) {
		for i, v := range from[lo:hi] {
			msg[lo+i] = float64(v)
		}
	})
	big := float64(s.big)
	into := func(e, i int32) []float64 {
		if s.head[e] == i {
			return msg[chead[e] : chead[e]+s.labels[i]]
		}
		return msg[ctail[e] : ctail[e]+s.labels[i]]
	}
	// Each strip of a grid's passes (pipelined) its own scratch: the sums d,
	// the sender's h, a function row's buf.
	type scratch struct {
		d, h, buf []float64
	}
	scr := make([]scratch, max(s.strips(), 1))
	for t := range scr {
		scr[t] = scratch{d: make([]float64, s.mk), h: make([]float64, s.mk)}
	}
	sum := func(i int32, d []float64) []float64 {
		di := d[:s.labels[i]]
		for l := range di {
			u := s.u64[int(s.uoff[i])+l]
			if math.IsInf(u, 1) || u > big {
				u = big
			}
			di[l] = u
		}
		for _, e := range s.aedge[s.astart[i]:s.astart[i+1]] {
			for l, v := range into(e, i) {
				di[l] += v
			}
		}
		return di
	}
	send := func(e, from int32, di []float64, sc *scratch) {
		g := 1 / float64(max(s.nbwd[from], s.astart[from+1]-s.astart[from]-s.nbwd[from]))
		back := into(e, from)
		hh := sc.h[:len(di)]
		for x, v := range di {
			hh[x] = g*v - back[x]
		}
		fromTail := s.tail[e] == from
		to := s.head[e]
		if !fromTail {
			to = s.tail[e]
		}
		out := into(e, to)
		fn := s.fn[e]
		first := fromTail != s.swap[e] // the sender's labels are θ's first argument
		if (fn.Kind == model.Potts || fn.Kind == model.TruncatedLinear) && fn.Range() <= big {
			// No value reaches the penalty: the rows' minimum by a distance
			// transform, the same candidates' sums.
			fn.MinPlus(hh, out, !first, &sc.buf)
		} else if fn.Kind == model.Explicit {
			// The rows of θ's first argument; the kernels take them as the loops below.
			if first {
				minPlus64FromTail(hh, out, fn.Table, big)
			} else {
				minPlus64FromHead(hh, out, fn.Table, big)
			}
		} else {
			for y := range out {
				out[y] = math.Inf(1)
			}
			// θ exactly, +Inf as the penalty, by rows of the function's first argument:
			// the sender's labels when it is that argument, else the receiver's.
			if first {
				for x, hx := range hh {
					row := fn.Row(x, &sc.buf)
					for y, t := range row {
						out[y] = fmin(out[y], hx+fmin(t, big))
					}
				}
			} else {
				for y := range out {
					row := fn.Row(y, &sc.buf)
					best := math.Inf(1)
					for x, t := range row {
						best = fmin(best, hh[x]+fmin(t, big))
					}
					out[y] = best
				}
			}
		}
		lo := math.Inf(1)
		for _, v := range out {
			lo = fmin(lo, v)
		}
		for y := range out {
			out[y] -= lo
		}
	}
	forward := func(t int, lo, hi int32) float64 {
		sc := &scr[t]
		for i := lo; i < hi; i++ {
			di := sum(i, sc.d)
			for _, e := range s.aedge[s.astart[i]+s.nbwd[i] : s.astart[i+1]] {
				send(e, i, di, sc)
			}
		}
		return 0
	}
	backward := func(t int, lo, hi int32) float64 {
		sc := &scr[t]
		for i := hi - 1; i >= lo; i-- {
			di := sum(i, sc.d)
			for _, e := range s.aedge[s.astart[i] : s.astart[i]+s.nbwd[i]] {
				send(e, i, di, sc)
			}
		}
		return 0
	}
	if s.rowWidth > 0 { // a grid: in strips side by side, the same floats
		s.pipelined(false, forward)
		s.pipelined(true, backward)
	} else {
		forward(0, 0, int32(s.n))
		backward(0, 0, int32(s.n))
	}
	return msg
}
