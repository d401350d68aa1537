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
func sumRowsAVX2(d, u, block []float32, rows int) float32

//go:noescape
func reparamAVX2(h, d, back []float32, gamma float32) float32

//go:noescape
func normalizeAVX2(out []float32) float32

//go:noescape
func scaleAVX2(dst, src []float32, w float32)

//go:noescape
func truncLinear2AVX2(h, out []float32, w, top float32)

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
	out = out[:k]
	out[0] = min(h[0], top, h[1]+w)
	out[k-1] = min(h[k-1], top, h[k-2]+w)
	truncLinear2AVX2(h, out, w, top)
	return normalizeAVX2(out)
}

// reparamVector is reparam in AVX2: h = g·d − back over d's labels.
func reparamVector(h, d, back []float32, g float32) float32 {
	k := len(d)
	return reparamAVX2(h[:k], d, back[:k], g) // the assembly writes h and reads back up to k
}

//go:noescape
func primalPotts8AVX2(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int

//go:noescape
func forwardPotts8AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)

//go:noescape
func backwardPotts8AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, argmin, cons []int32, tol float32, check bool) float64
