package cluster_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
)

// testConfig makes crashes cheap: a task without heartbeat is redelivered after
// half a second.
func testConfig() cluster.Config {
	return cluster.Config{AckWait: 500 * time.Millisecond, MaxDeliver: 3, Duplicates: time.Minute, Memory: true}
}

// env is an embedded server and the raster job the tests run on it.
type env struct {
	t          *testing.T
	srv        *cluster.Embedded
	dir        string // the server's JetStream directory
	maxPayload int32
	cfg        cluster.Config
	raster     partition.Raster
	graph      *model.Model // a graph job's model (spec.Layout graph), else nil
	spec       protocol.JobSpec
	log        *testutil.SyncBuffer
	// cacheBytes, when set, bounds the coordinator's decoded results (1: every
	// result is read again from the stream at its merge).
	cacheBytes int64
	// evidence fixes pixels (label+1 by pixel index) before round 0.
	evidence map[int]int32
	// plan and maxLevel are an iri job's plans (spec.Method iri) over graph.
	plan     func(round, level int) partition.Plan
	maxLevel int
	// deadline, when set, is the coordinator's WindowDeadline.
	deadline time.Duration
	// workerRaster, when set, is the workers' model instead of raster (the
	// coordinator checks the proofs on raster).
	workerRaster *partition.Raster
	// windows are a raster iri job's windows (spec.Method iri, layout
	// raster) over raster, with maxLevel; alive the labels alive of the
	// latest runner (its planes initialised from the evidence).
	windows func(round, level int) []partition.RasterWindow
	alive   partition.AliveLabels
	// onPhase, when set, is the runners' RunOptions.OnPhase; statusEvery
	// their StatusEvery.
	onPhase     func(phase string)
	statusEvery time.Duration
}

// persistentStore is a store holding the evidence, and its count.
func (e *env) persistentStore() (*partition.MemStore, int64) {
	s := partition.NewMemStore(e.spec.Width, e.spec.Height)
	for i, l := range e.evidence {
		s.Values[i] = l
	}
	return s, int64(len(e.evidence))
}

func newEnv(t *testing.T, job string, w, h, k int, seed uint64) *env {
	return newEnvPayload(t, job, w, h, k, seed, 4<<20)
}

// newEnvPayload is newEnv with the server's message size limit.
func newEnvPayload(t *testing.T, job string, w, h, k int, seed uint64, maxPayload int32) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), maxPayload: maxPayload, cfg: testConfig(), log: &testutil.SyncBuffer{}}
	e.startServer()
	t.Cleanup(func() { e.srv.Close() })
	m := random.PottsDenoising(random.New(seed), w, h, k, 0.9, 4, 1.3)
	raster, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	spec := protocol.JobSpec{Job: job, Model: protocol.ModelRef{Path: "/nowhere/model.uai"}, Width: w, Height: h, Labels: k,
		Core: 12, Halo: 3, MaxRounds: 3, Variant: protocol.VariantInvariant}
	e.raster, e.spec = raster, spec
	return e
}

// startServer starts the embedded server on the env's directory (again, after
// a restart: what JetStream stored on file is still there).
func (e *env) startServer() {
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: e.dir, MaxPayload: e.maxPayload})
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv = srv
}

// connect opens a process's own connection and resources.
func (e *env) connect(name string) (*cluster.Resources, func()) {
	e.t.Helper()
	nc, err := cluster.Connect(cluster.ConnOptions{Server: e.srv}, name)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := cluster.Open(context.Background(), nc, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, nc.Close
}

func (e *env) logger() *slog.Logger { return slog.New(slog.NewTextHandler(e.log, nil)) }

// local is the windowed solve on one machine: what every distributed run must give.
func (e *env) local() (*partition.MemStore, *partition.MemStore) {
	w, h := e.spec.Width, e.spec.Height
	pers, _ := e.persistentStore()
	lab := partition.NewMemStore(w, h)
	_, err := partition.SolveRaster(context.Background(), e.raster, pers, lab, partition.NewMemStore(w, h),
		partition.RasterOptions{Core: e.spec.Core, Halo: e.spec.Halo, MaxRounds: e.spec.MaxRounds, Persistency: e.spec.Persistency()})
	if err != nil {
		e.t.Fatal(err)
	}
	return pers, lab
}

// worker starts a worker process with its own connection; stop ends it
// gracefully, kill drops its connection first (a crash: no ack, no nak).
type testWorker struct {
	stats  worker.Stats
	cancel context.CancelFunc
	close  func()
	done   chan struct{}
}

func (e *env) startWorker(id string, slots int, onTask func(protocol.WindowTask)) *testWorker {
	res, closeConn := e.connect(id)
	ctx, cancel := context.WithCancel(context.Background())
	tw := &testWorker{cancel: cancel, close: closeConn, done: make(chan struct{})}
	models := func(context.Context, protocol.JobSpec) (partition.Raster, io.Closer, error) {
		if e.workerRaster != nil {
			return *e.workerRaster, nil, nil
		}
		return e.raster, nil, nil
	}
	go func() {
		defer close(tw.done)
		graphs := func(context.Context, protocol.JobSpec) (*model.Model, error) { return e.graph, nil }
		worker.Serve(ctx, res, worker.Options{ID: id, Slots: slots, Models: models, Graphs: graphs, Log: e.logger(), OnTask: onTask}, &tw.stats)
	}()
	e.t.Cleanup(tw.stop)
	return tw
}

func (tw *testWorker) stop() {
	tw.cancel()
	<-tw.done
	tw.close()
}

func (tw *testWorker) kill() {
	tw.close()
	tw.cancel()
}

// run runs the job's coordinator to its end and returns the stores and summary.
func (e *env) run(ctx context.Context) (*partition.MemStore, *partition.MemStore, coordinator.Summary, error) {
	return e.runAs(ctx, false)
}

// runAs is run, or with resume a coordinator that resumes the job.
func (e *env) runAs(ctx context.Context, resume bool) (*partition.MemStore, *partition.MemStore, coordinator.Summary, error) {
	r, pers, lab, closeConn := e.runner(resume)
	defer closeConn()
	sum, err := r.Run(ctx)
	if err == nil {
		r.Cleanup(ctx) // the outputs would be written before (none here)
	}
	return pers, lab, sum, err
}

// runner is a coordinator on its own connection with fresh stores (holding the
// evidence); resume continues the job from what JetStream kept.
func (e *env) runner(resume bool) (*coordinator.Runner, *partition.MemStore, *partition.MemStore, func()) {
	res, closeConn := e.connect("coordinator")
	w, h := e.spec.Width, e.spec.Height
	pers, proven := e.persistentStore()
	lab := partition.NewMemStore(w, h)
	opt := coordinator.RunOptions{Log: e.logger(), CacheBytes: e.cacheBytes, Resume: resume, Model: e.graph, Raster: e.raster, Plan: e.plan, MaxLevel: e.maxLevel,
		WindowDeadline: e.deadline, OnPhase: e.onPhase, StatusEvery: e.statusEvery}
	if e.windows != nil {
		opt.Windows = e.windows
		opt.Alive, opt.Prior = partition.NewMemAlive(w, h, e.spec.Labels), partition.NewMemAlive(w, h, e.spec.Labels)
		if _, err := partition.InitAlive(opt.Alive, w, h, pers); err != nil {
			e.t.Fatal(err)
		}
		e.alive = opt.Alive
	}
	r, err := coordinator.NewRunner(res, e.spec, proven, coordinator.Stores{Persistent: pers, Labeling: lab, Scratch: partition.NewMemStore(w, h)}, opt)
	if err != nil {
		e.t.Fatal(err)
	}
	return r, pers, lab, closeConn
}

// interruptInRound1 runs the job's coordinator until it has merged a window of
// round 1, then stops it as a crash would (the job stays in JetStream), and
// returns how many tasks it dispatched.
func (e *env) interruptInRound1() int {
	e.t.Helper()
	first, _, _, closeFirst := e.runner(false)
	defer closeFirst()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := first.Run(ctx); done <- err }()
	for s := first.Summary(); s.Round < 1 || s.Merged < 1; s = first.Summary() {
		if s.Phase != "running" {
			e.t.Fatalf("the job ended (%s) before round 1", s.Phase)
		}
		time.Sleep(2 * time.Millisecond)
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		e.t.Fatalf("first coordinator: %v", err)
	}
	return first.Summary().Dispatched
}

