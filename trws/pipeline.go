package trws

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Two or more cores on one grid. On a 4-connected grid numbered row by row,
// the forward pass at node (r, c) needs only what (r, c−1) and (r−1, c) sent
// this pass (the messages from later nodes are the last backward pass's, and
// no node of this pass writes them). The columns are cut into strips, one a
// goroutine: a strip's row r waits only for the strip on its left to finish
// row r — one message crosses between cores a row, where rows side by side
// would move every vertical message between caches (measured 3× slower than
// one core) — and the backward pass likewise from the right. Every node does
// the same operations on the same floats as in one pass, so the messages are
// the same bit for bit on any number of cores. The bound is summed by blocks
// of columns (each block's nodes in the pass's order, then the blocks in the
// pass's order), on one core too, so that it does not depend on the cores
// either. The stereo passes (tl2) and their check, the two-label passes
// (table2), the Potts passes of the iterations without a check (in assembly)
// and every certificate's polish run this way: their kernels keep no state
// between nodes but the scratch D and h, one pair a goroutine.

// pipeBlock is the most columns of a block; pipeMin the nodes below which a
// grid's passes stay whole (the waits are not worth it: a 96×96 stereo grid's
// 48-column strips make its solve 1.28× faster on two cores, 2% slower on one).
const (
	pipeBlock = 64
	pipeMin   = 1 << 12
)

// blocksOf is how many blocks a row of w columns is cut into: at most pipeBlock columns
// each, an even number (but one) so that two strips get the same columns
// within one (tsukuba's 266: 44 or 45 columns a block, not 64, 64 | 64, 64,
// 10, whose second strip was 8% longer); block j is columns [j·w/n, (j+1)·w/n).
func blocksOf(w int) int {
	n := (w + pipeBlock - 1) / pipeBlock
	if n > 1 && n%2 == 1 {
		n++
	}
	return n
}

// setupPipeline finds whether the passes can run in strips side by side: the nodes
// are a W×H grid numbered row by row (every edge joins i and i+1 in one row,
// or i and i+W), large enough, with stereo, two-label or Potts passes.
func (s *Solver) setupPipeline() {
	s.rowWidth = 0
	if p := s.unrolled(); s.n < pipeMin || !(s.tl2 || s.table2 || p != nil && p.forwardNodes != nil) {
		return
	}
	s.rowWidth = s.grid
}

// layoutStrips is how many strips layoutOrder lays a grid out for: a Solve's on
// every core (tests set others).
var layoutStrips = func() int { return runtime.GOMAXPROCS(0) }

// layoutOrder is the order of the nodes whose incoming messages finishGraph
// lays out one after the other, and the strips it is laid out for: on a grid
// of more than one block a row, strip by strip (each strip's nodes row by row)
// for the strips of a Solve on every core, so that side by side they write
// stretches of memory of their own; nil and 0, the nodes' order, elsewhere. Row by row, each strip's row ended where the
// next strip's began, and a core's hardware prefetcher read ahead into the
// lines the other core was about to write: a 96×96 stereo grid's passes took
// 25 ms on two cores, 20.5 laid out by strips (37 on one core either way).
// Strips rather than blocks: tsukuba's six blocks made six streams, 9% slower.
func (s *Solver) layoutOrder() (order []int32, strips int) {
	w := s.grid
	blocks := blocksOf(w)
	strips = min(layoutStrips(), blocks)
	if w == 0 || strips < 2 {
		return nil, 0
	}
	rows := s.n / w
	order = make([]int32, 0, s.n)
	for t := range strips {
		b0, b1 := stripBlocks(t, strips, blocks)
		c0, c1 := b0*w/blocks, b1*w/blocks
		for r := range rows {
			for v := r*w + c0; v < r*w+c1; v++ {
				order = append(order, int32(v))
			}
		}
	}
	return order, strips
}

// stripBlocks are the blocks [b0, b1) of strip t of strips, counted from the
// left.
func stripBlocks(t, strips, blocks int) (b0, b1 int) {
	return t * blocks / strips, (t + 1) * blocks / strips
}

