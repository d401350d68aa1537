package trws

import (
	"context"
	"fmt"
	"slices"

	"github.com/partopt/partopt/model"
)

// Local re-solves a solved problem after small changes, near the changes only:
// the persistency method's pruning iterations remove a few nodes and change the
// unary terms of their neighbours, and TRW-S messages far from such a change are
// already converged. Kill removes nodes (their messages into the survivors become
// zero and the survivors' weights γ count only surviving neighbours, so that the
// state is exactly that of Restrict to the survivors), SetUnary changes a unary
// term, and Settle runs TRW-S passes over a region around the changed nodes,
// growing it while the change reaches its edge, until every node of the region
// and around it is consistent again. Solver returns the survivors' solver for a
// certificate or a full solve. Any messages are a valid reparametrisation, so a
// Local can only fail to settle, never make a wrong proof: the certificate is
// checked on the whole problem.
type Local struct {
	s     *Solver
	dead  []bool
	gamma []float32 // γ over the surviving neighbours
	cons  []int32   // each node's consistency label (−1: none)
	d     []float32 // the check's D_i (by uoff)
	next  []int32   // the check's labels
	arg   []int32   // the check's unique argmins (−1: none)
	nbr   []int32   // adjacency entry → its other end: one read, not an edge's two
	k     int       // every node's label count, 0 when they differ
	flag  []uint8   // Settle's marks (inRegion, inZone, inRing2), cleared at its end
	flags []int32   // the nodes with a mark
	zone  []int32   // check's buffers
	ring2 []int32
	// Options.
	Radius     int // grow the region by this many edges around a change (default 4)
	CheckEvery int // iterations between checks of the region (default 3)
	Budget     int // node updates before Settle gives up (default 4·nodes, at least 2^15)
	// Stable, when positive, also ends a Settle that leaves some region nodes
	// inconsistent: once nothing outside the region moved and no region label
	// (−1 included) changed over Stable checks in a row, the labels are stored as
	// they are — those nodes' messages have stopped changing, and a whole solve
	// would not make them agree any sooner. Their label is −1, as a whole check
	// of these messages says. Zero requires every region node consistent
	// (Solve's use: its settled nodes must all agree).
	Stable     int
	Iterations int // region iterations run so far
	failed     bool
	killed     bool // some node was killed: γ is the Local's own (gamma), not the solver's
	// summed says that the last passes left no D in d: check sums the region's too.
	summed bool
}

// NewLocal starts a Local from s's messages and the consistency labels of its
// last solve (one per node; they are taken to hold for these messages).
func (s *Solver) NewLocal(consistent []int) (*Local, error) {
	if len(consistent) != s.n {
		return nil, fmt.Errorf("trws: NewLocal: %d labels for %d nodes", len(consistent), s.n)
	}
	cons := make([]int32, s.n)
	for i, c := range consistent {
		cons[i] = int32(c)
	}
	return s.newLocal(cons), nil
}

// newLocal is NewLocal of the labels cons (kept).
func (s *Solver) newLocal(cons []int32) *Local {
	nbr := make([]int32, len(s.aedge))
	spread(s.n, func(lo, hi int) {
		for i := int32(lo); i < int32(hi); i++ {
			for a := s.astart[i]; a < s.astart[i+1]; a++ {
				nbr[a] = s.neighbour(a, i)
			}
		}
	})
	k := s.mk
	for i := range int32(s.n) {
		if s.labels[i] != int32(k) {
			k = 0
			break
		}
	}
	return &Local{s: s, dead: make([]bool, s.n), gamma: slices.Clone(s.gamma), cons: cons, nbr: nbr, k: k,
		d: make([]float32, len(s.u32)), next: make([]int32, s.n), arg: make([]int32, s.n), flag: make([]uint8, s.n)}
}

// dOf is node i's D in the check: by its offset, or where every node has the
// same labels (stereo) by its index, without reading the offset.
func (l *Local) dOf(i int32) []float32 {
	if k := l.k; k > 0 {
		return l.d[int(i)*k : int(i+1)*k]
	}
	return l.d[l.s.uoff[i]:l.s.uoff[i+1]]
}

// neighbour is the other end of adjacency entry a of node i.
func (s *Solver) neighbour(a, i int32) int32 {
	e := s.aedge[a]
	if s.tail[e] == i {
		return s.head[e]
	}
	return s.tail[e]
}

