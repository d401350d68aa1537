package trws

// The check inside the Potts passes for K = 2 and 4, written out as for K = 8
// (fusedcheck.go): consistNode, uniqueArgmin and primalLabels with the values
// in registers, the same floats operation for operation (tested).

// consistNode2 is consistNode for K = 2 with D in registers (backwardPotts2),
// as consistNode8.
func (s *Solver) consistNode2(i int32, d0, d1 float32) {
	dd := (*[2]float32)(s.chkD[s.uoff[i]:])
	dd[0], dd[1] = d0, d1
	l := uniqueArgmin2(dd)
	s.argmin[i], s.consLabel[i] = l, l
	if l < 0 {
		return
	}
	for a := s.astart[i] + s.nbwd[i]; a < s.astart[i+1]; a++ {
		e := s.aedge[a]
		j := s.head[e]
		lj := s.argmin[j]
		if lj < 0 || lj == l { // equal argmins: tight (see consistNode8)
			continue
		}
		dj := (*[2]float32)(s.chkD[s.uoff[j]:])
		fwd := (*[2]float32)(s.msg[s.aout[a]:]) // into j along e
		dmin, g, w := dj[lj], s.gamma[j], s.w[e]
		h0 := g*(dj[0]-dmin) - fwd[0] + w
		h1 := g*(dj[1]-dmin) - fwd[1] + w
		hl := g*(dj[l&1]-dmin) - fwd[l&1]
		best := min(min(h0, h1), hl)
		val := g*(dj[lj&1]-dmin) - fwd[lj&1] + w
		if val-best > ConsistencyTolerance*max(1, abs32(val)) {
			s.consLabel[i], s.consLabel[j] = -1, -1
		}
	}
}

// uniqueArgmin2 is uniqueArgmin of 2 values, as uniqueArgmin8.
func uniqueArgmin2(d *[2]float32) int32 {
	m := min(d[0], d[1])
	margin := ConsistencyTolerance * max(1, abs32(m))
	var n, at int32
	for x, v := range d {
		near := b2i(v-m <= margin)
		n += near
		at += near * int32(x)
	}
	if n != 1 {
		return -1
	}
	return at
}

// primalPotts2 is primalPotts8 for K = 2.
func (s *Solver) primalPotts2() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[2]float32)(s.u32[s.uoff[i]:])
		p0, p1 := u[0], u[1]
		a0, a1, nb := s.astart[i], s.astart[i+1], s.nbwd[i]
		for a := a0; a < a0+nb; a++ {
			e := s.aedge[a]
			w, xj := s.w[e], s.primal[s.tail[e]]
			if xj != 0 {
				p0 += w
			}
			if xj != 1 {
				p1 += w
			}
		}
		for block := s.block(a0, a1, 2)[nb*2:]; len(block) >= 2; block = block[2:] {
			m := (*[2]float32)(block)
			p0 += m[0]
			p1 += m[1]
		}
		at, m := int32(0), p0
		if p1 < m {
			at = 1
		}
		s.primal[i] = at
	}
}

// consistNode4 is consistNode for K = 4 with D in registers (backwardPotts4),
// as consistNode8.
func (s *Solver) consistNode4(i int32, d0, d1, d2, d3 float32) {
	dd := (*[4]float32)(s.chkD[s.uoff[i]:])
	dd[0], dd[1], dd[2], dd[3] = d0, d1, d2, d3
	l := uniqueArgmin4(dd)
	s.argmin[i], s.consLabel[i] = l, l
	if l < 0 {
		return
	}
	for a := s.astart[i] + s.nbwd[i]; a < s.astart[i+1]; a++ {
		e := s.aedge[a]
		j := s.head[e]
		lj := s.argmin[j]
		if lj < 0 || lj == l { // equal argmins: tight (see consistNode8)
			continue
		}
		dj := (*[4]float32)(s.chkD[s.uoff[j]:])
		fwd := (*[4]float32)(s.msg[s.aout[a]:]) // into j along e
		dmin, g, w := dj[lj], s.gamma[j], s.w[e]
		h0 := g*(dj[0]-dmin) - fwd[0] + w
		h1 := g*(dj[1]-dmin) - fwd[1] + w
		h2 := g*(dj[2]-dmin) - fwd[2] + w
		h3 := g*(dj[3]-dmin) - fwd[3] + w
		hl := g*(dj[l&3]-dmin) - fwd[l&3]
		best := min(min(min(h0, h1), min(h2, h3)), hl)
		val := g*(dj[lj&3]-dmin) - fwd[lj&3] + w
		if val-best > ConsistencyTolerance*max(1, abs32(val)) {
			s.consLabel[i], s.consLabel[j] = -1, -1
		}
	}
}

// uniqueArgmin4 is uniqueArgmin of 4 values, as uniqueArgmin8.
func uniqueArgmin4(d *[4]float32) int32 {
	m := min(min(d[0], d[1]), min(d[2], d[3]))
	margin := ConsistencyTolerance * max(1, abs32(m))
	var n, at int32
	for x, v := range d {
		near := b2i(v-m <= margin)
		n += near
		at += near * int32(x)
	}
	if n != 1 {
		return -1
	}
	return at
}

// primalPotts4 is primalPotts8 for K = 4.
func (s *Solver) primalPotts4() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[4]float32)(s.u32[s.uoff[i]:])
		p0, p1, p2, p3 := u[0], u[1], u[2], u[3]
		a0, a1, nb := s.astart[i], s.astart[i+1], s.nbwd[i]
		for a := a0; a < a0+nb; a++ {
			e := s.aedge[a]
			w, xj := s.w[e], s.primal[s.tail[e]]
			if xj != 0 {
				p0 += w
			}
			if xj != 1 {
				p1 += w
			}
			if xj != 2 {
				p2 += w
			}
			if xj != 3 {
				p3 += w
			}
		}
		for block := s.block(a0, a1, 4)[nb*4:]; len(block) >= 4; block = block[4:] {
			m := (*[4]float32)(block)
			p0 += m[0]
			p1 += m[1]
			p2 += m[2]
			p3 += m[3]
		}
		at, m := int32(0), p0
		if p1 < m {
			at, m = 1, p1
		}
		if p2 < m {
			at, m = 2, p2
		}
		if p3 < m {
			at = 3
		}
		s.primal[i] = at
	}
}
