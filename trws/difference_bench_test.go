package trws

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/partopt/partopt/model"
)

// BenchmarkDifferenceMessage: one message of a verification term of truncated
// linear stereo (T = 2) by the Difference kernel and by its expanded table, for
// the label counts of segmentation and stereo models (half the labels movable).
func BenchmarkDifferenceMessage(b *testing.B) {
	for _, k := range []int{4, 8, 16, 32, 64} {
		rng := rand.New(rand.NewPCG(1, uint64(k)))
		x, y := randomLabelMap(rng, k, k), randomLabelMap(rng, k, k)
		fn := &model.Function{Kind: model.Difference, Base: model.TruncatedLinear, Shape: []int{k, k}, W: 1, T: 2, Args: [2]*model.LabelMap{x, y}}
		s := edgeSolver(b, fn, []int{k, k}, [2]int{0, 1}, nil)
		tab := make([]float32, k*k)
		for a := range k {
			for c := range k {
				tab[a*k+c] = float32(fn.Pairwise(a, c))
			}
		}
		h, out := make([]float32, k), make([]float32, k)
		for i := range h {
			h[i] = float32(rng.NormFloat64())
		}
		b.Run(fmt.Sprintf("difference/K=%d", k), func(b *testing.B) {
			for b.Loop() {
				s.differenceMessage(0, h, out, true)
			}
		})
		b.Run(fmt.Sprintf("table/K=%d", k), func(b *testing.B) {
			for b.Loop() {
				tableMessageFromTail(h, out, tab)
			}
		})
	}
}