// Kill removes the nodes (solver nodes, not yet removed) and returns their
// surviving neighbours, ascending: the nodes whose state changed.
func (l *Local) Kill(nodes []int) []int {
	s := l.s
	for _, v := range nodes {
		l.dead[v], l.cons[v] = true, -1
		l.killed = true
	}
	var touched []int
	for _, v := range nodes {
		for a := s.astart[v]; a < s.astart[v+1]; a++ {
			j := l.nbr[a]
			if l.dead[j] {
				continue
			}
			clear(s.msgInto(s.aedge[a], j))
			touched = append(touched, int(j))
		}
	}
	slices.Sort(touched)
	touched = slices.Compact(touched)
	for _, j := range touched {
		var earlier, later int32
		for a := s.astart[j]; a < s.astart[j+1]; a++ {
			if !l.dead[l.nbr[a]] {
				if a < s.astart[j]+s.nbwd[j] {
					earlier++
				} else {
					later++
				}
			}
		}
		l.gamma[j] = gammaOf(earlier, later)
	}
	return touched
}

// SetUnary replaces the unary term of node v (Solver.SetUnary).
func (l *Local) SetUnary(v int, values []float64) error { return l.s.SetUnary(v, values) }

// Dead says whether node v was killed.
func (l *Local) Dead(v int) bool { return l.dead[v] }

// Consistent returns node v's consistency label (−1: none).
func (l *Local) Consistent(v int) int { return int(l.cons[v]) }

// Solver returns a solver on the surviving nodes (Restrict) and the surviving
// nodes themselves: the same problem and messages as the Local's. Where no node
// was killed that is the Local's own solver, not a copy (its problem is the
// whole one): going on with either changes both.
func (l *Local) Solver() (*Solver, []int, error) {
	var keep []int
	for v, d := range l.dead {
		if !d {
			keep = append(keep, v)
		}
	}
	if len(keep) == l.s.n {
		return l.s, keep, nil
	}
	r, err := l.s.Restrict(keep)
	return r, keep, err
}

// Proved is the Local's solver's Proved (a draft it certified in its solve)
// where no node was killed: the Local's problem is then its solver's.
func (l *Local) Proved(d *Draft, m *model.Model) (Verdict, bool) {
	if slices.Contains(l.dead, true) {
		return Verdict{}, false
	}
	return l.s.Proved(d, m)
}

// CheckDraft is Solver.CheckDraft for a draft of the Local's (Draft).
func (l *Local) CheckDraft(d *Draft, m *model.Model) (Verdict, error) {
	if v, ok := l.Proved(d, m); ok {
		return v, nil
	}
	return d.check(m, l.s.threads)
}

const (
	inRegion uint8 = 1 << iota
	inZone         // the region and its surviving neighbours: D changes
	inRing2        // neighbours of the zone: an edge to the zone may change
)

// setFlag marks node v with f.
func (l *Local) setFlag(v int32, f uint8) {
	if l.flag[v] == 0 {
		l.flags = append(l.flags, v)
	}
	l.flag[v] |= f
}

// Settle runs TRW-S over a region around the changed nodes (surviving nodes)
// until every node of the region is consistent and no node around it lost or
// changed its consistency label; the region grows by Radius around any node
// outside it that did. It reports false when the budget ran out first or ctx
// ended: the caller then solves the
// whole problem from these messages. On success every surviving node's label
// (Consistent) holds for the current messages: nodes beyond the region's
// neighbours kept their D and their edges. After a failure the labels no
// longer hold and every later Settle fails.
func (l *Local) Settle(ctx context.Context, changed []int) (ok bool) {
	if l.failed {
		return false
	}
	defer func() { l.failed = !ok }()
	s := l.s
	radius, every, budget := l.Radius, l.CheckEvery, l.Budget
	if radius <= 0 {
		radius = 4
	}
	if every <= 0 {
		every = 3
	}
	if budget <= 0 {
		budget = max(4*s.n, 1<<15)
	}
	defer func() {
		for _, v := range l.flags {
			l.flag[v] = 0
		}
		l.flags = l.flags[:0]
	}()
	var region []int32
	grow := func(from []int32) {
		frontier := slices.Clone(from)
		for _, v := range frontier {
			if l.flag[v]&inRegion == 0 {
				l.setFlag(v, inRegion)
				region = append(region, v)
			}
		}
		for range radius {
			var next []int32
			for _, v := range frontier {
				for a := s.astart[v]; a < s.astart[v+1]; a++ {
					if j := l.nbr[a]; !l.dead[j] && l.flag[j]&inRegion == 0 {
						l.setFlag(j, inRegion)
						region = append(region, j)
						next = append(next, j)
					}
				}
			}
			frontier = next
		}
		slices.Sort(region)
	}
	var seeds []int32
	for _, v := range changed {
		if !l.dead[v] {
			seeds = append(seeds, int32(v))
		}
	}
	if len(seeds) == 0 {
		return true
	}
	grow(seeds)
	var last []int32 // the region's labels at the last check (Stable)
	for used, same := 0, 0; ; {
		if ctx.Err() != nil {
			return false
		}
		for it := range every {
			l.passes(region, it == every-1)
			used += 2 * len(region)
		}
		l.Iterations += every
		ok, moved := l.check(region)
		if ok {
			return true
		}
		if len(moved) == 0 && l.Stable > 0 {
			if same = l.unchanged(region, last, same); same >= l.Stable {
				l.store(region)
				return true
			}
			last = l.regionLabels(region, last)
		} else {
			same, last = 0, last[:0]
		}
		grow(moved)
		if used > budget {
			return false
		}
	}
}

