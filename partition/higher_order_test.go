package partition_test

import (
	"context"
	"math"
	"testing"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
)

// TestRegionWindowsOfHigherOrderModelsArePersistent: graph-region windows (non-grid
// plans) on 120 random models with factors up to order 4, solved by the default
// relaxation (SRMP for the higher-order windows), rounds and several workers: every
// proof re-checks (Check), and fixing the merged labels keeps the optimum (brute
// force). Some but not all variables must be proven.
func TestRegionWindowsOfHigherOrderModelsArePersistent(t *testing.T) {
	proven, total := 0, 0
	for seed := uint64(0); seed < 120; seed++ {
		rng := random.New(seed)
		m := random.HigherOrder(rng, 8+rng.IntN(6), 3, 4, 10+rng.IntN(10))
		_, opt, err := oracle.BruteForce(m, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		size, halo := 2+int(seed%4), int(seed%2)
		res, err := partition.Solve(context.Background(), m, partition.Options{
			Plan:      func(round int) partition.Plan { return partition.RegionPlan(m, size, halo, round*size/2) },
			Workers:   1 + int(seed%2),
			MaxRounds: 3,
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := partition.Check(m, res); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		c, err := m.Condition(res.Persistent)
		if err != nil {
			t.Fatal(err)
		}
		_, copt, err := oracle.BruteForce(c.Model, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		if !(copt == opt || math.Abs(copt-opt) <= 1e-6*math.Max(1, math.Abs(opt))) {
			t.Errorf("seed %d: optimum %v, with the windowed labels fixed %v", seed, opt, copt)
		}
		for _, l := range res.Persistent {
			if l >= 0 {
				proven++
			}
		}
		total += m.NumVars()
	}
	t.Logf("%d of %d variables proven", proven, total)
	if proven < total/10 || proven == total {
		t.Errorf("%d of %d variables proven: the test checks too little", proven, total)
	}
}
