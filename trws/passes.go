package trws

// The message passes. They are the hot loops: flat slices, offsets precomputed per
// adjacency entry, no allocation, and one kernel call per edge chosen by a switch
// outside the label loops.

// block returns the messages into a node with adjacency entries [a0, a1), k labels
// each (empty for an isolated node, whose a0 may be the end of the arrays).
func (s *Solver) block(a0, a1 int32, k int) []float32 {
	if a0 == a1 {
		return nil
	}
	return s.msg[s.ain[a0] : int(s.ain[a0])+int(a1-a0)*k]
}

// sumInto sets d to node i's unary plus every message into i (one contiguous block)
// and returns min d.
func (s *Solver) sumInto(i int32, d []float32) float32 {
	u := s.u32[s.uoff[i]:]
	block := s.block(s.astart[i], s.astart[i+1], len(d))
	if vector && len(d) >= 8 {
		return sumRows(d, u, block)
	}
	return sumRowsScalar(d, u, block)
}

// sumRowsScalar sets d(x) = u(x) + Σ_r block[r·len(d) + x] and returns min d. It
// walks the labels four at a time and, for each group, adds all rows in registers
// before storing once.
func sumRowsScalar(d, u, block []float32) float32 {
	k := len(d)
	u = u[:k]
	m0, m1, m2, m3 := float32(inf32), float32(inf32), float32(inf32), float32(inf32)
	x := 0
	for ; x+4 <= k; x += 4 {
		uu := u[x : x+4 : x+4]
		d0, d1, d2, d3 := uu[0], uu[1], uu[2], uu[3]
		for p := x; p < len(block); p += k {
			m := block[p : p+4 : p+4]
			d0 += m[0]
			d1 += m[1]
			d2 += m[2]
			d3 += m[3]
		}
		dd := d[x : x+4 : x+4]
		dd[0], dd[1], dd[2], dd[3] = d0, d1, d2, d3
		m0, m1, m2, m3 = min(m0, d0), min(m1, d1), min(m2, d2), min(m3, d3)
	}
	for ; x < k; x++ {
		v := u[x]
		for p := x; p < len(block); p += k {
			v += block[p]
		}
		d[x] = v
		m0 = min(m0, v)
	}
	return min(min(m0, m1), min(m2, m3))
}

// reparam sets h = g·d − back and returns min h, four labels at a time with four
// independent minima (a single running minimum is a chain of dependent MINSS).
func reparam(h, d, back []float32, g float32) float32 {
	if vector && len(d) >= 8 {
		return reparamVector(h, d, back, g)
	}
	return reparamScalar(h, d, back, g)
}

// reparamScalar is reparam in Go, for every CPU.
func reparamScalar(h, d, back []float32, g float32) float32 {
	k := len(d)
	back, h = back[:k], h[:k]
	m0, m1, m2, m3 := float32(inf32), float32(inf32), float32(inf32), float32(inf32)
	x := 0
	for ; x+4 <= k; x += 4 {
		dd, bb, hh := d[x:x+4:x+4], back[x:x+4:x+4], h[x:x+4:x+4]
		h0, h1, h2, h3 := g*dd[0]-bb[0], g*dd[1]-bb[1], g*dd[2]-bb[2], g*dd[3]-bb[3]
		hh[0], hh[1], hh[2], hh[3] = h0, h1, h2, h3
		m0, m1, m2, m3 = min(m0, h0), min(m1, h1), min(m2, h2), min(m3, h3)
	}
	for ; x < k; x++ {
		hx := g*d[x] - back[x]
		h[x] = hx
		m0 = min(m0, hx)
	}
	return min(min(m0, m1), min(m2, m3))
}

// send sends along adjacency entry k of node i the message min_x h(x) + θ(x,·),
// where h = g·d − (message into i along k), into the neighbour's slot; it returns the
// normalisation constant. fromTail says whether i is the edge's tail.
func (s *Solver) send(k int32, d, h []float32, g float32, fromTail bool) float32 {
	e := s.aedge[k]
	kr := s.labels[s.tail[e]]
	if fromTail {
		kr = s.labels[s.head[e]]
	}
	out := s.msg[s.aout[k] : s.aout[k]+kr]
	if s.kind[e] == kindTruncLinear && truncLinear2Sends(len(d), len(out), s.t[e]) {
		return truncLinear2SendAVX2(d, s.msg[s.ain[k]:s.ain[k]+kr], h[:kr], out, g, s.w[e], s.t[e])
	}
	hmin := reparam(h, d, s.msg[s.ain[k]:], g)
	switch s.kind[e] {
	case kindPotts:
		if len(out) == len(h) {
			return pottsSquare(h, out, hmin, s.w[e])
		}
		return pottsMessage(h, out, s.w[e])
	case kindTruncLinear:
		return truncLinearMessage(h, out, hmin, s.w[e], s.t[e], s.scratch[3*s.mk:])
	case kindTruncQuad:
		return truncQuadMessage(h, out, s.w[e], s.t[e], s.envV, s.envZ)
	case kindDifference:
		return s.differenceMessage(e, h, out, fromTail)
	}
	var tab []float32
	if s.kind[e] == kindPattern {
		tab = s.scaled(e, len(h)*len(out))
	} else {
		tab = s.tables[s.tab[e] : s.tab[e]+int32(len(h)*len(out))]
	}
	if fromTail {
		return tableMessageFromTail(h, out, tab)
	}
	return tableMessageFromHead(h, out, tab)
}

