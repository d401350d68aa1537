package partition_test

import (
	"context"
	"math"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
)

// TestWindowedEliminationKeepsTheOptimum: label elimination by windows — grid
// tiles of 4×3 Potts (3 labels) and frustrated grids, and graph regions of models
// with factors up to order 4 — with rounds and several workers: every window's
// proof re-checks (CheckElimination), the merged domains are the composition of
// the windows' maps, and the minimum over the alive labels is the optimum (brute
// force). Labels must be eliminated on a good share of the models, not all.
func TestWindowedEliminationKeepsTheOptimum(t *testing.T) {
	eliminated, labels := 0, 0
	for seed := uint64(0); seed < 160; seed++ {
		rng := random.New(seed)
		var m *model.Model
		var plan func(round int) partition.Plan
		core, halo := 1+int(seed%3), int(seed%2)
		switch seed % 4 {
		case 0:
			m = random.PottsGrid(rng, 4, 3, 3)
		case 1:
			m = random.FrustratedGrid(rng, 4, 3)
		default:
			m = random.HigherOrder(rng, 8+rng.IntN(5), 3, 4, 10+rng.IntN(8))
		}
		if seed%4 < 2 {
			plan = func(round int) partition.Plan { return partition.GridPlan(4, 3, core, halo, round) }
		} else {
			plan = func(round int) partition.Plan { return partition.RegionPlan(m, core+1, halo, round*(core+1)/2) }
		}
		_, opt, err := oracle.BruteForce(m, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		res, err := partition.Eliminate(context.Background(), m, partition.EliminateOptions{Plan: plan, Workers: 1 + int(seed%3), MaxRounds: 3})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := partition.CheckElimination(m, res); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		restricted, err := m.Restrict(res.Alive)
		if err != nil {
			t.Fatal(err)
		}
		_, ropt, err := oracle.BruteForce(restricted, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		if !(ropt == opt || math.Abs(ropt-opt) <= 1e-6*math.Max(1, math.Abs(opt))) {
			t.Errorf("seed %d: optimum %v, over the alive labels %v", seed, opt, ropt)
		}
		if e := m.Energy(res.Labeling); math.IsNaN(e) || restricted.Energy(res.Labeling) != e {
			t.Errorf("seed %d: the labeling takes an eliminated label", seed)
		}
		for v, ls := range res.Alive {
			labels += m.NumLabels(v) - 1
			eliminated += m.NumLabels(v) - len(ls)
		}
	}
	t.Logf("%d of %d labels eliminated", eliminated, labels)
	if eliminated < labels/10 || eliminated == labels {
		t.Errorf("%d of %d labels eliminated: the test checks too little", eliminated, labels)
	}
}
