package trws

// The check inside the Potts passes for K = 2 and 4, written out as for K = 8
// (fusedcheck.go): consistNode, uniqueArgmin and primalLabels with the values
// in registers, the same floats operation for operation (tested).

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
