//go:build !amd64 || purego

package trws

// vector is false where there is no assembly: the Go loops run.
const vector = false

func minPlusFromTail(h, out, tab []float32)                    { panic("trws: no vector loops") }
func minPlusFromHead(h, out, tab []float32)                    { panic("trws: no vector loops") }
func minPlus64FromTailAVX2(h, out, tab []float64, big float64) { panic("trws: no vector loops") }
func minPlus64FromHeadAVX2(h, out, tab []float64, big float64) { panic("trws: no vector loops") }
func extentAVX2(t []float64) (lo, hi float64)                  { panic("trws: no vector loops") }
func sumRows(d, u, block []float32) float32                    { panic("trws: no vector loops") }
func reparamVector(h, d, back []float32, g float32) float32    { panic("trws: no vector loops") }
func normalizeAVX2(out []float32) float32                      { panic("trws: no vector loops") }
func truncLinear2(h, out []float32, w, top float32) float32    { panic("trws: no vector loops") }
func scaleAVX2(dst, src []float32, w float32)                  { panic("trws: no vector loops") }

// assemblyPotts is empty where there is no assembly.
var assemblyPotts [0]pottsPasses

func truncLinear2SendAVX2(d, back, h, out []float32, gamma, w, t float32) float32 {
	panic("trws: no vector loops")
}

func checkTruncLinear2AVX2(lo, hi, k int, u, msg, w, t, gamma, d, p []float32, astart, nbwd, aedge, ain, tail, primal, argmin, cons []int32, tol float32) {
	panic("trws: no vector loops")
}

func forwardTruncLinear2AVX2(n, k int, u, msg, w, t, gamma, d, h []float32, astart, nbwd, aedge, ain, aout []int32) {
	panic("trws: no vector loops")
}

func backwardTruncLinear2AVX2(n, k int, u, msg, w, t, gamma, d, h []float32, astart, nbwd, aedge, ain, aout []int32, dstride int) float64 {
	panic("trws: no vector loops")
}

func minTwo16AVX2(d []float32) (l int32, best, next float32, ok bool) {
	panic("trws: no vector loops")
}

func tightMin16AVX2(d, fwd, r []float32, dmin, gamma float32) (best float32, ok bool) {
	panic("trws: no vector loops")
}
