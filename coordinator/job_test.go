package coordinator_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// cluster is a fake of everything around a Job: workers that solve windows (in a
// shuffled order, sometimes twice, sometimes never), a result store, and the label
// stores the merges write. It records every event it delivers.
type cluster struct {
	t          *testing.T
	rng        *rand.Rand
	raster     partition.Raster
	graph      *model.Model // a graph job's model, whose stores are n×1
	persistent *partition.MemStore
	labeling   *partition.MemStore
	fixed      *partition.MemStore
	results    map[coordinator.WindowID]*partition.WindowResult
	pending    []coordinator.Event // events not yet delivered, delivered in random order
	log        []coordinator.Event
	lose       func(coordinator.WindowID) bool
	merges     []coordinator.WindowID
	finished   bool
}

func newCluster(t *testing.T, seed uint64, w, h int) *cluster {
	m := random.PottsDenoising(random.New(seed), w, h, 3, 0.9, 4, 1.3)
	r, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, rng: random.New(seed + 100), raster: r,
		persistent: partition.NewMemStore(w, h), labeling: partition.NewMemStore(w, h), fixed: partition.NewMemStore(w, h),
		results: map[coordinator.WindowID]*partition.WindowResult{}, lose: func(coordinator.WindowID) bool { return false }}
}