// storedStatus is the job's status as its coordinator last stored it.
func (e *env) storedStatus() coordinator.Summary {
	e.t.Helper()
	res, closeConn := e.connect("status")
	defer closeConn()
	entry, err := res.Jobs.Get(context.Background(), protocol.JobStatusKey(e.spec.Job))
	if err != nil {
		e.t.Fatal(err)
	}
	var s coordinator.Summary
	if err := json.Unmarshal(entry.Value(), &s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// shownContinues checks what a resumed job showed at each step (shown): the
// counts its predecessor stored (prior) in phase resuming while it merges the
// stored results again, then its own, never fewer windows merged than shown
// before — "windows 0/400" for minutes after a resume said a run had hung.
func (e *env) shownContinues(prior coordinator.Summary, shown []coordinator.Summary) {
	e.t.Helper()
	if prior.Round < 1 || prior.Merged < 1 {
		e.t.Fatalf("the stopped job stored round %d, %d merged: want a window of round 2 merged", prior.Round+1, prior.Merged)
	}
	if len(shown) == 0 || shown[0].Phase != coordinator.PhaseResuming || shown[0].Round != prior.Round || shown[0].Merged != prior.Merged {
		e.t.Fatalf("first shown %+v, want phase %s at round %d with %d merged", shown, coordinator.PhaseResuming, prior.Round+1, prior.Merged)
	}
	for i := 1; i < len(shown); i++ {
		a, b := shown[i-1], shown[i]
		if b.Round < a.Round || b.Round == a.Round && b.Merged < a.Merged {
			e.t.Errorf("step %d shows round %d %d merged (%s) after round %d %d merged (%s)", i, b.Round+1, b.Merged, b.Phase, a.Round+1, a.Merged, a.Phase)
		}
	}
	if last := shown[len(shown)-1]; last.Phase == coordinator.PhaseResuming {
		e.t.Errorf("the job still shows its predecessor's status at its last step: %+v", last)
	}
}

func (e *env) mustRun() (*partition.MemStore, *partition.MemStore, coordinator.Summary) {
	e.t.Helper()
	return e.mustRunAs(false)
}

// mustResume runs a coordinator that resumes the job to its end.
func (e *env) mustResume() (*partition.MemStore, *partition.MemStore, coordinator.Summary) {
	e.t.Helper()
	return e.mustRunAs(true)
}

func (e *env) mustRunAs(resume bool) (*partition.MemStore, *partition.MemStore, coordinator.Summary) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pers, lab, sum, err := e.runAs(ctx, resume)
	if err != nil {
		e.t.Fatalf("%v\nlog:\n%s", err, e.log.String())
	}
	return pers, lab, sum
}

// runThenWorker runs the job while a rogue takes its first tasks, starts an
// honest worker once rogueDone is closed, and returns the run's outcome.
func (e *env) runThenWorker(rogueDone <-chan struct{}) (*partition.MemStore, *partition.MemStore, coordinator.Summary) {
	e.t.Helper()
	type outcome struct {
		pers, lab *partition.MemStore
		sum       coordinator.Summary
		err       error
	}
	ran := make(chan outcome, 1)
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	go func() {
		pers, lab, sum, err := e.run(ctx)
		ran <- outcome{pers, lab, sum, err}
	}()
	<-rogueDone
	e.startWorker("w", 2, nil)
	o := <-ran
	if o.err != nil {
		e.t.Fatalf("%v\nlog:\n%s", o.err, e.log.String())
	}
	return o.pers, o.lab, o.sum
}

func (e *env) sameAsLocal(pers, lab *partition.MemStore) {
	e.t.Helper()
	wantP, wantL := e.local()
	if !reflect.DeepEqual(pers.Values, wantP.Values) || !reflect.DeepEqual(lab.Values, wantL.Values) {
		e.t.Fatalf("distributed labels differ from the local windowed solve\nlog:\n%s", e.log.String())
	}
}

// TestDistributedRunEqualsLocalSolve: a multi-window, multi-round job over several
// workers gives exactly the labels of partition.SolveRaster.
func TestDistributedRunEqualsLocalSolve(t *testing.T) {
	e := newEnv(t, "equal", 50, 40, 3, 1)
	for i := range 3 {
		e.startWorker(fmt.Sprintf("w%d", i), 2, nil)
	}
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	if sum.Phase != "done" || sum.Rounds < 2 || sum.Lost != 0 || sum.Dispatched == 0 {
		t.Fatalf("summary %+v", sum)
	}
	if len(sum.Workers) < 2 {
		t.Errorf("results came from %d workers, want several: %v", len(sum.Workers), sum.Workers)
	}
}

// TestDeletedResultsConsumerIsTakenUpAgain: the coordinator's durable
// consumer of results deleted under a running job (a server that lost it, an
// operator's mistake; a starved run once saw its consumer stop and exited
// with "the results consumer stopped") is created again and the job ends
// with the local labels: the results it had acked are delivered again and
// count as duplicates.
func TestDeletedResultsConsumerIsTakenUpAgain(t *testing.T) {
	e := newEnv(t, "consumer", 40, 30, 3, 4)
	res, closeConn := e.connect("operator")
	defer closeConn()
	var once sync.Once
	e.startWorker("w", 1, func(task protocol.WindowTask) {
		if task.Round == 1 {
			once.Do(func() {
				if err := res.Results.DeleteConsumer(context.Background(), res.Names.CoordinatorConsumer(task.Job)); err != nil {
					t.Error(err)
				}
			})
		}
	})
	pers, lab, _ := e.mustRun()
	e.sameAsLocal(pers, lab)
	if !strings.Contains(e.log.String(), "taking it up again") {
		t.Errorf("the consumer's loss is not logged:\n%s", e.log.String())
	}
}

// TestKilledWorkerTaskIsRedelivered: a worker that dies mid-task (no ack, no nak)
// costs its task's ack wait; another worker solves it and the result is the same.
func TestKilledWorkerTaskIsRedelivered(t *testing.T) {
	e := newEnv(t, "kill", 40, 30, 3, 2)
	var victim *testWorker
	var once sync.Once
	killed := make(chan struct{})
	victim = e.startWorker("victim", 1, func(protocol.WindowTask) {
		once.Do(func() { victim.kill(); close(killed) })
	})
	go func() { // the survivor starts after the kill, so the victim surely took a task
		<-killed
		e.startWorker("survivor", 2, nil)
	}()
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	if victim.stats.Solved.Load() != 0 || sum.Workers["victim"].Windows != 0 {
		t.Fatalf("the killed worker answered: %+v", sum.Workers)
	}
}

// TestDuplicateResultsAreIgnored: a result published again with the same
// Nats-Msg-Id is dropped by JetStream; one published again without it (after the
// duplicate window) reaches the coordinator, which ignores it.
func TestDuplicateResultsAreIgnored(t *testing.T) {
	e := newEnv(t, "dup", 40, 30, 3, 3)
	res, closeConn := e.connect("duplicator")
	defer closeConn()
	// Same id: JetStream keeps one.
	data, err := protocol.Marshal(protocol.Error{Job: "dup", Round: -1, Window: -1, Message: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		ack, err := res.JS.Publish(ctx, res.Names.ErrorSubject("other"), data, jetstream.WithMsgID("probe-id"))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != (i == 1) {
			t.Fatalf("publish %d: duplicate %v", i, ack.Duplicate)
		}
	}
	// Round 0's results published again, without an id, as round 1 starts (a
	// worker that finished late, a redelivery after the duplicate window). The
	// one slot publishes its round-1 results after them, so the coordinator,
	// which reads results in stream order, sees every copy before round 1 ends.
	var mu sync.Mutex
	var round0 []*nats.Msg
	sub, err := res.Conn.Subscribe("partopt.result.dup.0.>", func(m *nats.Msg) {
		mu.Lock()
		round0 = append(round0, m)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	var replayed atomic.Int64
	var once sync.Once
	e.startWorker("w", 1, func(task protocol.WindowTask) {
		if task.Round != 1 {
			return
		}
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range round0 {
				if _, err := res.JS.Publish(ctx, m.Subject, m.Data); err != nil {
					t.Error(err)
				}
				replayed.Add(1)
			}
		})
	})
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	if replayed.Load() == 0 || int64(sum.Duplicates) < replayed.Load() {
		t.Fatalf("%d results replayed, %d duplicates ignored: %+v", replayed.Load(), sum.Duplicates, sum)
	}
}

// TestBadMessagesAreRejectedAndServingGoesOn: malformed, oversized and
// wrong-version tasks and results are rejected with a logged error; the worker
// and the coordinator go on and the job's result is unchanged.
func TestBadMessagesAreRejectedAndServingGoesOn(t *testing.T) {
	e := newEnv(t, "bad", 40, 30, 3, 4)
	res, closeConn := e.connect("attacker")
	defer closeConn()
	good, err := protocol.Marshal(protocol.WindowTask{Job: "bad", Round: 0, Window: 0, Core: protocol.Rect{W: 1, H: 1}, Nodes: protocol.Rect{W: 1, H: 1}})
	if err != nil {
		t.Fatal(err)
	}
	wrongVersion := append([]byte(nil), good...)
	wrongVersion[len(protocol.Magic)+1]++
	oversized := append(append([]byte(nil), good...), make([]byte, protocol.MaxMessageBytes)...)
	bad := [][]byte{[]byte("not a message"), wrongVersion, oversized, good[:len(good)-3]}
	ctx := context.Background()
	for i, data := range bad {
		if _, err := res.JS.Publish(ctx, res.Names.TaskSubject("bad"), data); err != nil {
			t.Fatalf("bad task %d: %v", i, err)
		}
		if _, err := res.JS.Publish(ctx, res.Names.ResultSubject("bad", 0, 10000+i), data); err != nil {
			t.Fatalf("bad result %d: %v", i, err)
		}
	}
	w := e.startWorker("w", 1, nil)
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	if got := w.stats.Rejected.Load(); got != int64(len(bad)) {
		t.Errorf("worker rejected %d tasks, want %d", got, len(bad))
	}
	if sum.Rejected != len(bad) {
		t.Errorf("coordinator rejected %d results, want %d", sum.Rejected, len(bad))
	}
	for _, want := range []string{"rejected task message", "rejected result message", "message too large", "version", "malformed"} {
		if !strings.Contains(e.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, e.log.String())
		}
	}
}

// TestLargePayloadsGoThroughTheObjectStore: with a server whose message limit
// is smaller than a window's fixed labels and result, the coordinator puts the
// fixed labels and the workers their results in the object store and publish
// references; the labels are the same, and no object is left behind.
func TestLargePayloadsGoThroughTheObjectStore(t *testing.T) {
	// 2 KiB messages: fixed labels of 36×36 pixels exceed half of it, results of
	// 38×38 nodes exceed it less 4 KiB of headroom.
	e := newEnvPayload(t, "large", 60, 40, 3, 9, 2<<10)
	e.spec.Core, e.spec.Halo = 30, 4
	e.cacheBytes = 1                                          // and read back from the store at merge time
	e.evidence = map[int]int32{0: 1, 61: 2, 1234: 3, 2399: 1} // fixed labels in round 0 already
	res, closeConn := e.connect("watcher")
	defer closeConn()
	var refs, fixedObjects atomic.Int64
	sub, err := res.Conn.Subscribe("partopt.>", func(m *nats.Msg) {
		msg, err := protocol.Unmarshal(m.Data, protocol.MaxMessageBytes)
		switch v := msg.(type) {
		case protocol.ResultRef:
			refs.Add(1)
		case protocol.WindowTask:
			if v.Fixed != nil && v.Fixed.Data.Object != "" {
				fixedObjects.Add(1)
			}
		}
		_ = err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.startWorker("w", 2, nil)
	pers, lab, _ := e.mustRun()
	sub.Unsubscribe()
	e.sameAsLocal(pers, lab)
	if refs.Load() == 0 || fixedObjects.Load() == 0 {
		t.Fatalf("%d results and %d fixed labels went through the object store, want some of both", refs.Load(), fixedObjects.Load())
	}
	if infos, err := res.Objects.List(context.Background()); err == nil {
		for _, o := range infos {
			t.Errorf("object %s left after the job", o.Name)
		}
	}
}

// TestWorkerJoiningMidJobTakesWork: a worker started while a job runs gets tasks.
func TestWorkerJoiningMidJobTakesWork(t *testing.T) {
	e := newEnv(t, "join", 60, 48, 3, 5)
	started := make(chan struct{}, 1000)
	e.startWorker("early", 1, func(protocol.WindowTask) {
		started <- struct{}{}
		time.Sleep(30 * time.Millisecond) // a slow machine
	})
	go func() {
		<-started
		<-started
		e.startWorker("late", 2, nil)
	}()
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	if sum.Workers["late"].Windows == 0 || sum.Workers["early"].Windows == 0 {
		t.Fatalf("windows per worker %v: want both", sum.Workers)
	}
}

// TestWorkerShutdownFinishesOrHandsBack: a worker told to stop (SIGTERM) while
// solving finishes its task within the grace period, or else hands it back
// (nak) for another worker; either way it exits and the result is unchanged.
func TestWorkerShutdownFinishesOrHandsBack(t *testing.T) {
	for _, c := range []struct {
		name             string
		grace            time.Duration
		solved, returned int64
	}{{"grace", time.Minute, 1, 0}, {"no grace", 0, 0, 1}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "term", 40, 30, 3, 8)
			e.cfg.AckWait = time.Minute // a lost task would stall the job: only a nak hands it back in time
			res, closeConn := e.connect("stopping")
			defer closeConn()
			ctx, stop := context.WithCancel(context.Background())
			var stats worker.Stats
			done := make(chan struct{})
			var loads atomic.Int32
			models := func(context.Context, protocol.JobSpec) (partition.Raster, io.Closer, error) {
				if c.grace == 0 && loads.Add(1) == 1 {
					// Without grace, the first task's model takes longer than the
					// stop takes to reach its solve: a small window would
					// otherwise be solved before it, by a race.
					time.Sleep(2 * time.Second)
				}
				return e.raster, nil, nil
			}
			var once sync.Once
			go func() {
				defer close(done)
				worker.Serve(ctx, res, worker.Options{ID: "stopping", Grace: c.grace, Models: models, Log: e.logger(),
					OnTask: func(protocol.WindowTask) { once.Do(stop) }}, &stats) // SIGTERM while the first task runs
			}()
			go func() { <-done; e.startWorker("other", 2, nil) }()
			pers, lab, _ := e.mustRun()
			<-done
			e.sameAsLocal(pers, lab)
			if stats.Solved.Load() != c.solved || stats.Returned.Load() != c.returned {
				t.Fatalf("solved %d, returned %d; want %d, %d", stats.Solved.Load(), stats.Returned.Load(), c.solved, c.returned)
			}
		})
	}
}

