//go:build !amd64 || purego

package trws

// vector is false where there is no assembly: the Go loops run.
const vector = false

func minPlusFromTail(h, out, tab []float32)                 { panic("trws: no vector loops") }
func minPlusFromHead(h, out, tab []float32)                 { panic("trws: no vector loops") }
func sumRows(d, u, block []float32) float32                 { panic("trws: no vector loops") }
func reparamVector(h, d, back []float32, g float32) float32 { panic("trws: no vector loops") }
func normalizeAVX2(out []float32) float32                   { panic("trws: no vector loops") }
func truncLinear2(h, out []float32, w, top float32) float32 { panic("trws: no vector loops") }
func scaleAVX2(dst, src []float32, w float32)               { panic("trws: no vector loops") }

func primalPotts8AVX2(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int {
	panic("trws: no vector loops")
}

func forwardPotts8AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32) {
	panic("trws: no vector loops")
}

func backwardPotts8AVX2(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, argmin, cons []int32, tol float32, check bool) float64 {
	panic("trws: no vector loops")
}
