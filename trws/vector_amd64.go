//go:build !purego

package trws

import "golang.org/x/sys/cpu"

// vector says whether the loops of vector_amd64.s run: AVX2, eight labels an
// instruction where Go's compiler emits one. They compute exactly what the Go
// loops compute, bit for bit: a minimum does not depend on the order it is taken
// in, and every sum adds its terms in the Go loop's order, without fused
// multiply-adds (TestVectorLoopsEqualTheGoLoops, TestTableKernelsEqualTheDoubleLoop).
var vector = cpu.X86.HasAVX2

//go:noescape
func minPlusFromTailAVX2(h, out, tab []float32)

//go:noescape
func minPlusFromHeadAVX2(h, out, tab []float32)

//go:noescape
func minPlus64FromTailAVX2(h, out, tab []float64, big float64)

//go:noescape
func minPlus64FromHeadAVX2(h, out, tab []float64, big float64)

//go:noescape
func extentAVX2(t []float64) (lo, hi float64)

//go:noescape
func sumRowsAVX2(d, u, block []float32, rows int) float32

//go:noescape
func reparamAVX2(h, d, back []float32, gamma float32) float32

//go:noescape
func normalizeAVX2(out []float32) float32

//go:noescape
func scaleAVX2(dst, src []float32, w float32)

//go:noescape
func truncLinear2AVX2(h, out []float32, w, top float32) float32

//go:noescape
func truncLinear2SendAVX2(d, back, h, out []float32, gamma, w, t float32) float32