// TestCoordinatorRestartResumesTheJob: a coordinator stopped in the middle of
// round 1 and a new one that resumes on empty label stores (its results merged
// again from the results stream) give the labels of the uninterrupted solve —
// also when the whole cluster, NATS included, stopped and restarted from disk.
func TestCoordinatorRestartResumesTheJob(t *testing.T) {
	for _, wholeCluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "coordinator", true: "cluster"}[wholeCluster], func(t *testing.T) {
			e := newEnv(t, "resume", 50, 40, 3, 10)
			e.cfg.Memory = false // the streams on disk, as in production
			w := e.startWorker("w", 2, nil)
			solved := e.interruptInRound1()
			stored := e.storedStatus()
			if wholeCluster {
				w.kill()
				e.srv.Close()
				e.startServer()
				e.startWorker("w2", 2, nil)
			}
			// What status readers see at each step of the resumed coordinator.
			var second *coordinator.Runner
			var shown []coordinator.Summary
			var storedAtMerge *coordinator.Summary
			var updatedAtMerges []time.Time
			e.onPhase = func(phase string) {
				shown = append(shown, second.Shown())
				if phase == coordinator.PhaseMerging {
					s := e.storedStatus()
					if storedAtMerge == nil {
						storedAtMerge = &s
					}
					updatedAtMerges = append(updatedAtMerges, s.Updated)
				}
			}
			e.statusEvery = time.Nanosecond // a status stored at each window the dispatch goes through
			resumed := time.Now()
			second, pers, lab, closeSecond := e.runner(true)
			defer closeSecond()
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sum, err := second.Run(rctx)
			if err != nil {
				t.Fatalf("resumed coordinator: %v\nlog:\n%s", err, e.log.String())
			}
			e.shownContinues(stored, shown)
			// The replay stores its status as it goes: `status` does not take
			// the resumed coordinator for dead while it reads (the 10⁸ cluster
			// job said "no coordinator has updated it for 37s" in its replay).
			if storedAtMerge == nil || storedAtMerge.Updated.Before(resumed) || storedAtMerge.Phase != coordinator.PhaseResuming {
				t.Errorf("the status stored when the resumed job first merges: %+v, want phase %s updated after %v", storedAtMerge, coordinator.PhaseResuming, resumed)
			}
			// And between its merges: a replayed round's merges read their
			// stored results for minutes at 10⁸ pixels.
			for i := 1; i < len(updatedAtMerges); i++ {
				if !updatedAtMerges[i].After(updatedAtMerges[i-1]) {
					t.Fatalf("merge %d found the status stored at %v, as merge %d did: not stored between merges", i, updatedAtMerges[i], i-1)
				}
			}
			e.sameAsLocal(pers, lab)
			if sum.Phase != "done" || sum.Lost != 0 || sum.Reused == 0 || sum.Reused > solved {
				t.Fatalf("summary %+v: want done, nothing lost, some of the %d windows solved before reused", sum, solved)
			}
			// Stopped in round 2 (index 1) or later: the first round's windows
			// were all reused, and the stopped round's are counted apart (the
			// status line's pace leaves them out).
			if sum.ReusedRound < 1 || sum.RoundReused < 1 || sum.RoundReused >= sum.Reused {
				t.Errorf("%d windows reused, %d of them counted to round %d: want some, and fewer than all",
					sum.Reused, sum.RoundReused, sum.ReusedRound+1)
			}
		})
	}
}

