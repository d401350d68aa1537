package trws

import (
	"encoding/binary"
	"slices"

	"github.com/partopt/partopt/model"
)

// Pattern edges hold a Potts Difference term — label elimination's verification
// term of a segmentation model — as its weight w times a unit table
//
//	P(a, b) = [L(a) ≠ L(b)] − [P(a) ≠ P(b)] ∈ {−1, 0, 1}
//
// shared by every edge whose two label maps are alike: a window's tens of
// thousands of edges share a few dozen. Their messages are the table kernels' on
// w·P, which is the explicit table entry for entry (w·1 − w·0 and w·0 − w·1 are
// exact), so the solver computes what it would with tables, bit for bit, while it
// reads one weight and a cached P per edge instead of streaming a table from memory
// (a 160×160 window with 8 labels: 12 MB of tables per pass, which made its
// iterations 2.7× slower than with one shared table). Small label counts only
// (TablesCheaper); the Difference kernel takes the others.

// TablesCheaper says whether a table message (ka·kb entries) costs less than the
// Difference kernel's distance transforms over labels [0, r) and the two label
// lists: about 8 table entries per label (BenchmarkDifferenceMessage: even at 32
// labels, the kernel 1.8× faster at 64, 1.8× slower at 16).
func TablesCheaper(ka, kb, r int) bool { return ka*kb <= 8*(r+ka+kb) }

// patterns are a solver's unit tables of pattern edges, found by their label maps.
type patterns struct {
	at    map[[2]int32]int32        // (tail map, head map) → the pattern's offset in tables
	id    map[*model.LabelMap]int32 // a label map → its content's number
	byKey map[string]int32          // a label map's content → its number
	key   []byte                    // scratch for the content
	buf   []float32                 // w·P of the edge a message is sent along
}

// mapID numbers the distinct contents of label maps.
func (p *patterns) mapID(mp *model.LabelMap) int32 {
	if id, ok := p.id[mp]; ok {
		return id
	}
	// Varints delimit themselves and both lists have the map's length: equal keys
	// are equal maps.
	p.key = p.key[:0]
	for _, list := range [2][]int{mp.Labels, mp.Images} {
		for _, l := range list {
			p.key = binary.AppendUvarint(p.key, uint64(l))
		}
	}
	id, ok := p.byKey[string(p.key)]
	if !ok {
		id = int32(len(p.byKey))
		p.byKey[string(p.key)] = id
	}
	p.id[mp] = id
	return id
}

// setPattern makes edge e, whose Difference term d (solver orientation) has a
// Potts base, a pattern edge.
func (s *Solver) setPattern(e int, d difference) {
	p := &s.pat
	if p.at == nil {
		p.at, p.id, p.byKey = map[[2]int32]int32{}, map[*model.LabelMap]int32{}, map[string]int32{}
	}
	tl, hl := d.side[0], d.side[1]
	key := [2]int32{p.mapID(tl), p.mapID(hl)}
	kt, kh := len(tl.Labels), len(hl.Labels)
	off, ok := p.at[key]
	if !ok {
		off = s.newSlot(kt * kh)
		t := s.tables[off:]
		for a := range kt {
			for b := range kh {
				var v float32
				if tl.Labels[a] != hl.Labels[b] {
					v++
				}
				if tl.Images[a] != hl.Images[b] {
					v--
				}
				t[a*kh+b] = v
			}
		}
		p.at[key] = off
	}
	if s.own != nil {
		s.ownSlots()
		s.own[e] = false // the slot is the shared pattern: a SetTable takes a new one
	}
	s.kind[e], s.tab[e] = kindPattern, off
}

// newSlot appends n entries to the tables and returns their offset. The array may
// be shared with a Restrict-ed solver until the first new slot, which copies it.
func (s *Solver) newSlot(n int) int32 {
	if s.own == nil {
		s.tables = slices.Clip(s.tables)
	}
	s.ownSlots()
	off := int32(len(s.tables))
	s.tables = append(s.tables, make([]float32, n)...)
	return off
}

// claimSlots sets own, on a solver whose tables no other solver shares, for
// the table edges that are the only users of their slot (New shares a slot
// among the edges of one function): SetTable rewrites those in place rather
// than appending a slot, which would grow the tables (label elimination's
// rounds rewrite most of a protein's 2,785 tables, each its own).
func (s *Solver) claimSlots() {
	users := make(map[int32]int, len(s.tab))
	for e, k := range s.kind {
		if k == kindTable {
			users[s.tab[e]]++
		}
	}
	s.ownSlots()
	for e, k := range s.kind {
		s.own[e] = k == kindTable && users[s.tab[e]] == 1
	}
}

// ownSlots sizes own to the edges (New adds edges after a first slot).
func (s *Solver) ownSlots() {
	if s.own == nil {
		s.own = make([]bool, 0, len(s.tail))
	}
	for len(s.own) < len(s.tail) {
		s.own = append(s.own, false)
	}
}

// scaled is w·P of pattern edge e, n entries, in the solver's scratch.
func (s *Solver) scaled(e int32, n int) []float32 {
	if n > len(s.pat.buf) { // sized here: a Restrict-ed solver shares the edges, not the scratch
		s.pat.buf = make([]float32, n)
	}
	out := s.pat.buf[:n]
	scale(out, s.tables[s.tab[e]:s.tab[e]+int32(n)], s.w[e])
	return out
}

// scale sets dst = w·src.
func scale(dst, src []float32, w float32) {
	if vector {
		scaleAVX2(dst, src[:len(dst)], w)
		return
	}
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = w * v
	}
}
