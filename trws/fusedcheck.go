package trws

// The check of a Potts model inside the passes. check computes, after an
// iteration, each node's D (unary plus every message into it), its unique
// argmin and, per edge, whether the argmins agree with the edge's min-marginal;
// then the rounded labeling. In the backward pass, when node i is reached,
// every message into i is final for the iteration (later nodes have sent to
// it, earlier ones sent in the forward pass and send no more), so its D there
// is the check's D, and an edge's test — which needs the D of its later end
// and the argmin of its earlier one — can run when its earlier end is reached.
// consistNode does that for node i (label counts above 8); primalLabels then
// rounds the labeling as check does, without its other passes. For K = 2 to 8
// the passes written out in registers record only the unique argmin, inline;
// the edges whose ends' argmins differ are tested after the pass (testEdges),
// then primalPotts8 and its kin round. The floats are check's, operation for
// operation, so the labels are identical (tested).

// consistNode records node i's D (d), sets its argmin and consistency label,
// and tests the edges to its later neighbours, whose D and argmin are
// recorded already: a failed test clears both ends' labels.
func (s *Solver) consistNode(i int32, d []float32) {
	copy(s.chkD[s.uoff[i]:s.uoff[i+1]], d)
	l := uniqueArgmin(d)
	s.argmin[i], s.consLabel[i] = l, l
	if l < 0 {
		return
	}
	r := s.scratch[2*s.mk : 3*s.mk]
	for a := s.astart[i] + s.nbwd[i]; a < s.astart[i+1]; a++ {
		e := s.aedge[a]
		j := s.head[e]
		lj := s.argmin[j]
		if lj < 0 || (lj == l && s.sameLabelTight(e)) {
			continue
		}
		dj := s.chkD[s.uoff[j]:s.uoff[j+1]]
		fwd := s.msg[s.aout[a] : s.aout[a]+int32(len(dj))] // into j along e
		dmin, g := dj[lj], s.gamma[j]
		r := r[:len(dj)]
		s.pairRow(e, l, r)
		best := float32(inf32)
		var val float32
		for y, v := range dj {
			h := g*(v-dmin) - fwd[y]
			best = min(best, h+r[y])
			if int32(y) == lj {
				val = h + r[y]
			}
		}
		if val-best > ConsistencyTolerance*max(1, abs32(val)) {
			s.consLabel[i], s.consLabel[j] = -1, -1
		}
	}
}

// testEdges is the check's test of the edges (check's tight), after the
// backward pass of the Potts passes written out for K = 2 to 8, which record
// each node's unique argmin only. The pass leaves the messages the tests read
// as they are (the forward messages into the later ends), and the clearing of
// labels does not depend on the order; the later end's D is summed again from
// its messages, as the pass summed it.
//
// Only the edges across a change of label are tested: equal argmins pass the
// test whatever the values. With l the label of both ends and m the message
// into the later end j, h(l) = −m(l) ≤ 0 exactly, as D_j(l) is dmin; and
// every h(y) + w ≥ 0 in floats too, as m, sent in this iteration's forward
// pass, lies in [0, w] and rounding is monotone. So the minimum of h + θ(l, ·)
// is h(l), the value the test compares it with. On images few edges are
// across a change of label.
func (s *Solver) testEdges() {
	mk := s.mk
	d, h, r := s.scratch[:mk], s.scratch[mk:2*mk], s.scratch[2*mk:3*mk]
	for e := range int32(len(s.tail)) {
		i, j := s.tail[e], s.head[e]
		l, lj := s.argmin[i], s.argmin[j]
		if l < 0 || lj < 0 || l == lj {
			continue
		}
		s.sumInto(j, d)
		if !s.tight(e, d, lj, l, s.gamma[j], h, r) {
			s.consLabel[i], s.consLabel[j] = -1, -1
		}
	}
}

// roundPotts is check's rounded labeling alone on a Potts model: the passes
// written out for its label count where there are, else primalLabels.
func (s *Solver) roundPotts() {
	if p := s.unrolled(); p != nil {
		p.primal(s)
	} else {
		s.primalLabels()
	}
}

// primalLabels is check's rounded labeling alone.
func (s *Solver) primalLabels() {
	P, row := s.scratch[2*s.mk:3*s.mk], s.scratch[3*s.mk:4*s.mk]
	for i := int32(0); i < int32(s.n); i++ {
		k := s.labels[i]
		s.primalNode(i, P[:k], row[:k])
	}
}

// primalNode rounds node i (after the earlier nodes): its label minimises its
// unary plus the pairwise terms to earlier nodes' labels and the messages from
// later ones; p and r are scratch of its label count.
func (s *Solver) primalNode(i int32, p, r []float32) {
	copy(p, s.u32[s.uoff[i]:s.uoff[i+1]])
	adj := s.aedge[s.astart[i]:s.astart[i+1]]
	nb := s.nbwd[i]
	for _, e := range adj[:nb] {
		s.pairRow(e, s.primal[s.tail[e]], r)
		for y, v := range r {
			p[y] += v
		}
	}
	for _, e := range adj[nb:] {
		for y, v := range s.msgInto(e, i)[:len(p)] {
			p[y] += v
		}
	}
	s.primal[i] = argmin(p)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// primalPotts8 is primalLabels for K = 8 Potts models, in registers: the
// Potts term to an earlier node adds w at every label but that node's (where
// pairRow's 0 leaves the sum as it is), and the argmin takes the first
// minimiser. Both by branches, not by arithmetic: each node's label waits on
// its earlier neighbour's, and a predicted branch does not wait (segmentation
// labels come in runs); conditional moves measured 1–2% slower on the
// 1000×1000 benchmarks (docs/BENCHMARKS.md).
func (s *Solver) primalPotts8() {
	for i := int32(0); i < int32(s.n); i++ {
		u := (*[8]float32)(s.u32[s.uoff[i]:])
		p0, p1, p2, p3, p4, p5, p6, p7 := u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]
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
			if xj != 4 {
				p4 += w
			}
			if xj != 5 {
				p5 += w
			}
			if xj != 6 {
				p6 += w
			}
			if xj != 7 {
				p7 += w
			}
		}
		for block := s.block(a0, a1, 8)[nb*8:]; len(block) >= 8; block = block[8:] {
			m := (*[8]float32)(block)
			p0 += m[0]
			p1 += m[1]
			p2 += m[2]
			p3 += m[3]
			p4 += m[4]
			p5 += m[5]
			p6 += m[6]
			p7 += m[7]
		}
		at, m := int32(0), p0
		if p1 < m {
			at, m = 1, p1
		}
		if p2 < m {
			at, m = 2, p2
		}
		if p3 < m {
			at, m = 3, p3
		}
		if p4 < m {
			at, m = 4, p4
		}
		if p5 < m {
			at, m = 5, p5
		}
		if p6 < m {
			at, m = 6, p6
		}
		if p7 < m {
			at = 7
		}
		s.primal[i] = at
	}
}