// TestAResumedJobSendsAnUnusableStoredResultAgain: a resumed job reads its
// stored results at their merges, several at once (a 10⁸-pixel job's replay
// read them one by one for 20 minutes); one replaced by garbage before the
// resume is sent again, and the job ends with the labels of the local solve.
func TestAResumedJobSendsAnUnusableStoredResultAgain(t *testing.T) {
	e := newEnv(t, "resumegarbage", 50, 40, 3, 11)
	e.cfg.Memory = false
	e.startWorker("w", 2, nil)
	e.interruptInRound1()
	res, closeConn := e.connect("rogue")
	defer closeConn()
	if _, err := res.JS.Publish(context.Background(), res.Names.ResultSubject(e.spec.Job, 0, 2), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	pers, lab, sum := e.mustResume()
	e.sameAsLocal(pers, lab)
	if sum.Phase != "done" || sum.Lost != 0 || sum.Resent != 1 || sum.Reused == 0 || !strings.Contains(e.log.String(), "window 0/2: its stored result is unusable at its merge") {
		t.Fatalf("summary %+v: want done, window 0/2 sent again once, the other stored results reused\nlog:\n%s", sum, e.log.String())
	}
	if sum.Workers["w"].Windows == 0 {
		t.Errorf("workers %+v: the replayed windows are not credited to the worker that solved them", sum.Workers)
	}
}

// TestLostWindowIsReportedNotHidden: a task no worker ever acks exhausts its
// deliveries (JetStream's advisory); the coordinator lists the window as lost,
// merges it as proving nothing and finishes.
func TestLostWindowIsReportedNotHidden(t *testing.T) {
	e := newEnv(t, "lost", 40, 30, 3, 6)
	e.cfg.MaxDeliver = 2
	res, closeConn := e.connect("black-hole")
	defer closeConn()
	// A worker that solves every task but round 0's window 3, which it takes
	// whenever delivered and never answers.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go pullTasks(ctx, t, res, func(task protocol.WindowTask) *protocol.WindowResult {
		if task.Round == 0 && task.Window == 3 {
			return nil
		}
		out, err := worker.Solve(ctx, e.spec, task, e.raster, nil, "black-hole")
		if err != nil {
			t.Error(err)
		}
		return &out
	})
	_, _, sum := e.mustRun()
	e.checkLost(sum, "no result after 2 deliveries")
}

