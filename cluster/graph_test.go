package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// newGraphEnv is an embedded server and a graph job (BFS regions of size variables
// plus halo graph steps) on m, which is not a raster.
func newGraphEnv(t *testing.T, job string, m *model.Model, size, halo int, maxPayload int32) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), maxPayload: maxPayload, cfg: testConfig(), log: &testutil.SyncBuffer{}, graph: m}
	e.startServer()
	t.Cleanup(func() { e.srv.Close() })
	k := 1
	for v := range m.NumVars() {
		k = max(k, m.NumLabels(v))
	}
	e.spec = protocol.JobSpec{Job: job, Model: protocol.ModelRef{Path: "/nowhere/model.uai"}, Layout: protocol.LayoutGraph,
		Width: m.NumVars(), Height: 1, Labels: k, Core: size, Halo: halo, MaxRounds: 3, Variant: protocol.VariantInvariant}
	return e
}

// graphLocal is partition.Solve with the job's region plans: what every
// distributed run of a graph job must give.
func (e *env) graphLocal() *partition.Result {
	e.t.Helper()
	s := e.spec
	res, err := partition.Solve(context.Background(), e.graph, partition.Options{
		Plan: func(round int) partition.Plan {
			return partition.RegionPlan(e.graph, s.Core, s.Halo, partition.RegionShift(round, s.Core))
		},
		Persistency: s.Persistency(), Workers: 2, MaxRounds: s.MaxRounds,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// sameAsSolve fails unless the stores of a graph job hold partition.Solve's
// persistent labels and labeling.
func (e *env) sameAsSolve(pers, lab *partition.MemStore) *partition.Result {
	e.t.Helper()
	want := e.graphLocal()
	gotP, gotL := make([]int, len(pers.Values)), make([]int, len(lab.Values))
	for v := range gotP {
		gotP[v], gotL[v] = int(pers.Values[v])-1, int(lab.Values[v])
	}
	if !slices.Equal(gotP, want.Persistent) || !slices.Equal(gotL, want.Labeling) {
		e.t.Fatalf("distributed labels differ from partition.Solve\npersistent %v\nSolve's    %v\nlabeling %v\nSolve's  %v\nlog:\n%s",
			gotP, want.Persistent, gotL, want.Labeling, e.log.String())
	}
	return want
}

// TestGraphJobEqualsSolve: a general model — pairwise, and higher order (solved
// by the relaxation persistency.Auto picks for it) — distributed over one or two
// workers, gives exactly partition.Solve's persistent labels and labeling with the
// same region plans, in as many rounds and windows.
func TestGraphJobEqualsSolve(t *testing.T) {
	cases := []struct {
		name       string
		m          *model.Model
		size, halo int
	}{
		{"pairwise", random.DensePairwise(random.New(11), 60, 4, 0.08), 8, 1},
		{"higher order", random.HigherOrder(random.New(3), 18, 3, 3, 40), 4, 1},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d workers", c.name, workers), func(t *testing.T) {
				e := newGraphEnv(t, fmt.Sprintf("graph-%d", workers), c.m, c.size, c.halo, 4<<20)
				for i := range workers {
					e.startWorker(fmt.Sprintf("w%d", i), 1, nil)
				}
				pers, lab, sum := e.mustRun()
				want := e.sameAsSolve(pers, lab)
				proven := 0
				for _, l := range want.Persistent {
					if l >= 0 {
						proven++
					}
				}
				if sum.Phase != "done" || sum.Rounds != want.Rounds || sum.WindowsTotal != want.Windows || sum.Lost != 0 || sum.Proven != int64(proven) {
					t.Fatalf("summary %+v; Solve: %d rounds, %d windows, %d proven", sum, want.Rounds, want.Windows, proven)
				}
				if proven == 0 || want.Rounds < 2 {
					t.Errorf("%d proven in %d rounds: the test checks too little", proven, want.Rounds)
				}
				if workers == 2 && len(sum.Workers) < 2 {
					t.Errorf("results came from %d workers, want 2: %v", len(sum.Workers), sum.Workers)
				}
			})
		}
	}
}