// forward is the forward pass: nodes in increasing order send to later neighbours.
func (s *Solver) forward() {
	s.rounded = false
	if s.allPotts {
		if p := s.stripedPotts(); p != nil {
			s.pipelinedPass(false, func(lo, hi int32, d, h []float32) float64 { return p.forwardNodes(s, lo, hi, d, h) })
		} else if p := s.unrolled(); p != nil {
			p.forward(s)
		} else {
			s.forwardPotts()
		}
		return
	}
	if s.tl2 {
		s.forwardTruncLinear2()
		return
	}
	if s.table2 {
		s.forwardTable2()
		return
	}
	D, H := s.scratch[:s.mk], s.scratch[s.mk:2*s.mk]
	for i := int32(0); i < int32(s.n); i++ {
		k := s.labels[i]
		d, h := D[:k], H[:k]
		s.sumInto(i, d)
		g := s.gamma[i]
		for a := s.astart[i] + s.nbwd[i]; a < s.astart[i+1]; a++ {
			s.send(a, d, h, g, true)
		}
	}
}

// forwardRound is the forward pass of a check iteration. On Potts models it
// also rounds the check's labeling (Kolmogorov's rounding, check's), of the
// messages the iteration starts from: node i's label needs the messages into
// i from later nodes, which the forward pass does not write, and the labels
// of earlier nodes, rounded already. The pass has those
// messages and the weights in registers, so in assembly the labeling costs
// little beyond the pass; elsewhere the rounding runs just before it. Other
// models round after the backward pass (Check): their check is cheap next to
// their iterations.
func (s *Solver) forwardRound() {
	if !s.allPotts {
		s.forward()
		return
	}
	if p := s.unrolled(); p != nil && p.forwardRound != nil {
		p.forwardRound(s)
	} else {
		s.roundPotts()
		s.forward()
	}
	s.rounded = true
}

// backward is the backward pass; it returns the lower bound (see the package doc):
// Σ_i min D_i + Σ_e c_e. With check, on Potts models, it also computes what
// the check that follows needs of each node's D (fusedcheck.go): the unique
// argmins (the passes written out for 2 to 8 labels; testEdges then tests the
// edges across a change of label) or the consistency labels (consistNode), so
// that the check itself only rounds the labeling. Kolmogorov subtracts min D_i from D_i before sending; here
// the shift is taken out of the message constants instead (c_e − γ·min D_i), which
// gives the same messages and bound without a pass over D.
func (s *Solver) backward(check bool) float64 {
	s.fused = check && s.allPotts // elsewhere (stereo, tables) the separate check measured as cheap
	if s.allPotts {
		if p := s.stripedPotts(); p != nil && !s.fused {
			// A check iteration's backward pass (fused) stays whole: it
			// tests each edge against its later end's new label.
			return s.pipelinedPass(true, func(lo, hi int32, d, h []float32) float64 { return p.backwardNodes(s, lo, hi, d, h) }) + s.offset
		}
		if p := s.unrolled(); p != nil {
			return p.backward(s, s.fused)
		}
		if s.fused && s.chkD == nil {
			s.chkD = make([]float32, len(s.u32)) // consistNode's D
		}
		return s.backwardPotts(s.fused)
	}
	if s.tl2 {
		return s.backwardTruncLinear2()
	}
	if s.table2 {
		return s.backwardTable2()
	}
	D, H := s.scratch[:s.mk], s.scratch[s.mk:2*s.mk]
	lb := 0.0
	for i := int32(s.n) - 1; i >= 0; i-- {
		k := s.labels[i]
		d, h := D[:k], H[:k]
		dmin := s.sumInto(i, d)
		lb += float64(dmin)
		g := s.gamma[i]
		for a := s.astart[i]; a < s.astart[i]+s.nbwd[i]; a++ {
			lb += float64(s.send(a, d, h, g, false)) - float64(g)*float64(dmin)
		}
	}
	return lb + s.offset
}