// passes is one TRW-S iteration over the region (ascending): the forward and
// backward passes of the whole problem's, skipping removed neighbours. With
// keepD, the backward pass leaves each region node's D in l.d, where check
// reads it: no message into a node changes after its backward update (the
// nodes after it in the backward pass send to earlier ones only).
func (l *Local) passes(region []int32, keepD bool) {
	s := l.s
	l.summed = false
	if s.tl2 {
		l.passesTruncLinear2(region, keepD)
		return
	}
	if p := s.stripedPotts(); p != nil && !l.killed {
		// A Potts grid's region, no node killed (its γ is the solver's, and no
		// neighbour is skipped): the whole problem's passes, run by run of
		// consecutive nodes — the same floats as below, several times faster
		// (a binary segmentation's settle 0.15 → ~0.03 s). They keep no D.
		l.runs(region, p.forwardNodes, p.backwardNodes)
		l.summed = true
		return
	}
	D, H := s.scratch[:s.mk], s.scratch[s.mk:2*s.mk]
	for _, i := range region {
		k := s.labels[i]
		d, h := D[:k], H[:k]
		s.sumInto(i, d)
		g := l.gamma[i]
		for a := s.astart[i] + s.nbwd[i]; a < s.astart[i+1]; a++ {
			if !l.dead[l.nbr[a]] {
				s.send(a, d, h, g, true)
			}
		}
	}
	for r := len(region) - 1; r >= 0; r-- {
		i := region[r]
		k := s.labels[i]
		d, h := l.d[s.uoff[i]:s.uoff[i+1]], H[:k]
		s.sumInto(i, d)
		g := l.gamma[i]
		for a := s.astart[i]; a < s.astart[i]+s.nbwd[i]; a++ {
			if !l.dead[l.nbr[a]] {
				s.send(a, d, h, g, false)
			}
		}
	}
}

// passesTruncLinear2 is passes for tl2 solvers (stereo): the region's runs of
// consecutive nodes go to the whole problem's assembly passes, with the Local's
// γ. The floats are passes' own: a killed neighbour's message into a node is
// zero, and adding it changes no sum; the passes also send to killed
// neighbours, messages into them that nothing reads (Restrict drops them).
// With keepD the backward pass leaves each node's D in l.d.
func (l *Local) passesTruncLinear2(region []int32, keepD bool) {
	s := l.s
	k := s.mk
	d, h := s.scratch[:k], s.scratch[k:2*k]
	pass := func(lo, hi int32, backward bool) {
		u := s.u32[k*int(lo) : k*int(hi)]
		if backward {
			dd, stride := d, 0
			if keepD { // every node has k labels: its D is at l.d[k·i:]
				dd, stride = l.d[k*int(lo):k*int(hi)], k
			}
			backwardTruncLinear2AVX2(int(hi-lo), k, u, s.msg, s.w, s.t, l.gamma[lo:hi], dd, h,
				s.astart[lo:hi+1], s.nbwd[lo:hi], s.aedge, s.ain, s.aout, stride)
			return
		}
		forwardTruncLinear2AVX2(int(hi-lo), k, u, s.msg, s.w, s.t, l.gamma[lo:hi], d, h,
			s.astart[lo:hi+1], s.nbwd[lo:hi], s.aedge, s.ain, s.aout)
	}
	l.runs(region, func(_ *Solver, lo, hi int32, _, _ []float32) float64 {
		pass(lo, hi, false)
		return 0
	}, func(_ *Solver, lo, hi int32, _, _ []float32) float64 {
		pass(lo, hi, true)
		return 0
	})
}

// runs is one iteration over the region (ascending) by runs of consecutive
// nodes: forward(lo, hi) over each run in order, then backward over each in
// reverse order.
func (l *Local) runs(region []int32, forward, backward func(s *Solver, lo, hi int32, d, h []float32) float64) {
	s := l.s
	d, h := s.scratch[:s.mk], s.scratch[s.mk:2*s.mk]
	for lo := 0; lo < len(region); {
		hi := consecutive(region, lo)
		forward(s, region[lo], region[hi-1]+1, d, h)
		lo = hi
	}
	for hi := len(region); hi > 0; {
		lo := consecutiveBefore(region, hi)
		backward(s, region[lo], region[hi-1]+1, d, h)
		hi = lo
	}
}

