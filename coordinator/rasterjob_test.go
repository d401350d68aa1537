package coordinator_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// TestRasterEliminationJobEqualsEliminateRaster: a raster iri job's state
// machine (NewRasterEliminationJob), its results stored in a shuffled order,
// some twice, merged by a RasterMerger as its merges come, leaves
// partition.EliminateRaster's planes and labeling with the same plans, in as
// many rounds, windows and levels.
func TestRasterEliminationJobEqualsEliminateRaster(t *testing.T) {
	const w, h, k, core, halo = 16, 12, 4, 5, 1
	m := random.PottsDenoising(random.New(5), w, h, k, 0.6, 4, 1.5)
	r, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(round, level int) []partition.RasterWindow {
		size, shift := core<<level, round*(core<<level)/2
		if size >= max(w, h) {
			shift = 0
		}
		return partition.RasterWindows(w, h, size, halo<<level, shift)
	}
	maxLevel := 0
	for core<<maxLevel < max(w, h) {
		maxLevel++
	}
	spec := protocol.JobSpec{Job: "j", Method: protocol.MethodIRI, Width: w, Height: h, Labels: k, Core: core, Halo: halo, MaxRounds: 8, Variant: protocol.VariantInvariant}
	solver := spec.Persistency().Solver
	stores := func() (partition.AliveLabels, partition.AliveLabels, *partition.MemStore) {
		alive := partition.NewMemAlive(w, h, k)
		if _, err := partition.InitAlive(alive, w, h, nil); err != nil {
			t.Fatal(err)
		}
		return alive, partition.NewMemAlive(w, h, k), partition.NewMemStore(w, h)
	}
	wantAlive, prior, wantLab := stores()
	want, err := partition.EliminateRaster(context.Background(), r, wantAlive, prior, wantLab, nil,
		partition.RasterEliminateOptions{Plan: plan, MaxLevel: maxLevel, Solver: solver, Workers: 2, MaxRounds: spec.MaxRounds})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(3) {
		alive, prior, lab := stores()
		g, err := partition.NewRasterMerger(w, h, alive, prior, lab)
		if err != nil {
			t.Fatal(err)
		}
		rng := random.New(seed)
		job, actions := coordinator.NewRasterEliminationJob(spec, g.Persistent(), maxLevel, plan)
		type result struct {
			work partition.RasterWork
			e    *partition.RasterElimination
		}
		results := map[coordinator.WindowID]result{}
		var pending []coordinator.Event
		finished := false
		for !finished {
			for len(actions) > 0 {
				a := actions[0]
				actions = actions[1:]
				switch a := a.(type) {
				case coordinator.PrepareRound:
					if err := g.StartRound(a.Round); err != nil {
						t.Fatal(err)
					}
					pending = append(pending, coordinator.RoundPrepared{Round: a.Round})
				case coordinator.Dispatch:
					for _, i := range a.Windows {
						id := coordinator.WindowID{Round: a.Round, Window: i}
						work, err := g.Window(job.Windows[i])
						if err != nil {
							t.Fatal(err)
						}
						res := result{work: work}
						if len(work.Nodes) > 0 {
							if res.e, err = partition.EliminateRasterWindow(context.Background(), r, work, solver); err != nil {
								t.Fatal(err)
							}
						}
						results[id] = res
						pending = append(pending, coordinator.ResultStored(id))
						if rng.IntN(4) == 0 {
							pending = append(pending, coordinator.ResultStored(id))
						}
					}
				case coordinator.Merge:
					res := results[a.WindowID]
					before := g.Persistent()
					eliminated, err := g.Merge(res.work, res.e)
					if err != nil {
						t.Fatal(err)
					}
					actions = append(actions, job.Apply(coordinator.MergeDone{WindowID: a.WindowID, Added: g.Persistent() - before, Eliminated: eliminated})...)
				case coordinator.Finish:
					if _, err := g.Finish(nil); err != nil {
						t.Fatal(err)
					}
					finished = true
				}
			}
			if finished {
				break
			}
			if len(pending) == 0 {
				t.Fatalf("the job waits for nothing: %+v", job.Status())
			}
			i := rng.IntN(len(pending))
			ev := pending[i]
			pending = append(pending[:i], pending[i+1:]...)
			actions = job.Apply(ev)
		}
		for p := range alive.Planes {
			if !reflect.DeepEqual(alive.Planes[p].(*partition.MemStore).Values, wantAlive.Planes[p].(*partition.MemStore).Values) {
				t.Fatalf("seed %d: alive plane %d differs from partition.EliminateRaster's", seed, p)
			}
		}
		if !reflect.DeepEqual(lab.Values, wantLab.Values) || job.Rounds != want.Rounds || job.WindowsTotal != want.Windows || job.Level != want.Level || job.Proven != want.Persistent {
			t.Fatalf("seed %d: labeling, rounds %d, windows %d, level %d, proven %d; partition.EliminateRaster's %d, %d, %d, %d",
				seed, job.Rounds, job.WindowsTotal, job.Level, job.Proven, want.Rounds, want.Windows, want.Level, want.Persistent)
		}
	}
	if want.Rounds < 2 || want.Level == 0 {
		t.Fatalf("partition.EliminateRaster ran %d rounds to level %d: the test checks too little", want.Rounds, want.Level)
	}
	t.Logf("%d rounds, %d windows, level %d, %d persistent", want.Rounds, want.Windows, want.Level, want.Persistent)
}
