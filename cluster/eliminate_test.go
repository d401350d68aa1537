package cluster_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
)

// newEliminationEnv is an embedded server and an iri job on a w×h Potts
// denoising grid of k labels, by square windows of core pixels plus halo that double when a round eliminates nothing, as `solve
// --method iri --window` plans a raster.
func newEliminationEnv(t *testing.T, job string, w, h, k, core, halo int, seed uint64, maxPayload int32) *env {
	t.Helper()
	m := random.PottsDenoising(random.New(seed), w, h, k, 0.9, 4, 1.3)
	e := &env{t: t, dir: t.TempDir(), maxPayload: maxPayload, cfg: testConfig(), log: &testutil.SyncBuffer{}, graph: m}
	e.startServer()
	t.Cleanup(func() { e.srv.Close() })
	e.spec = protocol.JobSpec{Job: job, Model: protocol.ModelRef{Path: "/nowhere/model.uai"}, Method: protocol.MethodIRI, Layout: protocol.LayoutGraph,
		Width: w * h, Height: 1, Labels: k, Core: core, Halo: halo, MaxRounds: 8, Variant: protocol.VariantInvariant}
	e.plan = func(round, level int) partition.Plan {
		size := core << level
		return partition.GridPlan(w, h, size, halo<<level, round*size/2)
	}
	for core<<e.maxLevel < max(w, h) {
		e.maxLevel++
	}
	return e
}

// eliminateLocal is partition.Eliminate with the job's plans: what every
// distributed run of an iri job must give.
func (e *env) eliminateLocal() *partition.Elimination {
	e.t.Helper()
	res, err := partition.Eliminate(context.Background(), e.graph, partition.EliminateOptions{
		Plan: e.plan, MaxLevel: e.maxLevel, Solver: e.spec.Persistency().Solver, Workers: 2, MaxRounds: e.spec.MaxRounds})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// runElimination runs the iri job's coordinator to its end.
func (e *env) runElimination(resume bool) (*partition.Elimination, coordinator.Summary) {
	e.t.Helper()
	r, _, _, closeConn := e.runner(resume)
	defer closeConn()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := r.Run(ctx)
	if err != nil {
		e.t.Fatalf("%v\nlog:\n%s", err, e.log.String())
	}
	r.Cleanup(ctx)
	return r.Elimination(), sum
}

// sameAsEliminate fails unless got is partition.Eliminate's result: the same
// domains, labeling, rounds, windows and level.
func (e *env) sameAsEliminate(got *partition.Elimination) *partition.Elimination {
	e.t.Helper()
	want := e.eliminateLocal()
	for v := range want.Alive {
		if !slices.Equal(got.Alive[v], want.Alive[v]) {
			e.t.Fatalf("variable %d: alive %v, partition.Eliminate's %v\nlog:\n%s", v, got.Alive[v], want.Alive[v], e.log.String())
		}
	}
	if !slices.Equal(got.Labeling, want.Labeling) || !slices.Equal(got.Persistent, want.Persistent) ||
		got.Rounds != want.Rounds || got.Windows != want.Windows || got.Level != want.Level {
		e.t.Fatalf("labeling %v, rounds %d, windows %d, level %d; partition.Eliminate's %v, %d, %d, %d",
			got.Labeling, got.Rounds, got.Windows, got.Level, want.Labeling, want.Rounds, want.Windows, want.Level)
	}
	return want
}

// TestEliminationJobEqualsEliminate: an iri job over two workers — its windows'
// domains and eliminations through the object store when a server's messages are
// small — gives exactly partition.Eliminate's domains and labeling with the same
// plans, in as many rounds, windows and levels; the coordinator re-checked every
// window's proof and left no object behind.
func TestEliminationJobEqualsEliminate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxPayload int32
	}{{"inline", 4 << 20}, {"object store", 512}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEliminationEnv(t, "iri", 20, 16, 5, 6, 2, 3, tc.maxPayload)
			var objects atomic.Int64 // tasks whose domains came from the object store
			onTask := func(task protocol.WindowTask) {
				if task.Graph.Domains.Object != "" {
					objects.Add(1)
				}
			}
			e.startWorker("w1", 2, onTask)
			e.startWorker("w2", 1, onTask)
			got, sum := e.runElimination(false)
			want := e.sameAsEliminate(got)
			eliminated := 0
			for v, ls := range want.Alive {
				eliminated += e.graph.NumLabels(v) - len(ls)
			}
			if eliminated == 0 || want.Rounds < 2 {
				t.Fatalf("partition.Eliminate eliminated %d labels in %d rounds: the test checks too little", eliminated, want.Rounds)
			}
			if sum.Phase != "done" || sum.Lost != 0 || sum.Rejected != 0 || sum.Eliminated != int64(eliminated) || sum.Proven != int64(persistency.Count(want.Persistent)) {
				t.Fatalf("summary %+v: want done, %d eliminated", sum, eliminated)
			}
			if small := tc.maxPayload < 1<<20; small != (objects.Load() > 0) {
				t.Errorf("%d tasks with their domains in the object store, with a %d-byte message limit", objects.Load(), tc.maxPayload)
			}
			if n := countObjects(t, e); n != 0 {
				t.Errorf("%d objects left behind", n)
			}
			t.Logf("%d labels eliminated, %d variables decided in %d rounds of %d windows, level %d", eliminated, sum.Proven, want.Rounds, want.Windows, want.Level)
		})
	}
}

// countObjects counts the objects in the store.
func countObjects(t *testing.T, e *env) int {
	t.Helper()
	res, closeConn := e.connect("lister")
	defer closeConn()
	infos, err := res.Objects.List(context.Background())
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Fatal(err)
	}
	return len(infos)
}