// perform carries out an action; answers become pending events.
func (c *cluster) perform(j *coordinator.Job, a coordinator.Action) {
	t := c.t
	switch a := a.(type) {
	case coordinator.PrepareRound:
		if _, err := partition.CopyStore(c.fixed, c.persistent, c.raster.Width, c.raster.Height); err != nil {
			t.Fatal(err)
		}
		c.pending = append(c.pending, coordinator.RoundPrepared{Round: a.Round})
	case coordinator.Dispatch:
		for _, i := range a.Windows {
			id := coordinator.WindowID{Round: a.Round, Window: i}
			if c.lose(id) {
				c.pending = append(c.pending, coordinator.DeliveriesExhausted(id))
				continue
			}
			var res *partition.WindowResult
			var err error
			if c.graph != nil {
				nodes := j.Regions[i].Nodes
				vals := make([]int32, len(partition.WindowExtent(c.graph, nodes)))
				if err := partition.ReadVars(c.fixed, partition.WindowExtent(c.graph, nodes), vals); err != nil {
					t.Fatal(err)
				}
				res, err = partition.SolveGraphWindow(context.Background(), c.graph, nodes, vals, j.Spec.Persistency())
			} else {
				res, err = partition.SolveWindow(context.Background(), c.raster, j.Windows[i], c.fixed, j.Spec.Persistency())
			}
			if err != nil {
				t.Fatal(err)
			}
			c.results[id] = res
			c.pending = append(c.pending, coordinator.ResultStored(id))
			if c.rng.IntN(4) == 0 { // a redelivery: the same result again
				c.pending = append(c.pending, coordinator.ResultStored(id))
			}
		}
	case coordinator.Merge:
		c.merges = append(c.merges, a.WindowID)
		var added int64
		if !a.Empty {
			var err error
			if c.graph != nil {
				added, err = partition.MergeGraphWindow(j.Regions[a.Window], c.results[a.WindowID], c.persistent, c.labeling)
			} else {
				added, err = partition.MergeWindow(j.Windows[a.Window], c.results[a.WindowID], c.persistent, c.labeling)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		// Merge completions are reported in order, as the adapter performs them.
		c.log = append(c.log, coordinator.MergeDone{WindowID: a.WindowID, Added: added})
		c.apply(j, coordinator.MergeDone{WindowID: a.WindowID, Added: added})
		return
	case coordinator.Finish:
		if err := partition.OverrideLabels(c.labeling, c.persistent, c.raster.Width, c.raster.Height); err != nil {
			t.Fatal(err)
		}
		c.finished = true
		c.pending = append(c.pending, coordinator.OutputsWritten{})
	}
}

func (c *cluster) apply(j *coordinator.Job, ev coordinator.Event) {
	for _, a := range j.Apply(ev) {
		c.perform(j, a)
	}
}

// run drives the job until no event is pending, delivering pending events in a
// random order (late and repeated ones included).
func (c *cluster) run(j *coordinator.Job, actions []coordinator.Action) {
	for _, a := range actions {
		c.perform(j, a)
	}
	for len(c.pending) > 0 {
		i := c.rng.IntN(len(c.pending))
		ev := c.pending[i]
		c.pending = slices.Delete(c.pending, i, i+1)
		c.log = append(c.log, ev)
		c.apply(j, ev)
	}
}

func spec(w, h, core, halo, rounds int) protocol.JobSpec {
	return protocol.JobSpec{Job: "j1", Width: w, Height: h, Labels: 3, Core: core, Halo: halo, MaxRounds: rounds, Variant: protocol.VariantInvariant}
}

// TestJobMergesInPlanOrderWhateverTheArrivalOrder: results arriving shuffled and
// duplicated give merges in plan order, each window once per round, and the label
// stores of partition.SolveRaster with the same options.
func TestJobMergesInPlanOrderWhateverTheArrivalOrder(t *testing.T) {
	const w, h = 36, 30
	for seed := uint64(1); seed <= 4; seed++ {
		c := newCluster(t, seed, w, h)
		sp := spec(w, h, 10, 2, 3)
		job, actions := coordinator.NewJob(sp, 0)
		c.run(job, actions)
		if job.Phase != coordinator.Done || !c.finished {
			t.Fatalf("seed %d: phase %v, finished %v", seed, job.Phase, c.finished)
		}
		// Merges: per round, windows 0, 1, 2, … exactly once.
		round, next := 0, 0
		for _, m := range c.merges {
			if m.Round != round {
				if next != len(partition.RasterWindows(w, h, 10, 2, round*5)) || m.Round != round+1 {
					t.Fatalf("seed %d: round %d ended after %d merges", seed, round, next)
				}
				round, next = m.Round, 0
			}
			if m.Window != next {
				t.Fatalf("seed %d: merge %v, want window %d", seed, m, next)
			}
			next++
		}
		ref := partition.NewMemStore(w, h)
		refLab := partition.NewMemStore(w, h)
		res, err := partition.SolveRaster(context.Background(), c.raster, ref, refLab, partition.NewMemStore(w, h),
			partition.RasterOptions{Core: 10, Halo: 2, MaxRounds: 3, Persistency: sp.Persistency()})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ref.Values, c.persistent.Values) || !slices.Equal(refLab.Values, c.labeling.Values) {
			t.Fatalf("seed %d: the job's labels differ from SolveRaster's", seed)
		}
		if job.Proven != res.Persistent || job.Rounds != res.Rounds {
			t.Errorf("seed %d: proven %d in %d rounds, SolveRaster %d in %d", seed, job.Proven, job.Rounds, res.Persistent, res.Rounds)
		}
		if job.Duplicates == 0 {
			t.Errorf("seed %d: no duplicate was delivered: the test checks too little", seed)
		}
		// Replaying the event log into a new job gives the same state.
		again, _ := coordinator.NewJob(sp, 0)
		for _, ev := range c.log {
			again.Apply(ev)
		}
		if !reflect.DeepEqual(again, job) {
			t.Errorf("seed %d: replaying the events gives another state", seed)
		}
	}
}

// TestJobLostWindowsAreReportedAndMergedEmpty: a window whose task exhausted its
// deliveries is listed in the status and merged as proving nothing; the job finishes
// and every label it reports is one SolveWindow proved.
func TestJobLostWindowsAreReportedAndMergedEmpty(t *testing.T) {
	const w, h = 30, 24
	c := newCluster(t, 5, w, h)
	c.lose = func(id coordinator.WindowID) bool { return id.Round == 0 && (id.Window == 0 || id.Window == 4) }
	job, actions := coordinator.NewJob(spec(w, h, 10, 2, 1), 0)
	c.run(job, actions)
	st := job.Status()
	if job.Phase != coordinator.Done || st.Lost != 2 || !slices.Equal(job.Lost, []coordinator.WindowID{{0, 0}, {0, 4}}) && !slices.Equal(job.Lost, []coordinator.WindowID{{0, 4}, {0, 0}}) {
		t.Fatalf("phase %v, lost %v", job.Phase, job.Lost)
	}
	core := job.Windows[0].Core
	for y := core.Y0; y < core.Y0+core.H; y++ {
		for x := core.X0; x < core.X0+core.W; x++ {
			if covered := job.Windows[1].Nodes; x >= covered.X0 || y >= job.Windows[3].Nodes.Y0 {
				continue // a neighbour's halo may prove it
			}
			if c.persistent.Values[y*w+x] != 0 {
				t.Fatalf("pixel (%d,%d) of a lost window's core is proven", x, y)
			}
		}
	}
}

// TestJobIgnoresLateAndForeignEvents: events of another round, unknown windows and
// out-of-order merge completions change nothing; a cancelled job ignores everything.
func TestJobIgnoresLateAndForeignEvents(t *testing.T) {
	job, actions := coordinator.NewJob(spec(20, 20, 10, 0, 2), 0)
	if len(actions) != 1 || actions[0] != (coordinator.PrepareRound{Round: 0}) {
		t.Fatalf("first actions %v", actions)
	}
	if a := job.Apply(coordinator.ResultStored{Round: 0, Window: 1}); len(a) != 0 {
		t.Errorf("a result before the round was dispatched: %v", a)
	}
	d := job.Apply(coordinator.RoundPrepared{Round: 0})
	if len(d) != 1 || !slices.Equal(d[0].(coordinator.Dispatch).Windows, []int{0, 1, 2, 3}) {
		t.Fatalf("dispatch %v", d)
	}
	if a := job.Apply(coordinator.RoundPrepared{Round: 0}); len(a) != 0 {
		t.Errorf("a second RoundPrepared dispatched again: %v", a)
	}
	for _, ev := range []coordinator.Event{
		coordinator.ResultStored{Round: 1, Window: 0}, coordinator.ResultStored{Round: 0, Window: 9},
		coordinator.ResultStored{Round: 0, Window: -1}, coordinator.MergeDone{WindowID: coordinator.WindowID{Round: 0, Window: 0}},
		coordinator.OutputsWritten{},
	} {
		if a := job.Apply(ev); len(a) != 0 {
			t.Errorf("%#v: actions %v", ev, a)
		}
	}
	if a := job.Apply(coordinator.ResultStored{Round: 0, Window: 1}); len(a) != 0 {
		t.Errorf("window 1 merged before window 0: %v", a)
	}
	a := job.Apply(coordinator.ResultStored{Round: 0, Window: 0})
	if len(a) != 2 || a[0] != (coordinator.Merge{WindowID: coordinator.WindowID{Round: 0, Window: 0}}) || a[1] != (coordinator.Merge{WindowID: coordinator.WindowID{Round: 0, Window: 1}}) {
		t.Fatalf("merges %v", a)
	}
	if a := job.Apply(coordinator.MergeDone{WindowID: coordinator.WindowID{Round: 0, Window: 1}}); len(a) != 0 || job.Next != 0 {
		t.Errorf("merge 1 completed before merge 0 moved the cursor to %d", job.Next)
	}
	if a := job.Apply(coordinator.Cancel{Reason: "user"}); len(a) != 1 || a[0] != (coordinator.Purge{}) || job.Phase != coordinator.Canceled {
		t.Fatalf("cancel: %v, phase %v", a, job.Phase)
	}
	if a := job.Apply(coordinator.MergeDone{WindowID: coordinator.WindowID{Round: 0, Window: 0}}); len(a) != 0 || job.Next != 0 {
		t.Error("a cancelled job still merges")
	}
	if st := job.Status(); st.Phase != "canceled" || st.Err != "user" || st.Windows != 4 {
		t.Errorf("status %+v", st)
	}
}

// TestGraphJobEqualsSolve: a graph job (regions of a model of any structure, here
// pairwise and higher order), its results arriving shuffled, duplicated and
// in any order, gives exactly partition.Solve's labels with the same plans.
func TestGraphJobEqualsSolve(t *testing.T) {
	for _, tc := range []struct {
		name       string
		m          *model.Model
		size, halo int
	}{
		{"pairwise", random.DensePairwise(random.New(1), 30, 4, 0.15), 6, 1},
		{"higher order", random.HigherOrder(random.New(3), 18, 3, 3, 40), 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.m.NumVars()
			sp := protocol.JobSpec{Job: "g", Layout: protocol.LayoutGraph, Width: n, Height: 1, Labels: 4,
				Core: tc.size, Halo: tc.halo, MaxRounds: 3, Variant: protocol.VariantInvariant}
			plan := func(round int) partition.Plan {
				return partition.RegionPlan(tc.m, tc.size, tc.halo, partition.RegionShift(round, tc.size))
			}
			want, err := partition.Solve(context.Background(), tc.m, partition.Options{Plan: plan, Persistency: sp.Persistency(), MaxRounds: 3})
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(1); seed <= 3; seed++ {
				c := &cluster{t: t, rng: random.New(seed), graph: tc.m,
					persistent: partition.NewMemStore(n, 1), labeling: partition.NewMemStore(n, 1), fixed: partition.NewMemStore(n, 1),
					raster:  partition.Raster{Width: n, Height: 1},
					results: map[coordinator.WindowID]*partition.WindowResult{}, lose: func(coordinator.WindowID) bool { return false }}
				job, actions := coordinator.NewGraphJob(sp, 0, plan)
				c.run(job, actions)
				if job.Phase != coordinator.Done || job.Rounds != want.Rounds {
					t.Fatalf("seed %d: phase %v after %d rounds, Solve took %d", seed, job.Phase, job.Rounds, want.Rounds)
				}
				for v := range n {
					if int(c.persistent.Values[v])-1 != want.Persistent[v] || int(c.labeling.Values[v]) != want.Labeling[v] {
						t.Fatalf("seed %d: variable %d: persistent %d labeling %d, Solve's %d and %d",
							seed, v, c.persistent.Values[v]-1, c.labeling.Values[v], want.Persistent[v], want.Labeling[v])
					}
				}
				if job.Status().Windows != len(plan(job.Round).Windows) {
					t.Errorf("status counts %d windows, the plan %d", job.Status().Windows, len(plan(job.Round).Windows))
				}
			}
		})
	}
}