//go:noescape
func forwardTruncLinear2AVX2(n, k int, u, msg, w, t, gamma, d, h []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func backwardTruncLinear2AVX2(n, k int, u, msg, w, t, gamma, d, h []float32, astart, nbwd, aedge, ain, aout []int32, dstride int) float64

// minPlusFromTail sets out(y) = min_x h(x) + tab[x·len(out) + y].
func minPlusFromTail(h, out, tab []float32) {
	_ = tab[len(h)*len(out)-1] // the assembly reads len(h)·len(out) entries
	minPlusFromTailAVX2(h, out, tab)
}

// minPlusFromHead sets out(x) = min_y h(y) + tab[x·len(h) + y].
func minPlusFromHead(h, out, tab []float32) {
	_ = tab[len(h)*len(out)-1]
	minPlusFromHeadAVX2(h, out, tab)
}

// sumRows sets d(x) = u(x) + Σ_r block[r·len(d) + x] and returns min d.
func sumRows(d, u, block []float32) float32 {
	_ = u[len(d)-1]
	return sumRowsAVX2(d, u, block, len(block)/len(d))
}

// truncLinear2 is truncLinearNear's case 1 < T ≤ 2 for len(h) ≥ 10 labels.
func truncLinear2(h, out []float32, w, top float32) float32 {
	k := len(h)
	if k < 10 { // the assembly's last eight labels would start before h and out
		panic("trws: truncLinear2 needs at least 10 labels")
	}
	return truncLinear2AVX2(h, out[:k], w, top)
}

// reparamVector is reparam in AVX2: h = g·d − back over d's labels.
func reparamVector(h, d, back []float32, g float32) float32 {
	k := len(d)
	return reparamAVX2(h[:k], d, back[:k], g) // the assembly writes h and reads back up to k
}

// assemblyPotts are the uniform Potts passes and rounding of potts_amd64.s by
// label count, for unrolled() where the CPU has AVX2: K = 2, 4, 8, and K = 3,
// 5, 6, 7 where it has AVX-512 (VL: masked loads and stores on YMM registers).
var assemblyPotts = func() (t [9]pottsPasses) {
	t[2] = assemblyPasses(2, forwardPotts2AVX2, backwardPotts2AVX2, primalPotts2AVX2, forwardRoundPotts2AVX2)
	t[4] = assemblyPasses(4, forwardPotts4AVX2, backwardPotts4AVX2, primalPotts4AVX2, forwardRoundPotts4AVX2)
	t[8] = assemblyPasses(8, forwardPotts8AVX2, backwardPotts8AVX2, primalPotts8AVX2, forwardRoundPotts8AVX2)
	if masked {
		t[3] = assemblyPasses(3, forwardPotts3AVX512, backwardPotts3AVX512, primalPotts3AVX512, forwardRoundPotts3AVX512)
		t[5] = assemblyPasses(5, forwardPotts5AVX512, backwardPotts5AVX512, primalPotts5AVX512, forwardRoundPotts5AVX512)
		t[6] = assemblyPasses(6, forwardPotts6AVX512, backwardPotts6AVX512, primalPotts6AVX512, forwardRoundPotts6AVX512)
		t[7] = assemblyPasses(7, forwardPotts7AVX512, backwardPotts7AVX512, primalPotts7AVX512, forwardRoundPotts7AVX512)
	}
	return t
}()

// masked says whether the Potts passes for K = 3, 5, 6, 7 run in assembly:
// they load and store a node's k floats under an opmask (AVX-512F and VL).
var masked = vector && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

type (
	forwardAVX2      func(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)
	forwardRoundAVX2 func(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)
	backwardAVX2     func(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64
	primalAVX2       func(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int
)

// assemblyPasses wraps the assembly for k labels: the slices it reads are
// checked once here (the rest are the solver's own, consistent by
// construction), and a node the rounding cannot label (a NaN) is rounded by
// primalNode.
func assemblyPasses(k int, fwd forwardAVX2, bwd backwardAVX2, primal primalAVX2, fwdRound forwardRoundAVX2) pottsPasses {
	round := func(s *Solver, from int) { // the rounding from node from on
		n := s.n
		_ = s.u32[k*n-1]
		p, r := s.scratch[2*k:3*k], s.scratch[3*k:4*k]
		for i := from; i < n; i++ {
			if i = primal(i, n, s.u32, s.w, s.msg, s.astart[:n+1], s.nbwd[:n], s.aedge, s.ain, s.tail, s.primal[:n]); i < n {
				s.primalNode(int32(i), p, r)
			}
		}
	}
	return pottsPasses{
		forward: func(s *Solver) {
			n := s.n
			_ = s.u32[k*n-1]
			fwd(n, s.u32, s.w, s.msg, s.gamma[:n], s.astart[:n+1], s.nbwd[:n], s.aedge, s.ain, s.aout)
		},
		backward: func(s *Solver, check bool) float64 {
			n := s.n
			_ = s.u32[k*n-1]
			return bwd(n, s.u32, s.w, s.msg, s.gamma[:n], s.astart[:n+1], s.nbwd[:n], s.aedge, s.ain, s.aout, s.head, s.argmin[:n], s.consLabel[:n], ConsistencyTolerance, check) + s.offset
		},
		edges:  nil, // tested in the backward pass
		primal: func(s *Solver) { round(s, 0) },
		forwardNodes: func(s *Solver, lo, hi int32, _, _ []float32) float64 {
			_ = s.u32[k*int(hi)-1]
			fwd(int(hi-lo), s.u32[k*int(lo):], s.w, s.msg, s.gamma[lo:hi], s.astart[lo:hi+1], s.nbwd[lo:hi], s.aedge, s.ain, s.aout)
			return 0
		},
		backwardNodes: func(s *Solver, lo, hi int32, _, _ []float32) float64 {
			_ = s.u32[k*int(hi)-1]
			return bwd(int(hi-lo), s.u32[k*int(lo):], s.w, s.msg, s.gamma[lo:hi], s.astart[lo:hi+1], s.nbwd[lo:hi], s.aedge, s.ain, s.aout, s.head, s.argmin[lo:hi], s.consLabel[lo:hi], ConsistencyTolerance, false)
		},
		forwardRound: func(s *Solver) {
			n := s.n
			_ = s.u32[k*n-1]
			if failed := fwdRound(n, s.u32, s.w, s.msg, s.gamma[:n], s.astart[:n+1], s.nbwd[:n], s.aedge, s.ain, s.aout, s.tail, s.primal[:n]); failed < n {
				// A NaN at node failed: the messages the rounding reads are as
				// they were (the pass writes only into later nodes), so round
				// from there again.
				round(s, failed)
			}
		},
	}
}

//go:noescape
func forwardPotts2AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func backwardPotts2AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64

//go:noescape
func primalPotts2AVX2(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func forwardPotts4AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func backwardPotts4AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64

//go:noescape
func primalPotts4AVX2(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func forwardPotts8AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func backwardPotts8AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64

//go:noescape
func primalPotts8AVX2(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func checkTruncLinear2AVX2(lo, hi, k int, u, msg, w, t, gamma, d, p []float32, astart, nbwd, aedge, ain, tail, primal, argmin, cons []int32, tol float32)

//go:noescape
func forwardRoundPotts2AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)

//go:noescape
func forwardRoundPotts4AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)

//go:noescape
func forwardRoundPotts8AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)

//go:noescape
func forwardPotts3AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func forwardRoundPotts3AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)

//go:noescape
func backwardPotts3AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64

//go:noescape
func primalPotts3AVX512(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func forwardPotts5AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func forwardRoundPotts5AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)

//go:noescape
func backwardPotts5AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64

//go:noescape
func primalPotts5AVX512(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func forwardPotts6AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func forwardRoundPotts6AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)

//go:noescape
func backwardPotts6AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64

//go:noescape
func primalPotts6AVX512(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func forwardPotts7AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func forwardRoundPotts7AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)

//go:noescape
func backwardPotts7AVX512(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64

//go:noescape
func primalPotts7AVX512(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func minTwo16AVX2(d []float32) (l int32, best, next float32, ok bool)

//go:noescape
func tightMin16AVX2(d, fwd, r []float32, dmin, gamma float32) (best float32, ok bool)
