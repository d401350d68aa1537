package partition_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// TestWindowedResultsArePersistent: rounds of windows with halos and several workers,
// on small grids: every proof re-checks (Check), and fixing the merged labels keeps
// the optimum (brute force).
func TestWindowedResultsArePersistent(t *testing.T) {
	proven, total := 0, 0
	for seed := uint64(0); seed < 80; seed++ {
		rng := random.New(seed)
		const w, h = 4, 4
		var m *model.Model
		if seed%2 == 0 {
			m = random.PottsGrid(rng, w, h, 2)
		} else {
			m = random.FrustratedGrid(rng, w, h)
		}
		_, opt, err := oracle.BruteForce(m, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		core, halo := 1+int(seed%3), int(seed%2)
		res, err := partition.Solve(context.Background(), m, partition.Options{
			Plan:      func(round int) partition.Plan { return partition.GridPlan(w, h, core, halo, round) },
			Workers:   1 + int(seed%3),
			MaxRounds: 3,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := partition.Check(m, res); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		c, err := m.Condition(res.Persistent)
		if err != nil {
			t.Fatal(err)
		}
		_, copt, err := oracle.BruteForce(c.Model, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(copt-opt) > 1e-6*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: optimum %v, with the windowed labels fixed %v", seed, opt, copt)
		}
		for _, l := range res.Persistent {
			if l >= 0 {
				proven++
			}
		}
		total += m.NumVars()
	}
	if proven == 0 || proven == total {
		t.Errorf("%d of %d variables proven: the test checks too little", proven, total)
	}
	t.Logf("%d of %d variables proven", proven, total)
}

// jittery delays every solve by a random time, so windows complete in shuffled order.
type jittery struct {
	persistency.TRWS
	mu  sync.Mutex
	rng *rand.Rand
}

func (j *jittery) Solve(ctx context.Context, p *model.Model, from *persistency.Warm) (*persistency.Outcome, error) {
	j.mu.Lock()
	d := time.Duration(j.rng.IntN(3000)) * time.Microsecond
	j.mu.Unlock()
	time.Sleep(d)
	return j.TRWS.Solve(ctx, p, from)
}

// TestMergeIsDeterministic: the same plan gives the same result for any worker count
// and completion order.
func TestMergeIsDeterministic(t *testing.T) {
	m := random.PottsDenoising(random.New(3), 40, 40, 4, 1.2, 4, 2)
	plan := func(round int) partition.Plan { return partition.GridPlan(40, 40, 12, 3, 5*round) }
	var first []int
	for i, workers := range []int{1, 4, 3, 8} {
		res, err := partition.Solve(context.Background(), m, partition.Options{
			Plan: plan, Workers: workers, MaxRounds: 2,
			Persistency: persistency.Options{Solver: &jittery{rng: random.New(uint64(i))}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res.Persistent
			continue
		}
		if !slices.Equal(first, res.Persistent) {
			t.Fatalf("workers %d: a different result", workers)
		}
	}
}

// TestPlansCoverTheModel: the cores of a plan partition the variables and every
// window's nodes contain its core.
func TestPlansCoverTheModel(t *testing.T) {
	check := func(name string, n int, p partition.Plan) {
		seen := make([]int, n)
		for _, w := range p.Windows {
			for _, v := range w.Core {
				seen[v]++
				if _, ok := slices.BinarySearch(w.Nodes, v); !ok {
					t.Fatalf("%s: core variable %d not among the window's nodes", name, v)
				}
			}
		}
		for v, c := range seen {
			if c != 1 {
				t.Fatalf("%s: variable %d in %d cores", name, v, c)
			}
		}
	}
	for shift := 0; shift < 5; shift++ {
		check("grid", 7*5, partition.GridPlan(7, 5, 3, 1, shift))
	}
	m := random.DensePairwise(random.New(1), 30, 3, 0.1)
	for shift := 0; shift < 3; shift++ {
		check("regions", m.NumVars(), partition.RegionPlan(m, 7, 2, shift))
	}
}

// TestWindowsOfATightModelAreSound documents a limit of windowing with this
// criterion: the 64×64 grid whose relaxation is tight and unique is 100% persistent
// solved whole (A* = V has no boundary), but a window faces boundary potentials that
// assume the worst of the outside, and erodes from its edge inwards (measured: to
// almost nothing). The windowed labels must still be sound and no more than the whole.
func TestWindowsOfATightModelAreSound(t *testing.T) {
	m := random.PottsDenoising(random.New(1), 64, 64, 8, 0.6, 4, 1.5)
	res, err := partition.Solve(context.Background(), m, partition.Options{
		Plan:    func(round int) partition.Plan { return partition.GridPlan(64, 64, 24, 4, 12*round) },
		Workers: 2, MaxRounds: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := partition.Check(m, res); err != nil {
		t.Fatal(err)
	}
	whole, err := persistency.Run(context.Background(), m, persistency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for v, l := range res.Persistent {
		if l >= 0 && l != whole.Persistent[v] {
			t.Fatalf("variable %d: window label %d, whole-model label %d", v, l, whole.Persistent[v])
		}
	}
	score, _ := persistency.Score(m, res.Persistent)
	t.Logf("windowed score %.4f after %d rounds, whole %.4f", score, res.Rounds, whole.Score)
}