// TestUnusableResultsAreSentAgain: results are data from the network. A rogue
// worker answers its first task with garbage, its second with a result for
// another window's shape, and takes its third without ever answering; an
// honest worker serves beside it. Each of those windows is sent again (the
// silent one after the deadline), the honest worker solves it, and the job
// ends with the labels of the local solve and nothing lost.
func TestUnusableResultsAreSentAgain(t *testing.T) {
	e := newEnv(t, "unusable", 40, 30, 3, 8)
	e.deadline = time.Second
	res, closeConn := e.connect("rogue")
	defer closeConn()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var taken atomic.Int32
	rogueDone := make(chan struct{})
	go func() {
		defer close(rogueDone)
		pullRaw(ctx, t, res, func(task protocol.WindowTask) ([]byte, bool) {
			switch taken.Add(1) {
			case 1:
				return []byte("not a result"), true
			case 2:
				wrong := protocol.WindowResult{Job: task.Job, Round: task.Round, Window: task.Window, Worker: "rogue", Vars: 1,
					Persistent: protocol.EncodeLabels([]int32{1}, e.spec.Labels), Relaxed: protocol.EncodeLabels([]int32{1}, e.spec.Labels)}
				data, err := protocol.Marshal(wrong)
				if err != nil {
					t.Error(err)
				}
				return data, true
			case 3:
				cancel() // the rogue leaves with its third task, taken and never answered
				return nil, true
			}
			return nil, false
		})
	}()
	pers, lab, sum := e.runThenWorker(rogueDone) // the rogue takes its three tasks first
	e.sameAsLocal(pers, lab)
	if sum.Lost != 0 || sum.Resent < 3 || sum.Rejected < 2 {
		t.Fatalf("lost %d %v, sent again %d, rejected %d: want nothing lost, 3 sent again, 2 rejected\nlog:\n%s", sum.Lost, sum.Errors, sum.Resent, sum.Rejected, e.log.String())
	}
	if !strings.Contains(e.log.String(), "its task left the queue without a result within 1s") {
		t.Errorf("the silent window was not sent again for its deadline:\n%s", e.log.String())
	}
}

