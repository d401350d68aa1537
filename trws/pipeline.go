package trws

import (
	"runtime"
	"sync"
	"sync/atomic"
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
// either. The stereo passes (tl2) and the two-label passes (table2) run this
// way: their kernels keep no state between nodes but the scratch D and h, one
// pair a goroutine.

// pipeBlock is the columns of a block; pipeMin the nodes below which a grid's
// passes stay whole (the goroutines' start and the waits are not worth it).
const (
	pipeBlock = 64
	pipeMin   = 1 << 14
)

// setupPipeline finds whether the passes can run in strips side by side: the nodes
// are a W×H grid numbered row by row (every edge joins i and i+1 in one row,
// or i and i+W), large enough, with stereo or two-label passes.
func (s *Solver) setupPipeline() {
	s.rowWidth = 0
	if s.n < pipeMin || !(s.tl2 || s.table2) {
		return
	}
	w := int32(0)
	for e := range s.tail {
		w = max(w, s.head[e]-s.tail[e])
	}
	if w < 2 || int32(s.n)%w != 0 || int32(s.n)/w < 2 {
		return
	}
	for e, t := range s.tail {
		switch d := s.head[e] - t; {
		case d == w:
		case d == 1 && t/w == s.head[e]/w:
		default:
			return
		}
	}
	s.rowWidth = int(w)
}

// pipelined runs pass over the grid's blocks — pass(lo, hi, d, h) does nodes
// [lo, hi) in the pass's order with scratch d, h and returns their part of
// the bound — forward (rows top down, blocks left to right) or backward, on
// s.threads goroutines, each a strip of whole blocks, and returns the blocks'
// bound summed in the pass's order.
func (s *Solver) pipelined(backward bool, pass func(lo, hi int32, d, h []float32) float64) float64 {
	w := s.rowWidth
	rows, blocks := s.n/w, (w+pipeBlock-1)/pipeBlock
	if len(s.partial) != rows*blocks {
		s.partial = make([]float64, rows*blocks)
	}
	strips := min(max(s.threads, 1), blocks)
	// done[t] counts the rows strip t has finished, padded against false
	// sharing between the goroutines' counters.
	type counter struct {
		rows atomic.Int32
		_    [60]byte
	}
	done := make([]counter, strips)
	k := s.mk
	strip := func(t int, d, h []float32) { // strip t in the pass's order
		b0, b1 := t*blocks/strips, (t+1)*blocks/strips
		for i := range rows {
			if t > 0 {
				for spins := 0; done[t-1].rows.Load() <= int32(i); spins++ {
					if spins > 64 {
						runtime.Gosched()
					}
				}
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
				lo, hi := int32(r*w+j*pipeBlock), int32(r*w+min((j+1)*pipeBlock, w))
				s.partial[i*blocks+b] = pass(lo, hi, d, h)
			}
			done[t].rows.Store(int32(i + 1))
		}
	}
	if len(s.pipeScratch) < 2*k*(strips-1) {
		s.pipeScratch = make([]float32, 2*k*(strips-1))
	}
	var wg sync.WaitGroup
	for t := 1; t < strips; t++ {
		d, h := s.pipeScratch[2*k*(t-1):2*k*(t-1)+k], s.pipeScratch[2*k*(t-1)+k:2*k*t]
		wg.Go(func() { strip(t, d, h) })
	}
	strip(0, s.scratch[:k], s.scratch[k:2*k])
	wg.Wait()
	lb := 0.0
	for _, p := range s.partial {
		lb += p
	}
	return lb
}