// gridWidth is W where the nodes are a W×H grid numbered row by row (every
// edge joins i and i+1 in one row, or i and i+W), else 0.
func (s *Solver) gridWidth() int {
	// The longest edge, then every edge against it, by ranges of edges on
	// every core.
	k := parts(len(s.tail))
	widths := make([]int32, k)
	spreadParts(len(s.tail), k, func(p, lo, hi int) {
		for e := lo; e < hi; e++ {
			widths[p] = max(widths[p], s.head[e]-s.tail[e])
		}
	})
	w := slices.Max(append(widths, 0))
	if w < 2 || int32(s.n)%w != 0 || int32(s.n)/w < 2 {
		return 0
	}
	grid := make([]bool, k)
	spreadParts(len(s.tail), k, func(p, lo, hi int) {
		for e := lo; e < hi; e++ {
			switch t, d := s.tail[e], s.head[e]-s.tail[e]; {
			case d == w:
			case d == 1 && t/w == s.head[e]/w:
			default:
				return
			}
		}
		grid[p] = true
	})
	if slices.Contains(grid, false) {
		return 0
	}
	return int(w)
}

// strips is how many strips pipelined cuts the grid into: one a goroutine,
// each of whole blocks.
func (s *Solver) strips() int {
	return min(max(s.threads, 1), blocksOf(s.rowWidth))
}

// pipelined runs pass over the grid's blocks — pass(t, lo, hi) does nodes
// [lo, hi) in the pass's order on strip t, the t-th from the left (its
// goroutine's, whose scratch it may use), and returns their part of the bound
// — forward (rows top down, blocks left to right) or backward, on s.strips()
// goroutines, and returns the blocks' bound summed in the pass's order. On
// one strip that is the nodes' order, forward or backward.
func (s *Solver) pipelined(backward bool, pass func(t int, lo, hi int32) float64) float64 {
	w := s.rowWidth
	rows, blocks := s.n/w, blocksOf(w)
	if len(s.partial) != rows*blocks {
		s.partial = make([]float64, rows*blocks)
	}
	strips := s.strips()
	done := make([]rowCounter, strips)
	for t := range done {
		done[t].wake = make(chan struct{}, 1)
	}
	strip := func(g int) {
		// Goroutine g takes the g-th strip from the left in either pass, t-th in
		// the pass's order: its nodes stay in its core's cache between passes
		// (swapping sides moved them all, 30% slower passes on a 96×96 grid).
		t := g
		if backward {
			t = strips - 1 - g
		}
		b0, b1 := stripBlocks(t, strips, blocks)
		for i := range rows {
			if t > 0 {
				done[t-1].await(int32(i + 1))
			}
			r := i
			if backward {
				r = rows - 1 - i
			}
			for b := b0; b < b1; b++ {
				j := b
				if backward {
					j = blocks - 1 - b
				}
				lo, hi := int32(r*w+j*w/blocks), int32(r*w+(j+1)*w/blocks)
				s.partial[b*rows+i] = pass(g, lo, hi) // by block: no line written by two strips
			}
			done[t].finish(int32(i + 1))
		}
	}
	if c := s.crew; c != nil && len(c.start) == strips-1 {
		c.run(strip)
	} else {
		var wg sync.WaitGroup
		for t := 1; t < strips; t++ {
			wg.Go(func() { strip(t) })
		}
		strip(0)
		wg.Wait()
	}
	lb := 0.0
	for i := range rows {
		for b := range blocks {
			lb += s.partial[b*rows+i]
		}
	}
	return lb
}

// pipelinedPass is pipelined over a pass with scratch d, h of the solver's
// (one pair a strip).
func (s *Solver) pipelinedPass(backward bool, pass func(lo, hi int32, d, h []float32) float64) float64 {
	k, strips := s.mk, s.strips()
	if len(s.pipeScratch) < 2*k*(strips-1) {
		s.pipeScratch = make([]float32, 2*k*(strips-1))
	}
	return s.pipelined(backward, func(t int, lo, hi int32) float64 {
		if t == 0 {
			return pass(lo, hi, s.scratch[:k], s.scratch[k:2*k])
		}
		d := s.pipeScratch[2*k*(t-1) : 2*k*t]
		return pass(lo, hi, d[:k], d[k:])
	})
}