// TestForgedRasterProofIsNotMerged: a rogue worker answers its first tasks with
// forged results — every node claimed persistent at label 0 without a proof, and
// the genuine result with one persistent label changed, its genuine proof
// attached — then leaves; an honest worker serves beside it. The coordinator
// re-checks every proof, rejects the forgeries and sends those windows again: the
// job ends with the labels of the local solve, nothing lost.
func TestForgedRasterProofIsNotMerged(t *testing.T) {
	e := newEnv(t, "forged-pbp", 40, 30, 3, 10)
	var made int
	forged, rogueDone := e.rogueWorker(4, func(ctx context.Context, task protocol.WindowTask) (*protocol.WindowResult, bool) {
		out, err := worker.Solve(ctx, e.spec, task, e.raster, nil, "rogue")
		if err != nil || len(out.Persistent.Data) == 0 {
			return &out, false // nothing free to forge in this window
		}
		vals, err := out.Persistent.DecodeMax(e.spec.Labels)
		if err != nil {
			t.Error(err)
			return nil, false
		}
		if made++; made%2 == 1 {
			for i := range vals {
				vals[i] = 1 // every node persistent at label 0
			}
			out.Proof = nil
		} else {
			k := slices.IndexFunc(vals, func(l int32) bool { return l > 0 })
			if k < 0 {
				k = 0
			}
			vals[k] = vals[k]%int32(e.spec.Labels) + 1
		}
		out.Persistent = protocol.EncodeLabels(vals, e.spec.Labels)
		return &out, true
	})
	pers, lab, sum := e.runThenWorker(rogueDone)
	e.sameAsLocal(pers, lab)
	e.checkForgeriesSentAgain(forged, 4, sum)
	if !strings.Contains(e.log.String(), "its proof does not hold") {
		t.Errorf("no proof named in the log:\n%s", e.log.String())
	}
}

// TestExhaustiveCertificateBombIsRefused: a rogue worker answers windows with
// their genuine claims and a proof whose certificate is "exhaustive" over 3^19
// ≈ 2^30 labelings of its persistent variables, its limit MaxInt (the attack as
// reported: an enumeration of minutes that held the coordinator's check, the
// job, its cancel and its shutdown for good), then 2^22 (a limit the format
// accepts). The checker's own bound refuses both at once — the first as it is
// decoded, the second before it enumerates: the windows are sent again and the
// job ends with the local labels.
func TestExhaustiveCertificateBombIsRefused(t *testing.T) {
	e := newEnv(t, "bomb-cert", 40, 30, 3, 10)
	var made int
	forged, rogueDone := e.rogueWorker(2, func(ctx context.Context, task protocol.WindowTask) (*protocol.WindowResult, bool) {
		out, err := worker.Solve(ctx, e.spec, task, e.raster, nil, "rogue")
		if err != nil || len(out.Proof) == 0 {
			return &out, false
		}
		proof, err := persistency.ReadResult(bytes.NewReader(out.Proof))
		if err != nil {
			t.Error(err)
			return nil, false
		}
		var x []int
		for v, l := range proof.Persistent {
			if l >= 0 && len(x) < 19 {
				x = append(x, l)
			} else {
				proof.Persistent[v] = -1
			}
		}
		if len(x) < 19 {
			return &out, false // too few persistent variables to make the bomb
		}
		proof.Elimination = nil
		proof.Certificate = &persistency.Certificate{Labeling: x, Exhaustive: true, Limit: persistency.MaxCheckEnumeration}
		if out.Proof, err = persistency.EncodeResult(proof); err != nil {
			t.Error(err)
			return nil, false
		}
		if made++; made == 1 {
			out.Proof = withLimit(t, out.Proof, x, math.MaxInt)
		}
		return &out, true
	})
	pers, lab, sum := e.runThenWorker(rogueDone)
	e.sameAsLocal(pers, lab)
	e.checkForgeriesSentAgain(forged, 2, sum)
	for _, why := range []string{"labelings (certificate limit), at most 4194304 possible", "a check enumerates at most 4194304 labelings"} {
		if !strings.Contains(e.log.String(), why) {
			t.Errorf("no refusal for %q in the log:\n%s", why, e.log.String())
		}
	}
}

