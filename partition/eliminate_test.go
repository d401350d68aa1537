package partition_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
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
		var plan func(round, level int) partition.Plan
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
			plan = func(round, level int) partition.Plan { return partition.GridPlan(4, 3, core<<level, halo, round) }
		} else {
			plan = func(round, level int) partition.Plan {
				return partition.RegionPlan(m, (core+1)<<level, halo, round*(core+1)/2)
			}
		}
		_, opt, err := oracle.BruteForce(m, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		res, err := partition.Eliminate(context.Background(), m, partition.EliminateOptions{Plan: plan, Workers: 1 + int(seed%3), MaxRounds: 4, MaxLevel: int(seed % 3)})
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

// TestStalledRoundsGrowTheWindows: a round that eliminates nothing or little raises
// the level the plan is asked for by one, never beyond MaxLevel; windows grown to
// the whole grid then decide what windows of one pixel could not — on Potts grids,
// whose relaxation is tight at these sizes, as much as one window over the model.
func TestStalledRoundsGrowTheWindows(t *testing.T) {
	grew := 0
	for seed := uint64(0); seed < 40; seed++ {
		m := random.PottsGrid(random.New(300+seed), 4, 4, 3)
		var levels []int
		plan := func(round, level int) partition.Plan {
			levels = append(levels, level)
			if level == 2 {
				return partition.GridPlan(4, 4, 4, 0, 0) // one window: the grid
			}
			return partition.GridPlan(4, 4, 1<<level, 0, round)
		}
		res, err := partition.Eliminate(context.Background(), m, partition.EliminateOptions{Plan: plan, MaxRounds: 12, MaxLevel: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := partition.CheckElimination(m, res); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i := 1; i < len(levels); i++ {
			if d := levels[i] - levels[i-1]; d < 0 || d > 1 || levels[i] > 2 {
				t.Fatalf("seed %d: levels %v", seed, levels)
			}
		}
		if res.Level != levels[len(levels)-1] {
			t.Fatalf("seed %d: result level %d, last plan's %d", seed, res.Level, levels[len(levels)-1])
		}
		if res.Level > 0 {
			grew++
		}
		whole, err := persistency.Eliminate(context.Background(), m, persistency.EliminateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := persistency.Count(res.Persistent), persistency.Count(whole.Persistent); res.Level == 2 && got < want {
			t.Errorf("seed %d: windows grown to the grid prove %d persistent, the whole model %d", seed, got, want)
		}
	}
	if grew == 0 {
		t.Fatal("no run raised the level: the test exercises nothing")
	}
}

// TestGrowsAfterARoundThatEliminatedLittle: the level rises after a round that
// eliminated nothing, or less than 1/16 of what the rounds before it eliminated.
func TestGrowsAfterARoundThatEliminatedLittle(t *testing.T) {
	for _, tc := range []struct {
		round, before int64
		want          bool
	}{
		{0, 0, true}, {0, 100, true}, {1, 0, false}, {50, 0, false},
		{6, 100, true}, {7, 100, false}, {100, 100, false}, {1, 1000, true},
	} {
		if got := partition.Grows(tc.round, tc.before); got != tc.want {
			t.Errorf("Grows(%d, %d) = %v, want %v", tc.round, tc.before, got, tc.want)
		}
	}
}

// TestCheckWindowRefusesMovesBeyondTheNodes: a window's model lacks the factors
// between its outer variables and the rest of the model, so an elimination
// computed as if every variable of the extent were a node can carry a genuine
// certificate on that model and still be unsound for the whole model.
// CheckWindow accepts the elimination of the window's own nodes and refuses one
// that moves an outer variable's labels.
func TestCheckWindowRefusesMovesBeyondTheNodes(t *testing.T) {
	refused := 0
	for seed := uint64(0); seed < 40 && refused < 5; seed++ {
		m := random.PottsDenoising(random.New(seed), 6, 5, 3, 0.9, 4, 1.3)
		g := partition.NewMerger(m)
		g.StartRound(0)
		w := g.Window(partition.GridPlan(6, 5, 3, 0, 0).Windows[0])
		honest, err := partition.EliminateWindow(context.Background(), m, w, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := partition.CheckWindow(m, w, honest); err != nil {
			t.Fatalf("seed %d: the window's own elimination: %v", seed, err)
		}
		all := w
		all.Nodes = w.Vars
		lie, err := partition.EliminateWindow(context.Background(), m, all, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := partition.CheckWindow(m, all, lie); err != nil {
			t.Fatalf("seed %d: the certificate does not hold on the window's model: %v", seed, err)
		}
		moved := false
		for i, v := range w.Vars {
			if !slices.Contains(w.Nodes, v) && len(lie.Alive[i]) < len(w.Domains[i]) {
				moved = true
			}
		}
		err = partition.CheckWindow(m, w, lie)
		switch {
		case moved && (err == nil || !strings.Contains(err.Error(), "outside the window's nodes")):
			t.Fatalf("seed %d: an elimination beyond the nodes: %v", seed, err)
		case moved:
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no elimination moved an outer variable: the test checks nothing")
	}
}

// TestEliminationFromAlgorithm1: pbp+iri by windows — Algorithm 1's windows,
// then label elimination from the domains their persistent labels leave —
// keeps every label Algorithm 1 proved, its proofs re-check from those domains
// (and not from others), and the minimum over the alive labels is the optimum
// (brute force).
func TestEliminationFromAlgorithm1(t *testing.T) {
	gained := 0
	for seed := uint64(0); seed < 60; seed++ {
		rng := random.New(seed)
		var m *model.Model
		if seed%2 == 0 {
			m = random.FrustratedGrid(rng, 4, 3)
		} else {
			m = random.PottsGrid(rng, 4, 3, 3)
		}
		core := 1 + int(seed%3)
		pbp, err := partition.Solve(context.Background(), m, partition.Options{
			Plan:        func(round int) partition.Plan { return partition.GridPlan(4, 3, core, 1, round) },
			Persistency: persistency.Options{}, MaxRounds: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		domains := (&persistency.Result{Persistent: pbp.Persistent}).Domains(m)
		res, err := partition.Eliminate(context.Background(), m, partition.EliminateOptions{
			Plan: func(round, level int) partition.Plan { return partition.GridPlan(4, 3, core<<level, 1, round) }, MaxRounds: 3, MaxLevel: 2, Domains: domains,
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := partition.CheckElimination(m, res); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for v, l := range pbp.Persistent {
			if l >= 0 && res.Persistent[v] != l {
				t.Fatalf("seed %d: variable %d: Algorithm 1 proved %d, the elimination left %v", seed, v, l, res.Alive[v])
			}
		}
		gained += persistency.Count(res.Persistent) - persistency.Count(pbp.Persistent)
		_, opt, err := oracle.BruteForce(m, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		restricted, err := m.Restrict(res.Alive)
		if err != nil {
			t.Fatal(err)
		}
		if _, ropt, err := oracle.BruteForce(restricted, 1<<22); err != nil || math.Abs(ropt-opt) > 1e-6*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: optimum %v, over the alive labels %v (%v)", seed, opt, ropt, err)
		}
		if domains != nil { // the composition starts from the recorded domains, not from every label
			forged := *res
			forged.Initial = nil
			if err := partition.CheckElimination(m, &forged); err == nil {
				t.Errorf("seed %d: the proofs check without the domains they started from", seed)
			}
		}
	}
	t.Logf("%d variables proven beyond Algorithm 1", gained)
}
