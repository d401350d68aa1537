package cluster_test

import (
	"context"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
)

// newRasterEliminationEnv is an embedded server and a raster iri job — a
// raster eliminated out of core: rectangles, the labels alive in planes — on
// a w×h Potts denoising grid of k labels, by square windows of core pixels
// plus halo that double when a round eliminates little, as `solve --method
// iri --window` plans a .grid.
func newRasterEliminationEnv(t *testing.T, job string, w, h, k, core, halo int, seed uint64, maxPayload int32) *env {
	t.Helper()
	e := newEnvPayload(t, job, w, h, k, seed, maxPayload)
	e.spec.Method, e.spec.Core, e.spec.Halo, e.spec.MaxRounds = protocol.MethodIRI, core, halo, 8
	e.windows = func(round, level int) []partition.RasterWindow {
		size, shift := core<<level, round*(core<<level)/2
		if size >= max(w, h) {
			shift = 0
		}
		return partition.RasterWindows(w, h, size, halo<<level, shift)
	}
	for core<<e.maxLevel < max(w, h) {
		e.maxLevel++
	}
	return e
}

// rasterLocal is partition.EliminateRaster with the job's plans: what every
// distributed run of a raster iri job must leave.
func (e *env) rasterLocal() (partition.AliveLabels, *partition.MemStore, *partition.MemStore, *partition.RasterEliminationResult) {
	e.t.Helper()
	w, h := e.spec.Width, e.spec.Height
	pers, _ := e.persistentStore()
	alive := partition.NewMemAlive(w, h, e.spec.Labels)
	if _, err := partition.InitAlive(alive, w, h, pers); err != nil {
		e.t.Fatal(err)
	}
	lab := partition.NewMemStore(w, h)
	res, err := partition.EliminateRaster(context.Background(), e.raster, alive, partition.NewMemAlive(w, h, e.spec.Labels), lab, pers,
		partition.RasterEliminateOptions{Plan: e.windows, MaxLevel: e.maxLevel, Solver: e.spec.Persistency().Solver, Workers: 2, MaxRounds: e.spec.MaxRounds})
	if err != nil {
		e.t.Fatal(err)
	}
	return alive, pers, lab, res
}

// sameAsEliminateRaster fails unless the latest runner's planes and stores
// are partition.EliminateRaster's, in as many rounds, windows and levels.
func (e *env) sameAsEliminateRaster(pers, lab *partition.MemStore, sum coordinator.Summary) *partition.RasterEliminationResult {
	e.t.Helper()
	alive, wantP, wantL, want := e.rasterLocal()
	for p := range alive.Planes {
		if !reflect.DeepEqual(e.alive.Planes[p].(*partition.MemStore).Values, alive.Planes[p].(*partition.MemStore).Values) {
			e.t.Fatalf("alive plane %d differs from partition.EliminateRaster's\nlog:\n%s", p, e.log.String())
		}
	}
	if !reflect.DeepEqual(pers.Values, wantP.Values) || !reflect.DeepEqual(lab.Values, wantL.Values) {
		e.t.Fatalf("persistent map or labeling differs from partition.EliminateRaster's\nlog:\n%s", e.log.String())
	}
	if sum.Phase != "done" || sum.Rounds != want.Rounds || sum.WindowsTotal != want.Windows || sum.Level != want.Level || sum.Proven != want.Persistent {
		e.t.Fatalf("summary %+v; partition.EliminateRaster's %d rounds, %d windows, level %d, %d persistent", sum, want.Rounds, want.Windows, want.Level, want.Persistent)
	}
	return want
}

// TestRasterEliminationJobEqualsEliminateRaster: a raster iri job over two
// workers — the domains and eliminations through the object store when a
// server's messages are small, a window's nodes given by its domains alone —
// leaves exactly partition.EliminateRaster's alive planes, labeling and
// persistent map with the same plans, in as many rounds, windows and levels;
// the coordinator re-checked every window's proof and left no object behind.
func TestRasterEliminationJobEqualsEliminateRaster(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxPayload int32
	}{{"inline", 4 << 20}, {"object store", 512}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRasterEliminationEnv(t, "raster-iri", 20, 16, 16, 6, 2, 3, tc.maxPayload)
			var objects atomic.Int64 // tasks whose domains came from the object store
			onTask := func(task protocol.WindowTask) {
				if task.Graph != nil || task.Fixed != nil || task.Domains == nil {
					t.Errorf("task %+v: want rectangles with domains", task)
				} else if task.Domains.Object != "" {
					objects.Add(1)
				}
			}
			e.startWorker("w1", 2, onTask)
			e.startWorker("w2", 1, onTask)
			pers, lab, sum := e.mustRun()
			want := e.sameAsEliminateRaster(pers, lab, sum)
			if want.Rounds < 2 || sum.Eliminated == 0 || sum.Lost != 0 || sum.Rejected != 0 || sum.Solved != want.Solved {
				t.Fatalf("summary %+v, partition.EliminateRaster solved %d windows in %d rounds: want something eliminated, nothing lost", sum, want.Solved, want.Rounds)
			}
			if small := tc.maxPayload < 1<<20; small != (objects.Load() > 0) {
				t.Errorf("%d tasks with their domains in the object store, with a %d-byte message limit", objects.Load(), tc.maxPayload)
			}
			if n := countObjects(t, e); n != 0 {
				t.Errorf("%d objects left behind", n)
			}
			t.Logf("%d labels eliminated, %d pixels decided in %d rounds of %d windows, level %d", sum.Eliminated, sum.Proven, want.Rounds, want.Windows, want.Level)
		})
	}
}