// withLimit rewrites the limit of proof's exhaustive certificate, labeling x,
// to limit, which no writer of the format would write: a rogue's bytes.
func withLimit(t *testing.T, proof []byte, x []int, limit uint64) []byte {
	t.Helper()
	head := len("partopt persistency result\n") + 2 // the magic and version; the gzip member follows
	zr, err := gzip.NewReader(bytes.NewReader(proof[head:]))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cert := binary.AppendUvarint([]byte{2}, uint64(len(x))) // kind 2: exhaustive
	for _, l := range x {
		cert = binary.AppendVarint(cert, int64(l))
	}
	honest := binary.AppendUvarint(slices.Clone(cert), persistency.MaxCheckEnumeration)
	at := bytes.Index(body, honest)
	if at < 0 {
		t.Fatal("the certificate is not in the proof's body")
	}
	patched := slices.Concat(body[:at], binary.AppendUvarint(cert, limit), body[at+len(honest):])
	var out bytes.Buffer
	out.Write(proof[:head])
	zw := gzip.NewWriter(&out)
	zw.Write(patched)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// rogueWorker takes tasks on a connection of its own and answers each with
// forge's result until n of them are forgeries (forge's second result), then
// leaves; it returns the count of forgeries and a channel closed once it left.
func (e *env) rogueWorker(n int32, forge func(ctx context.Context, task protocol.WindowTask) (*protocol.WindowResult, bool)) (*atomic.Int32, <-chan struct{}) {
	res, closeConn := e.connect("rogue")
	ctx, cancel := context.WithCancel(context.Background())
	var forged atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closeConn()
		pullTasks(ctx, e.t, res, func(task protocol.WindowTask) *protocol.WindowResult {
			if forged.Load() >= n {
				cancel() // enough: the rogue leaves
				return nil
			}
			out, lie := forge(ctx, task)
			if lie {
				forged.Add(1)
			}
			return out
		})
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	return &forged, done
}

// checkForgeriesSentAgain checks that every one of at least min forgeries was
// rejected and its window sent again, nothing lost.
func (e *env) checkForgeriesSentAgain(forged *atomic.Int32, min int, sum coordinator.Summary) {
	e.t.Helper()
	if n := int(forged.Load()); n < min || sum.Lost != 0 || sum.Rejected != n || sum.Resent != n {
		e.t.Fatalf("%d forged; lost %d, rejected %d, sent again %d\nlog:\n%s", n, sum.Lost, sum.Rejected, sum.Resent, e.log.String())
	}
}

// TestReplacedStoredResultIsSentAgain: a garbage message that replaces a
// window's stored result in the results stream before its merge (the stream
// keeps one message per window) sends the window again instead of failing or
// stalling the job.
func TestReplacedStoredResultIsSentAgain(t *testing.T) {
	e := newEnv(t, "replaced", 40, 30, 3, 9)
	e.cacheBytes = 1 // every result is read again at its merge
	res, closeConn := e.connect("rogue")
	defer closeConn()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two slots of an honest worker, but for round 0's window 5, whose answer is
	// replaced by garbage once stored, and window 0, answered only after that,
	// so that window 5 waits for its merge with the garbage in its place.
	var once sync.Once
	replaced := make(chan struct{})
	answer := func(task protocol.WindowTask) *protocol.WindowResult {
		if task.Round == 0 && task.Window == 0 {
			select {
			case <-replaced:
			case <-ctx.Done():
				return nil
			}
		}
		out, err := worker.Solve(ctx, e.spec, task, e.raster, nil, "w")
		if err != nil {
			t.Error(err)
			return nil
		}
		first := false
		if task.Round == 0 && task.Window == 5 {
			once.Do(func() { first = true })
		}
		if !first {
			return &out
		}
		data, err := protocol.Marshal(out)
		if err != nil {
			t.Error(err)
		}
		subject := res.Names.ResultSubject(task.Job, task.Round, task.Window)
		res.JS.Publish(ctx, subject, data)
		time.Sleep(200 * time.Millisecond) // stored by the coordinator
		res.JS.Publish(ctx, subject, []byte("garbage"))
		close(replaced)
		return nil // unacked: delivered again later, or sent again first
	}
	go pullTasks(ctx, t, res, answer)
	go pullTasks(ctx, t, res, answer)
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	if sum.Lost != 0 || sum.Resent != 1 || !strings.Contains(e.log.String(), "its stored result is unusable at its merge") {
		t.Fatalf("lost %d %v, sent again %d: want window 0/5 sent again once, nothing lost\nlog:\n%s", sum.Lost, sum.Errors, sum.Resent, e.log.String())
	}
}

// TestFailingWindowIsReportedAsLost: a window whose solve fails on every delivery
// is reported by the worker on its last one; the coordinator lists it as lost
// with the worker's reason and finishes.
func TestFailingWindowIsReportedAsLost(t *testing.T) {
	e := newEnv(t, "fail", 40, 30, 3, 7)
	var poisoned sync.Map // slot → whether its task is round 0's window 3 (one slot)
	good := e.raster.Window
	bad := e.raster // the worker's; the coordinator checks the proofs on the good one
	bad.Model = nil // every window read by Window, as out of core
	bad.Window = func(x0, y0, w, h int) (*model.Model, error) {
		if v, _ := poisoned.Load(0); v == true {
			return nil, errors.New("disk on fire")
		}
		return good(x0, y0, w, h)
	}
	e.workerRaster = &bad
	e.startWorker("w", 1, func(task protocol.WindowTask) { poisoned.Store(0, task.Round == 0 && task.Window == 3) })
	pers, _, sum := e.mustRun()
	e.checkLost(sum, "disk on fire")
	wantP, _ := e.local()
	// The optimum of a random real-valued model is unique, so labels proven by
	// both runs agree.
	for i, p := range pers.Values {
		if p != 0 && wantP.Values[i] != 0 && p != wantP.Values[i] {
			t.Fatalf("pixel %d proven %d, the local solve proved %d", i, p-1, wantP.Values[i]-1)
		}
	}
}

// pullTasks is a hand-made worker on res until ctx ends: it answers each task
// with answer's result and acks it, or leaves it unanswered when answer
// returns nil.
func pullTasks(ctx context.Context, t *testing.T, res *cluster.Resources, answer func(protocol.WindowTask) *protocol.WindowResult) {
	pullRaw(ctx, t, res, func(task protocol.WindowTask) ([]byte, bool) {
		out := answer(task)
		if out == nil {
			return nil, false
		}
		data, err := protocol.Marshal(*out)
		if err != nil {
			t.Error(err)
			return nil, false
		}
		return data, true
	})
}

// pullRaw is pullTasks answering with raw bytes: answer returns what to publish
// on the task's result subject (nothing when nil) and whether to ack the task.
func pullRaw(ctx context.Context, t *testing.T, res *cluster.Resources, answer func(protocol.WindowTask) (data []byte, ack bool)) {
	pullMsgs(ctx, t, res, func(m jetstream.Msg, task protocol.WindowTask) bool {
		data, ack := answer(task)
		if data != nil {
			res.JS.Publish(ctx, res.Names.ResultSubject(task.Job, task.Round, task.Window), data)
		}
		if ack {
			m.Ack()
		}
		return true
	})
}

// pullMsgs takes the tasks one by one until ctx ends or handle, given each
// task's message and its decoded task, returns false.
func pullMsgs(ctx context.Context, t *testing.T, res *cluster.Resources, handle func(jetstream.Msg, protocol.WindowTask) bool) {
	for ctx.Err() == nil {
		batch, err := res.Workers.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			continue
		}
		for m := range batch.Messages() {
			task, err := protocol.Decode[protocol.WindowTask](m.Data(), protocol.MaxMessageBytes)
			if err != nil {
				t.Error(err)
				continue
			}
			if !handle(m, task) {
				return
			}
		}
	}
}

