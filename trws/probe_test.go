package trws

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/partopt/partopt/model/random"
)

func TestProbeCheckParts(t *testing.T) {
	for _, k := range []int{2, 4, 8} {
		m := random.PottsDenoising(random.New(1), 1000, 1000, k, 1.2, 4, 2)
		s, _ := New(m)
		s.Solve(context.Background(), Options{MaxIterations: 20, GapTolerance: 0, CheckEvery: 1000})
		const reps = 10
		tm := func(name string, f func()) {
			f()
			st := time.Now()
			for range reps {
				f()
			}
			fmt.Printf("K=%d %-22s %6.2f ms\n", k, name, float64(time.Since(st).Microseconds())/1000/reps)
		}
		tm("forward", func() { s.forward() })
		tm("backward", func() { s.backward(false) })
		tm("backward+consist", func() { s.backward(true) })
		e := engine{s}
		tm("primal", func() { s.fused = true; e.Check() })
		tm("energy", func() { s.energy(s.primal) })
		tm("separate check", func() { s.check() })
	}
}