// TestForgedEliminationIsNotMerged: a rogue worker answers every task of an iri
// job with a forged elimination — a genuine certificate for a map that also
// moves labels outside the window's nodes (valid on the window's model, which
// lacks the factors beyond it, unsound for the whole model), or every node
// reduced to its test label with no certificate. The coordinator re-checks each
// proof on the model: every forged window is lost with the reason, none is
// merged, and the job still finishes.
func TestForgedEliminationIsNotMerged(t *testing.T) {
	e := newEliminationEnv(t, "forged", 12, 10, 4, 6, 1, 5, 4<<20)
	res, closeConn := e.connect("rogue")
	defer closeConn()
	solver := e.spec.Persistency().Solver
	var mu sync.Mutex
	var forged []coordinator.WindowID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go pullTasks(ctx, t, res, func(task protocol.WindowTask) *protocol.WindowResult {
		nodes, err := protocol.DecodeNodes(e.spec, *task.Graph, nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		w := partition.WindowWork{Nodes: nodes, Vars: partition.EliminationExtent(e.graph, nodes)}
		if w.Domains, err = protocol.DecodeDomains(task.Graph.Domains.Inline, w.LabelCounts(e.graph)); err != nil {
			t.Error(err)
			return nil
		}
		lie, wrong, err := forge(ctx, e, w, solver, task.Window%2 == 0)
		if err != nil {
			t.Error(err)
			return nil
		}
		if wrong {
			mu.Lock()
			forged = append(forged, coordinator.WindowID{Round: task.Round, Window: task.Window})
			mu.Unlock()
		}
		data, err := persistency.EncodeElimination(lie)
		if err != nil {
			t.Error(err)
			return nil
		}
		return &protocol.WindowResult{Job: task.Job, Round: task.Round, Window: task.Window, Worker: "rogue", Vars: len(w.Vars), Elimination: data}
	})
	_, sum := e.runElimination(false)
	mu.Lock()
	defer mu.Unlock()
	if len(forged) == 0 {
		t.Fatal("no result was forged: the test checks nothing")
	}
	// Checks end in any order: compare the sets. A window whose proof fails is
	// sent again; the rogue, the only worker, forges it on every attempt, so it
	// is lost after the last.
	byID := func(a, b coordinator.WindowID) int {
		return cmp.Or(cmp.Compare(a.Round, b.Round), cmp.Compare(a.Window, b.Window))
	}
	lost := slices.SortedFunc(slices.Values(sum.LostWindows), byID)
	slices.SortFunc(forged, byID)
	if sum.Phase != "done" || !slices.Equal(lost, slices.Compact(slices.Clone(forged))) {
		t.Fatalf("phase %s, lost windows %v; forged %v\nlog:\n%s", sum.Phase, sum.LostWindows, forged, e.log.String())
	}
	for _, msg := range sum.Errors {
		if !strings.Contains(msg, "from rogue: its proof does not hold") || !strings.Contains(msg, "after 3 attempts") {
			t.Errorf("error %q: want the rejected proof named, after 3 attempts", msg)
		}
	}
	if sum.Rejected != len(forged) || sum.Resent != len(forged)-len(lost) {
		t.Errorf("%d results rejected and %d sent again; %d forged for %d windows", sum.Rejected, sum.Resent, len(forged), len(lost))
	}
}

// forge returns a forged elimination of window w and whether it is wrong (not
// what an honest worker could send): across the boundary, the elimination of
// every variable of the extent as if all were nodes, wrong when it moved a label
// outside the nodes; else the honest one with every node left its test label and
// no certificate, wrong whenever it eliminates a label.
func forge(ctx context.Context, e *env, w partition.WindowWork, solver persistency.Relaxation, boundary bool) (*persistency.Elimination, bool, error) {
	if boundary {
		all := w
		all.Nodes = w.Vars
		lie, err := partition.EliminateWindow(ctx, e.graph, all, solver)
		if err != nil {
			return nil, false, err
		}
		for i, v := range w.Vars {
			if _, node := slices.BinarySearch(w.Nodes, v); !node && len(lie.Alive[i]) < len(w.Domains[i]) {
				return lie, true, nil
			}
		}
		return lie, false, nil
	}
	lie, err := partition.EliminateWindow(ctx, e.graph, w, solver)
	if err != nil {
		return nil, false, err
	}
	lie.Certificate, lie.Earlier, lie.Eliminated = nil, nil, 0
	for i, v := range w.Vars {
		if _, node := slices.BinarySearch(w.Nodes, v); node {
			lie.Alive[i], lie.Persistent[i] = []int{lie.Test[i]}, lie.Test[i]
		}
		lie.Eliminated += len(w.Domains[i]) - len(lie.Alive[i])
	}
	return lie, lie.Eliminated > 0, nil
}

// TestEliminationJobResumes: an iri job whose coordinator stopped in the middle
// of round 1, resumed by a new one with nothing in memory (the stored results
// re-checked and merged again in plan order), gives partition.Eliminate's
// domains.
func TestEliminationJobResumes(t *testing.T) {
	e := newEliminationEnv(t, "resume-iri", 20, 16, 5, 6, 2, 3, 4<<20)
	e.cfg.Memory = false
	e.startWorker("w", 2, nil)
	e.interruptInRound1()
	got, sum := e.runElimination(true)
	e.sameAsEliminate(got)
	if sum.Phase != "done" || sum.Lost != 0 || sum.Reused == 0 {
		t.Fatalf("summary %+v: want done, nothing lost, windows reused", sum)
	}
}