// TestForgedRasterEliminationIsRejectedAndSentAgain: a rogue worker answers
// the first tasks of a raster iri job with forged eliminations — every node
// reduced to its test label, no certificate. The coordinator re-checks each
// proof on the model of the window's extent, rejects the forged results, sends
// their windows again to the honest worker that joins, and ends with
// partition.EliminateRaster's planes: nothing forged merged, nothing lost.
func TestForgedRasterEliminationIsRejectedAndSentAgain(t *testing.T) {
	e := newRasterEliminationEnv(t, "forged-raster-iri", 12, 10, 4, 6, 1, 5, 4<<20)
	res, closeConn := e.connect("rogue")
	defer closeConn()
	solver := e.spec.Persistency().Solver
	var forged atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rogueDone := make(chan struct{})
	go func() {
		defer close(rogueDone)
		pullTasks(ctx, t, res, func(task protocol.WindowTask) *protocol.WindowResult {
			if forged.Load() >= 4 {
				cancel() // enough: the rogue leaves
				return nil
			}
			doms, ext, err := protocol.DecodeRasterDomains(e.spec, task, nil)
			if err != nil {
				t.Error(err)
				return nil
			}
			w := partition.RasterWork{Window: partition.RasterWindow{Core: partition.Rect(task.Core), Nodes: partition.Rect(task.Nodes)}, Extent: partition.Rect(ext),
				Domains: doms, Nodes: protocol.RasterWindowNodes(e.spec.Width, task.Nodes, ext, doms)}
			honest, err := partition.EliminateRasterWindow(ctx, e.raster, w, solver)
			if err != nil {
				t.Error(err)
				return nil
			}
			lie := honest.Result
			lie.Certificate, lie.Earlier = nil, nil
			for i, v := range honest.Vars {
				if _, node := slices.BinarySearch(w.Nodes, v); node {
					lie.Alive[i], lie.Persistent[i] = []int{lie.Test[i]}, lie.Test[i]
				}
			}
			forged.Add(1)
			data, err := persistency.EncodeElimination(lie)
			if err != nil {
				t.Error(err)
				return nil
			}
			return &protocol.WindowResult{Job: task.Job, Round: task.Round, Window: task.Window, Worker: "rogue", Vars: len(honest.Vars), Elimination: data}
		})
	}()
	pers, lab, sum := e.runThenWorker(rogueDone)
	e.sameAsEliminateRaster(pers, lab, sum)
	if n := int(forged.Load()); n < 4 || sum.Rejected != n || sum.Resent != n || sum.Lost != 0 {
		t.Fatalf("%d results forged; summary: %d rejected, %d sent again, %d lost\nlog:\n%s", n, sum.Rejected, sum.Resent, sum.Lost, e.log.String())
	}
	if !strings.Contains(e.log.String(), "from rogue: its proof does not hold") {
		t.Errorf("the log does not name the failed proof:\n%s", e.log.String())
	}
}

// TestRasterEliminationJobResumes: a raster iri job whose coordinator stopped
// in the middle of round 1, resumed by a new one on planes initialised again
// (every label alive: the stored results re-checked and merged again in plan
// order), leaves partition.EliminateRaster's planes and stores.
func TestRasterEliminationJobResumes(t *testing.T) {
	e := newRasterEliminationEnv(t, "resume-raster-iri", 20, 16, 5, 6, 2, 3, 4<<20)
	e.cfg.Memory = false
	e.startWorker("w", 2, nil)
	e.interruptInRound1()
	r, pers, lab, closeConn := e.runner(true)
	defer closeConn()
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, e.log.String())
	}
	r.Cleanup(context.Background())
	e.sameAsEliminateRaster(pers, lab, sum)
	if sum.Lost != 0 || sum.Reused == 0 || r.RasterElimination() == nil {
		t.Fatalf("summary %+v: want done, nothing lost, windows reused", sum)
	}
}

// TestAJobsStagesShareTheWorkersOpen: the stages of a pbp+iri job, JOB and
// JOB--iri, on its model file are solved on one open (or download) of it per
// worker; another job on the same file opens it anew (a shared path may have
// changed in between).
func TestAJobsStagesShareTheWorkersOpen(t *testing.T) {
	e := newEnv(t, "share", 16, 12, 3, 4)
	res, closeConn := e.connect("w")
	defer closeConn()
	ctx, cancel := context.WithCancel(context.Background())
	var opens atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		worker.Serve(ctx, res, worker.Options{ID: "w", Slots: 2, Log: e.logger(),
			Models: func(context.Context, protocol.JobSpec) (partition.Raster, io.Closer, error) {
				opens.Add(1)
				return e.raster, nil, nil
			}}, nil)
	}()
	defer func() { cancel(); <-done }()
	for i, id := range []string{"share", protocol.IRIStage("share"), "another"} {
		e.spec.Job = id
		pers, lab, _ := e.mustRun()
		e.sameAsLocal(pers, lab)
		if n, want := opens.Load(), int32(1+i/2); n != want {
			t.Errorf("after job %s the model was opened %d times, want %d", id, n, want)
		}
	}
}