// consecutive returns the end of the run of consecutive nodes of region
// (ascending) that starts at position lo.
func consecutive(region []int32, lo int) int {
	hi := lo + 1
	for hi < len(region) && region[hi] == region[hi-1]+1 {
		hi++
	}
	return hi
}

// consecutiveBefore returns the start of the run of consecutive nodes of
// region (ascending) that ends before position hi.
func consecutiveBefore(region []int32, hi int) int {
	lo := hi - 1
	for lo > 0 && region[lo-1] == region[lo]-1 {
		lo--
	}
	return lo
}

// check computes the consistency labels (the package doc's definition, as the
// whole problem's check) of the zone — the region and its surviving neighbours,
// whose D the passes changed — and of the zone's neighbours, whose edges into
// the zone may have changed. It reports ok when every zone node is consistent
// and every node outside the region kept its label (then the labels are
// stored), else the nodes outside the region whose label changed.
func (l *Local) check(region []int32) (ok bool, moved []int32) {
	s := l.s
	zone, ring2 := l.zone[:0], l.ring2[:0] // reused: a settle checks hundreds of times
	for _, i := range region {
		l.setFlag(i, inZone)
		zone = append(zone, i)
	}
	for _, i := range region {
		for a := s.astart[i]; a < s.astart[i+1]; a++ {
			if j := l.nbr[a]; !l.dead[j] && l.flag[j]&inZone == 0 {
				l.setFlag(j, inZone)
				zone = append(zone, j)
			}
		}
	}
	for _, i := range zone[len(region):] {
		for a := s.astart[i]; a < s.astart[i+1]; a++ {
			if j := l.nbr[a]; !l.dead[j] && l.flag[j]&(inZone|inRing2) == 0 {
				l.setFlag(j, inRing2)
				ring2 = append(ring2, j)
			}
		}
	}
	defer func() {
		for _, v := range zone {
			l.flag[v] &^= inZone
		}
		for _, v := range ring2 {
			l.flag[v] &^= inRing2
		}
		l.zone, l.ring2 = zone[:0], ring2[:0]
	}()
	for n, list := range [][]int32{zone, ring2} {
		for m, i := range list {
			d := l.dOf(i)
			if n > 0 || m >= len(region) || l.summed { // a region node's D is the last backward pass's, if it kept it
				s.sumInto(i, d)
			}
			l.next[i] = uniqueArgmin(d)
			l.arg[i] = l.next[i]
		}
	}
	h, r := s.scratch[:s.mk], s.scratch[s.mk:2*s.mk]
	// Every edge with an end in the zone, tested once from its later end (head).
	test := func(e, i, j int32) { // e's head i, tail j
		if l.dead[i] || l.dead[j] {
			return
		}
		li, lj := l.arg[i], l.arg[j] // as the whole check: the argmins, not the labels left so far
		if li < 0 || lj < 0 {
			return
		}
		d := l.dOf(i)
		if !s.tight(e, d, li, lj, l.gamma[i], h[:len(d)], r[:len(d)]) {
			l.next[i], l.next[j] = -1, -1
		}
	}
	for _, i := range zone {
		back := s.astart[i] + s.nbwd[i] // i is the head of its first nbwd edges
		for a := s.astart[i]; a < s.astart[i+1]; a++ {
			if j := l.nbr[a]; a < back {
				test(s.aedge[a], i, j)
			} else if l.flag[j]&inZone == 0 {
				test(s.aedge[a], j, i)
			}
		}
	}
	ok = true
	for _, i := range region {
		ok = ok && l.next[i] >= 0
	}
	for _, list := range [][]int32{zone[len(region):], ring2} {
		for _, i := range list {
			if l.next[i] != l.cons[i] {
				moved = append(moved, i)
			}
		}
	}
	if !ok || len(moved) > 0 {
		return false, moved
	}
	l.store(zone)
	return true, nil
}

// store keeps the last check's labels of nodes as their consistency labels;
// the check computed them for the current messages as a whole check would.
func (l *Local) store(nodes []int32) {
	for _, i := range nodes {
		l.cons[i] = l.next[i]
	}
}

// regionLabels returns the last check's labels of the region, in buf.
func (l *Local) regionLabels(region, buf []int32) []int32 {
	buf = buf[:0]
	for _, i := range region {
		buf = append(buf, l.next[i])
	}
	return buf
}

// unchanged returns same+1 when the region's labels equal last (taken at the
// previous check of the same region), else 0.
func (l *Local) unchanged(region, last []int32, same int) int {
	if len(last) != len(region) {
		return 0
	}
	for r, i := range region {
		if l.next[i] != last[r] {
			return 0
		}
	}
	return same + 1
}