// TestJobRequeueWithdrawsTheLaterMerges: a stored result found unusable at its
// merge puts its window back to waiting; the merges issued after it are
// withdrawn and come again, in plan order, once the window is stored anew.
// Requeue of any other window (not the next to merge, or not merging) changes
// nothing.
func TestJobRequeueWithdrawsTheLaterMerges(t *testing.T) {
	job, actions := coordinator.NewJob(spec(30, 24, 10, 2, 1), 0)
	if _, ok := actions[0].(coordinator.PrepareRound); !ok {
		t.Fatalf("first actions %v", actions)
	}
	job.Apply(coordinator.RoundPrepared{Round: 0})
	var merges []coordinator.Action
	for _, i := range []int{2, 1, 0} {
		merges = append(merges, job.Apply(coordinator.ResultStored{Round: 0, Window: i})...)
	}
	want := []coordinator.Action{coordinator.Merge{WindowID: coordinator.WindowID{Window: 0}}, coordinator.Merge{WindowID: coordinator.WindowID{Window: 1}},
		coordinator.Merge{WindowID: coordinator.WindowID{Window: 2}}}
	if !reflect.DeepEqual(merges, want) {
		t.Fatalf("merges %v, want 0, 1, 2", merges)
	}
	for _, id := range []coordinator.WindowID{{Window: 1}, {Window: 5}, {Round: 1}} {
		if a := job.Apply(coordinator.Requeue(id)); a != nil || job.State[1] != coordinator.Merging {
			t.Fatalf("requeue of %v: %v, states %v", id, a, job.State[:3])
		}
	}
	job.Apply(coordinator.Requeue{Window: 0})
	if got := job.State[:3]; !slices.Equal(got, []coordinator.WindowState{coordinator.Queued, coordinator.Stored, coordinator.Stored}) {
		t.Fatalf("states after the requeue %v, want queued, stored, stored", got)
	}
	if a := job.Apply(coordinator.MergeDone{WindowID: coordinator.WindowID{Window: 1}}); a != nil || job.Next != 0 {
		t.Fatalf("a withdrawn merge completed: %v, next %d", a, job.Next)
	}
	if got := job.Apply(coordinator.ResultStored{Round: 0, Window: 0}); !reflect.DeepEqual(got, want) {
		t.Fatalf("merges after the new result %v, want 0, 1, 2 again", got)
	}
}