// TestGraphJobThroughTheObjectStore: with a server whose message limit is smaller
// than a window's node list and fixed labels, both travel through the object
// store; the labels are the same and no object is left behind.
func TestGraphJobThroughTheObjectStore(t *testing.T) {
	// 2 KiB messages: windows of 200 variables and their extents (2 bytes a
	// node) exceed half of it.
	m := random.DensePairwise(random.New(12), 1200, 3, 0.0015)
	e := newGraphEnv(t, "graph-large", m, 200, 2, 2<<10)
	e.cacheBytes = 1 // and read back from the stream at merge time
	res, closeConn := e.connect("watcher")
	defer closeConn()
	var nodeObjects, fixedObjects atomic.Int64
	sub, err := res.Conn.Subscribe("partopt.task.>", func(m *nats.Msg) {
		if task, err := protocol.Decode[protocol.WindowTask](m.Data, protocol.MaxMessageBytes); err == nil && task.Graph != nil {
			if task.Graph.Nodes.Data.Object != "" {
				nodeObjects.Add(1)
			}
			if f := task.Graph.Fixed; f != nil && f.Data.Object != "" {
				fixedObjects.Add(1)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	e.startWorker("w", 2, nil)
	pers, lab, _ := e.mustRun()
	sub.Unsubscribe()
	e.sameAsSolve(pers, lab)
	if nodeObjects.Load() == 0 || fixedObjects.Load() == 0 {
		t.Fatalf("%d node lists and %d fixed labels went through the object store, want some of both", nodeObjects.Load(), fixedObjects.Load())
	}
	if infos, err := res.Objects.List(context.Background()); err == nil {
		for _, o := range infos {
			t.Errorf("object %s left after the job", o.Name)
		}
	}
}

// TestGraphJobResumes: a graph job's coordinator stopped in its second round and
// started again resumes from the results JetStream kept (merged again, not solved
// again) and ends with partition.Solve's labels.
func TestGraphJobResumes(t *testing.T) {
	e := newGraphEnv(t, "graph-resume", random.DensePairwise(random.New(11), 60, 4, 0.08), 8, 1, 4<<20)
	e.cfg.Memory = false // the streams on disk, as in production
	e.startWorker("w", 2, func(protocol.WindowTask) { time.Sleep(20 * time.Millisecond) })
	solved := e.interruptInRound1()
	pers, lab, sum := e.mustResume()
	e.sameAsSolve(pers, lab)
	if sum.Phase != "done" || sum.Lost != 0 || sum.Reused == 0 || sum.Reused > solved {
		t.Fatalf("summary %+v: want done, nothing lost, some of the %d windows solved before reused", sum, solved)
	}
}

// TestBadGraphTasksAreReported: graph tasks whose node list is out of range,
// unsorted or longer than the model fail on every delivery and are reported as
// permanent errors that say why (the coordinator then lists the window as lost);
// the worker goes on serving.
func TestBadGraphTasksAreReported(t *testing.T) {
	m := random.DensePairwise(random.New(13), 20, 3, 0.2)
	e := newGraphEnv(t, "graph-bad", m, 5, 1, 4<<20)
	res, closeConn := e.connect("attacker")
	defer closeConn()
	ctx := context.Background()
	if err := res.PutJobSpec(ctx, e.spec); err != nil {
		t.Fatal(err)
	}
	errs := make(chan protocol.Error, 16)
	sub, err := res.Conn.Subscribe(res.Names.ErrorSubject(e.spec.Job), func(msg *nats.Msg) {
		if v, err := protocol.Decode[protocol.Error](msg.Data, protocol.MaxMessageBytes); err == nil {
			errs <- v
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	long := make([]int32, m.NumVars()+1)
	for i := range long {
		long[i] = int32(i)
	}
	want := map[int]string{
		0: "node 20 (at 2) outside the model's 20 variables",
		1: "not strictly ascending: 3 after 7",
		2: "21 nodes in a model of 20 variables",
	}
	for i, nodes := range [][]int32{{1, 2, 20}, {1, 7, 3}, long} {
		task := protocol.WindowTask{Job: e.spec.Job, Round: 0, Window: i,
			Graph: &protocol.GraphWindow{Nodes: protocol.NewValues(protocol.EncodeLabels(nodes, 1<<10), "unused", protocol.InlineLimit)}}
		data, err := protocol.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := res.JS.Publish(ctx, res.Names.TaskSubject(e.spec.Job), data); err != nil {
			t.Fatal(err)
		}
	}
	w := e.startWorker("w", 2, nil)
	deadline := time.After(time.Minute)
	for len(want) > 0 {
		select {
		case got := <-errs:
			if !got.Permanent || !strings.Contains(got.Message, want[got.Window]) {
				t.Errorf("window %d: error %+v, want a permanent one saying %q", got.Window, got, want[got.Window])
			}
			delete(want, got.Window)
		case <-deadline:
			t.Fatalf("no error reported for windows %v\nlog:\n%s", want, e.log.String())
		}
	}
	if w.stats.Failed.Load() < 3 || w.stats.Solved.Load() != 0 {
		t.Errorf("worker stats: %d failed, %d solved", w.stats.Failed.Load(), w.stats.Solved.Load())
	}
}

// TestForgedGraphProofIsNotMerged: on a graph job, a rogue worker's first
// results claim every node persistent at label 0 without a proof; the
// coordinator re-checks every proof, sends those windows again to the honest
// worker that joins, and the job gives partition.Solve's labels, nothing lost.
func TestForgedGraphProofIsNotMerged(t *testing.T) {
	e := newGraphEnv(t, "graph-forged", random.DensePairwise(random.New(11), 60, 4, 0.08), 8, 1, 4<<20)
	forged, rogueDone := e.rogueWorker(3, func(_ context.Context, task protocol.WindowTask) (*protocol.WindowResult, bool) {
		nodes, err := protocol.DecodeNodes(e.spec, *task.Graph, nil)
		if err != nil {
			t.Error(err)
			return nil, false
		}
		lie := make([]int32, len(nodes))
		for i := range lie {
			lie[i] = 1
		}
		return &protocol.WindowResult{Job: task.Job, Round: task.Round, Window: task.Window, Worker: "rogue", Vars: len(nodes),
			Persistent: protocol.EncodeLabels(lie, e.spec.Labels), Relaxed: protocol.EncodeLabels(lie, e.spec.Labels)}, true
	})
	pers, lab, sum := e.runThenWorker(rogueDone)
	e.sameAsSolve(pers, lab)
	e.checkForgeriesSentAgain(forged, 3, sum)
}
