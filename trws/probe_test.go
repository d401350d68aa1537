package trws

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkProbeKernels(b *testing.B) {
	for _, k := range [][2]int{{4, 4}, {4, 81}, {81, 4}, {6, 6}, {16, 16}, {81, 81}} {
		rng := rand.New(rand.NewPCG(1, 2))
		h, out, tab := make([]float32, k[0]), make([]float32, k[1]), make([]float32, k[0]*k[1])
		for i := range h {
			h[i] = float32(rng.NormFloat64())
		}
		for i := range tab {
			tab[i] = float32(rng.NormFloat64())
		}
		b.Run(fmt.Sprintf("tail/%v", k), func(b *testing.B) {
			for b.Loop() {
				minPlusFromTail(h, out, tab)
				normalize(out)
			}
		})
		b.Run(fmt.Sprintf("tailgo/%v", k), func(b *testing.B) {
			for b.Loop() {
				tableFromTailScalar(h, out, tab)
			}
		})
		b.Run(fmt.Sprintf("head/%v", k), func(b *testing.B) {
			for b.Loop() {
				minPlusFromHead(h, out, tab)
				normalize(out)
			}
		})
		b.Run(fmt.Sprintf("headgo/%v", k), func(b *testing.B) {
			for b.Loop() {
				tableFromHeadScalar(h, out, tab)
			}
		})
	}
}