// A crew runs strips 1, 2, … of every pass of a Solve on goroutines that live
// as long as the Solve, waiting between passes as a strip waits for a row
// (rowCounter: a short spin, then asleep): a goroutine started a pass and
// woken from sleep cost several percent of a stereo pass, whose rows take
// microseconds. Pass g starts when start[w] reaches g and is done when
// every end[w] has; the job is written before the start and read after it.
type crew struct {
	start, end []rowCounter
	gen        int32
	job        func(t int)
	quit       atomic.Bool
}

// newCrew starts the goroutines of n strips.
func newCrew(n int) *crew {
	c := &crew{start: make([]rowCounter, n), end: make([]rowCounter, n)}
	for w := range n {
		c.start[w].wake, c.end[w].wake = make(chan struct{}, 1), make(chan struct{}, 1)
		go c.work(w)
	}
	return c
}

// work is worker w's loop: strip w+1 of each pass.
func (c *crew) work(w int) {
	for g := int32(1); ; g++ {
		c.start[w].awaitFor(g, passSpin)
		if c.quit.Load() {
			return
		}
		c.job(w + 1)
		c.end[w].finish(g)
	}
}

// run runs job(t) for every strip, strip 0 on the calling goroutine, and
// returns when all are done.
func (c *crew) run(job func(t int)) {
	c.job = job
	c.gen++
	for w := range c.start {
		c.start[w].finish(c.gen)
	}
	job(0)
	for w := range c.end {
		c.end[w].await(c.gen)
	}
}

// stop ends the crew's goroutines.
func (c *crew) stop() {
	c.quit.Store(true)
	c.gen++
	for w := range c.start {
		c.start[w].finish(c.gen)
	}
}

// rowCounter counts the rows a strip has finished, padded against false
// sharing between the strips' counters. Its neighbour waits for a row by
// spinning a little (the usual lag is a fraction of a row), then by sleeping
// on wake: a spinning wait whose partner's thread the OS has descheduled
// (another job on the machine) would hold the core the partner needs.
type rowCounter struct {
	rows    atomic.Int32
	waiting atomic.Bool
	wake    chan struct{}
	_       [48]byte
}

// awaitSpin is how long a strip spins for a row before it sleeps: most waits
// are a fraction of a strip's row (tsukuba's is ~15 µs), and a sleep's wake-up
// costs about as much as a row. passSpin is a crew worker's between passes,
// longer than the serial work of a check (a 96×96 stereo grid's energy and
// bookkeeping, ~150 µs): woken from sleep, the pass after each check took
// 140 µs more (a quarter of the two cores' gain there).
const (
	awaitSpin = 50 * time.Microsecond
	passSpin  = 400 * time.Microsecond
)

// await returns once the strip has finished n rows.
func (c *rowCounter) await(n int32) { c.awaitFor(n, awaitSpin) }

// awaitFor returns once the strip has finished n rows, spinning up to spin
// before it sleeps.
func (c *rowCounter) awaitFor(n int32, spin time.Duration) {
	var start time.Time
	for i := 0; c.rows.Load() < n; i++ {
		switch {
		case i < 64:
			continue
		case i%16 == 0 && start.IsZero():
			start = time.Now()
		case i%16 == 0 && time.Since(start) > spin:
			c.sleep(n)
			return
		}
		runtime.Gosched()
	}
}

// sleep returns once the strip has finished n rows, sleeping until then.
func (c *rowCounter) sleep(n int32) {
	for {
		// Say so before the last look: finish stores the count before it reads
		// waiting, so either this look sees the row or finish sees the flag.
		c.waiting.Store(true)
		if c.rows.Load() >= n {
			c.waiting.Store(false)
			return
		}
		<-c.wake // a stale token only makes it look again
	}
}

// finish records that the strip has finished n rows and wakes its waiting
// neighbour, if any.
func (c *rowCounter) finish(n int32) {
	c.rows.Store(n)
	if c.waiting.Load() && c.waiting.CompareAndSwap(true, false) {
		select {
		case c.wake <- struct{}{}:
		default: // a token is there already: it wakes the neighbour
		}
	}
}
