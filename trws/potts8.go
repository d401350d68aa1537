package trws

// For K = 8, the commonest label count of segmentation benchmarks, the Potts passes of
// potts.go are written out in full: the eight sums and the message stay in registers,
// and a node costs no call, loop over labels or bounds check. The two loops below are
// the same node update as forwardPotts/backwardPotts, unrolled; keep them in step.
// Where the CPU has AVX2 the passes run in assembly instead (potts_amd64.s).

func (s *Solver) forwardPotts8() {
	for i := int32(0); i < int32(s.n); i++ {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[8]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4, d5, d6, d7 := u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]
		for block := s.block(a0, a1, 8); len(block) >= 8; block = block[8:] {
			m := (*[8]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
			d5 += m[5]
			d6 += m[6]
			d7 += m[7]
		}
		g := s.gamma[i]
		for a := a0 + s.nbwd[i]; a < a1; a++ {
			back, out := (*[8]float32)(s.msg[s.ain[a]:]), (*[8]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			h5 := g*d5 - back[5]
			h6 := g*d6 - back[6]
			h7 := g*d7 - back[7]
			hmin := min(min(min(h0, h1), min(h2, h3)), min(min(h4, h5), min(h6, h7)))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
			out[5] = min(h5-hmin, w)
			out[6] = min(h6-hmin, w)
			out[7] = min(h7-hmin, w)
		}
	}
}

func (s *Solver) backwardPotts8(check bool) float64 {
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		a0, a1 := s.astart[i], s.astart[i+1]
		u := (*[8]float32)(s.u32[s.uoff[i]:])
		d0, d1, d2, d3, d4, d5, d6, d7 := u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]
		for block := s.block(a0, a1, 8); len(block) >= 8; block = block[8:] {
			m := (*[8]float32)(block)
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
			d4 += m[4]
			d5 += m[5]
			d6 += m[6]
			d7 += m[7]
		}
		dmin := min(min(min(d0, d1), min(d2, d3)), min(min(d4, d5), min(d6, d7)))
		lb += float64(dmin)
		if check { // D's unique argmin, the node's label until testEdges
			margin := ConsistencyTolerance * max(1, abs32(dmin))
			near := b2i(d0-dmin <= margin) + b2i(d1-dmin <= margin) + b2i(d2-dmin <= margin) + b2i(d3-dmin <= margin) + b2i(d4-dmin <= margin) + b2i(d5-dmin <= margin) + b2i(d6-dmin <= margin) + b2i(d7-dmin <= margin)
			l := int32(-1)
			if near == 1 {
				l = b2i(d1-dmin <= margin) + 2*b2i(d2-dmin <= margin) + 3*b2i(d3-dmin <= margin) + 4*b2i(d4-dmin <= margin) + 5*b2i(d5-dmin <= margin) + 6*b2i(d6-dmin <= margin) + 7*b2i(d7-dmin <= margin)
			}
			s.argmin[i], s.consLabel[i] = l, l
		}
		g := s.gamma[i]
		for a := a0; a < a0+s.nbwd[i]; a++ {
			back, out := (*[8]float32)(s.msg[s.ain[a]:]), (*[8]float32)(s.msg[s.aout[a]:])
			w := s.w[s.aedge[a]]
			h0 := g*d0 - back[0]
			h1 := g*d1 - back[1]
			h2 := g*d2 - back[2]
			h3 := g*d3 - back[3]
			h4 := g*d4 - back[4]
			h5 := g*d5 - back[5]
			h6 := g*d6 - back[6]
			h7 := g*d7 - back[7]
			hmin := min(min(min(h0, h1), min(h2, h3)), min(min(h4, h5), min(h6, h7)))
			out[0] = min(h0-hmin, w)
			out[1] = min(h1-hmin, w)
			out[2] = min(h2-hmin, w)
			out[3] = min(h3-hmin, w)
			out[4] = min(h4-hmin, w)
			out[5] = min(h5-hmin, w)
			out[6] = min(h6-hmin, w)
			out[7] = min(h7-hmin, w)
			lb += float64(hmin - g*dmin)
		}
	}
	return lb + s.offset
}
