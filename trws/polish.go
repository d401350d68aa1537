package trws

import (
	"math"

	"github.com/partopt/partopt/model"
)

// polish runs one forward and one backward pass in float64, from the float32
// messages, with exact energies (+Inf as the penalty) and the plain O(K²) minimisation
// for every kind. It returns the messages, laid out as s.msg. After it, the backward
// decomposition holds to float64 rounding: min_b [θ̃_e + γ·D_head] equals the
// message's normalisation constant for every tail label, so the gap of a consistent
// labeling is ~1e-12 instead of float32's ~1e-6.
func (s *Solver) polish() []float64 {
	msg := make([]float64, len(s.msg))
	for i, v := range s.msg {
		msg[i] = float64(v)
	}
	big := float64(s.big)
	into := func(e, i int32) []float64 {
		if s.head[e] == i {
			return msg[s.mhead[e] : s.mhead[e]+s.labels[i]]
		}
		return msg[s.mtail[e] : s.mtail[e]+s.labels[i]]
	}
	d := make([]float64, s.mk)
	h := make([]float64, s.mk)
	sum := func(i int32) []float64 {
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
	var buf []float64 // fn.Row's scratch
	send := func(e, from int32, di []float64) {
		g := 1 / float64(max(s.nbwd[from], s.astart[from+1]-s.astart[from]-s.nbwd[from]))
		back := into(e, from)
		hh := h[:len(di)]
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
			fn.MinPlus(hh, out, !first, &buf)
		} else {
			for y := range out {
				out[y] = math.Inf(1)
			}
			// θ exactly, +Inf as the penalty, by rows of the function's first argument:
			// the sender's labels when it is that argument, else the receiver's.
			if first {
				for x, hx := range hh {
					row := fn.Row(x, &buf)
					for y, t := range row {
						out[y] = fmin(out[y], hx+fmin(t, big))
					}
				}
			} else {
				for y := range out {
					row := fn.Row(y, &buf)
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
	for i := int32(0); i < int32(s.n); i++ {
		di := sum(i)
		for _, e := range s.aedge[s.astart[i]+s.nbwd[i] : s.astart[i+1]] {
			send(e, i, di)
		}
	}
	for i := int32(s.n) - 1; i >= 0; i-- {
		di := sum(i)
		for _, e := range s.aedge[s.astart[i] : s.astart[i]+s.nbwd[i]] {
			send(e, i, di)
		}
	}
	return msg
}