func (e *env) checkLost(sum coordinator.Summary, reason string) {
	e.t.Helper()
	if sum.Phase != "done" || sum.Lost != 1 || len(sum.LostWindows) != 1 || sum.LostWindows[0] != (coordinator.WindowID{Round: 0, Window: 3}) {
		e.t.Fatalf("phase %s, lost %d %v, want done with window 0/3 lost\nlog:\n%s", sum.Phase, sum.Lost, sum.LostWindows, e.log.String())
	}
	if len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0], "window 0/3") || !strings.Contains(sum.Errors[0], reason) {
		e.t.Fatalf("errors %q: want window 0/3's reason %q", sum.Errors, reason)
	}
}

// TestADeepQueueSendsNoTaskTwice: many windows, one slow worker slot and a
// coordinator deadline far shorter than the queue's wait and than some
// windows' solve (longer than the ack wait: the worker's heartbeats hold
// them). No task is sent again while it waits or is worked on: every window of
// every round is dispatched once and solved once.
func TestADeepQueueSendsNoTaskTwice(t *testing.T) {
	e := newEnv(t, "deep", 60, 60, 3, 21)
	e.deadline = 100 * time.Millisecond
	var taken atomic.Int32
	slow := e.startWorker("slow", 1, func(protocol.WindowTask) {
		if taken.Add(1)%7 == 0 {
			time.Sleep(2 * e.cfg.AckWait) // held by heartbeats alone
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	})
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	if sum.Resent != 0 || sum.Lost != 0 || sum.Rejected != 0 {
		t.Fatalf("sent again %d, lost %d, rejected %d: want none\nlog:\n%s", sum.Resent, sum.Lost, sum.Rejected, e.log.String())
	}
	if solved := slow.stats.Solved.Load(); solved != int64(sum.Dispatched) || int(taken.Load()) != sum.Dispatched {
		t.Fatalf("%d tasks dispatched, %d taken, %d solved: want each solved once\nlog:\n%s", sum.Dispatched, taken.Load(), solved, e.log.String())
	}
	if sum.Dispatched < 20 {
		t.Fatalf("%d tasks: the queue is not deep", sum.Dispatched)
	}
}

// TestAResultStoredBeforeACrashIsNotSolvedAgain: a worker publishes its first
// task's result and dies before its ack; the task comes back to the next
// worker, which finds its result stored and acks it without solving.
func TestAResultStoredBeforeACrashIsNotSolvedAgain(t *testing.T) {
	e := newEnv(t, "crashack", 40, 30, 3, 5)
	res, closeConn := e.connect("dying")
	defer closeConn()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dead := make(chan struct{})
	go func() {
		defer close(dead)
		pullMsgs(ctx, t, res, func(m jetstream.Msg, task protocol.WindowTask) bool {
			out, err := worker.Solve(ctx, e.spec, task, e.raster, nil, "dying")
			if err == nil {
				var data []byte
				if data, err = protocol.Marshal(out); err == nil {
					_, err = res.JS.Publish(ctx, res.Names.ResultSubject(task.Job, task.Round, task.Window), data,
						jetstream.WithMsgID(m.Headers().Get(jetstream.MsgIDHeader)))
				}
			}
			if err != nil {
				t.Error(err)
			}
			return false // dead before the ack
		})
	}()
	next := make(chan *testWorker, 1)
	go func() {
		<-dead
		// slow enough that the job outlasts the dying worker's ack wait
		next <- e.startWorker("next", 1, func(protocol.WindowTask) { time.Sleep(e.cfg.AckWait / 10) })
	}()
	pers, lab, sum := e.mustRun()
	e.sameAsLocal(pers, lab)
	w := <-next
	if sum.Workers["dying"].Windows != 1 || sum.Resent != 0 || w.stats.Answered.Load() != 1 || w.stats.Solved.Load()+1 != int64(sum.Dispatched) {
		t.Fatalf("workers %+v, %d dispatched, %d sent again, the next worker solved %d and answered %d without solving: want the dying worker's result merged, its task acked unsolved",
			sum.Workers, sum.Dispatched, sum.Resent, w.stats.Solved.Load(), w.stats.Answered.Load())
	}
}
