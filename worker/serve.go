package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/protocol"
)

// Options configure Serve.
type Options struct {
	// ID names the worker in results and logs (default host-pid).
	ID string
	// Slots is the number of tasks solved at once (default 1).
	Slots int
	// Grace is how long running tasks may go on after ctx is cancelled before
	// they are stopped and handed back (nak'ed) for another worker.
	Grace time.Duration
	// Models opens a raster job's model (default ObjectModels into CacheDir).
	Models ModelOpener
	// Graphs loads a graph job's model (default ObjectGraphs through CacheDir).
	Graphs GraphOpener
	// SharedRoots are the directories below which the default openers read a
	// job's shared model path (SharedPath); none: only uploaded models.
	SharedRoots []string
	// CacheDir receives downloaded models (default a directory in os.TempDir).
	CacheDir string
	// MaxMessage is the largest task accepted (default protocol.MaxMessageBytes).
	MaxMessage int
	Log        *slog.Logger
	// OnTask, if set, is called when a slot starts solving a task (tests).
	OnTask func(protocol.WindowTask)
	// Observe, if set, is told the seconds of each window solved (metrics).
	Observe func(seconds float64)
}

// Stats count a worker's tasks.
type Stats struct {
	// Solved tasks were answered with a result; Rejected ones were malformed,
	// oversized or of another protocol version (terminated); Failed ones got an
	// error (handed back, or reported as permanent on their last delivery);
	// Returned ones were handed back at shutdown; Answered ones already had
	// their result stored (redelivered after a worker published it and died
	// before its ack) and were acked without solving.
	Solved, Rejected, Failed, Returned, Answered atomic.Int64
	// Busy is the number of slots solving a task now.
	Busy atomic.Int64
}

// fetchWait bounds a pull request, so that a slot notices shutdown.
const fetchWait = 5 * time.Second

// Serve pulls tasks from the shared workers consumer, one per slot (a fetch of
// one, so the ack clock starts when the work starts), until ctx is cancelled.
// While a task is solved it sends InProgress every AckWait/3; the result is
// published with its Nats-Msg-Id (protocol.MsgID), so a repeat is dropped, and
// only then is the task acked. A worker may start or stop at any time: a task it
// does not ack is delivered again, to any worker.
func Serve(ctx context.Context, res *cluster.Resources, o Options, stats *Stats) error {
	if o.ID == "" {
		host, _ := os.Hostname()
		o.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = protocol.MaxMessageBytes
	}
	if stats == nil {
		stats = &Stats{}
	}
	dir := o.CacheDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "partopt-worker-"+o.ID)
	}
	if o.Models == nil {
		o.Models = ObjectModels(res, dir, o.SharedRoots)
	}
	if o.Graphs == nil {
		o.Graphs = ObjectGraphs(res, dir, o.SharedRoots)
	}
	w := &server{res: res, o: o, stats: stats, models: newModelCache(openJobModel(o.Models, o.Graphs), 2), specs: map[string]protocol.JobSpec{}}
	defer w.models.close()
	o.Log.Info("worker serving", "worker", o.ID, "slots", max(o.Slots, 1))
	var wg sync.WaitGroup
	for range max(o.Slots, 1) {
		wg.Go(func() { w.slot(ctx) })
	}
	wg.Wait()
	return nil
}

type server struct {
	res    *cluster.Resources
	o      Options
	stats  *Stats
	models *modelCache

	mu    sync.Mutex
	specs map[string]protocol.JobSpec
}

func (w *server) slot(ctx context.Context) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, fetchWait)
		batch, err := w.res.Workers.Fetch(1, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				w.o.Log.Warn("fetching a task", "err", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		for m := range batch.Messages() {
			w.handle(ctx, m)
		}
		cancel()
	}
}

// handle solves one task message and answers it: ack after the result is
// published, nak to hand it back, term when it can never succeed.
func (w *server) handle(ctx context.Context, m jetstream.Msg) {
	log := w.o.Log.With("worker", w.o.ID, "subject", m.Subject())
	task, err := protocol.Decode[protocol.WindowTask](m.Data(), w.o.MaxMessage)
	if err != nil {
		w.stats.Rejected.Add(1)
		log.Error("rejected task message", "bytes", len(m.Data()), "err", err)
		m.TermWithReason("rejected: " + err.Error())
		return
	}
	log = log.With("job", task.Job, "round", task.Round+1, "window", task.Window)
	msgID := resultMsgID(m, task.Job, task.Round, task.Window)
	if w.answered(ctx, task, msgID) {
		w.stats.Answered.Add(1)
		log.Debug("the task's result is stored already; acked without solving")
		m.Ack()
		return
	}
	delivered := uint64(1)
	if md, err := m.Metadata(); err == nil {
		delivered = md.NumDelivered
	}
	// The solve outlives ctx by Grace: a shutdown lets a nearly done task finish.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	after := context.AfterFunc(ctx, func() { time.AfterFunc(w.o.Grace, stop) })
	defer after()
	hb := w.heartbeat(m)
	defer hb()
	if w.o.OnTask != nil {
		w.o.OnTask(task)
	}
	w.stats.Busy.Add(1)
	defer w.stats.Busy.Add(-1)
	start := time.Now()
	out, err := w.solve(sctx, task)
	if err == nil {
		err = w.publish(sctx, out, msgID, protocol.AttemptResultObject(out.Job, out.Round, out.Window, msgID))
	}
	hb()
	switch {
	case err == nil:
		if err := m.DoubleAck(sctx); err != nil {
			log.Warn("ack of a published result failed; the task will be redelivered and its result dropped as a duplicate", "err", err)
		}
		w.stats.Solved.Add(1)
		seconds := time.Since(start).Seconds()
		if w.o.Observe != nil {
			w.o.Observe(seconds)
		}
		log.Debug("window solved", "seconds", seconds, "delivery", delivered)
	case sctx.Err() != nil:
		w.stats.Returned.Add(1)
		log.Info("handing the task back at shutdown")
		m.Nak()
	case delivered < uint64(w.res.Config.MaxDeliver):
		w.stats.Failed.Add(1)
		log.Warn("task failed; handing it back for another attempt", "delivery", delivered, "err", err)
		m.NakWithDelay(time.Second)
	default:
		w.stats.Failed.Add(1)
		log.Error("task failed on its last delivery; reporting it", "delivery", delivered, "err", err)
		w.report(sctx, task, err)
		m.TermWithReason(err.Error())
	}
}

// heartbeat sends InProgress every AckWait/3 until the returned stop is called.
func (w *server) heartbeat(m jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(max(w.res.Config.AckWait/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				m.InProgress()
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

func (w *server) solve(ctx context.Context, task protocol.WindowTask) (protocol.WindowResult, error) {
	spec, err := w.spec(ctx, task.Job)
	if err != nil {
		return protocol.WindowResult{}, err
	}
	jm, err := w.models.get(ctx, spec)
	if err != nil {
		return protocol.WindowResult{}, fmt.Errorf("model of job %s: %w", spec.Job, err)
	}
	defer w.models.put(modelKey(spec))
	if spec.RasterIRI() {
		return w.solveRasterElimination(ctx, spec, task, jm.raster)
	}
	if spec.IRI() {
		return w.solveElimination(ctx, spec, task, jm.graph)
	}
	if task.Graph != nil || spec.Layout == protocol.LayoutGraph {
		return w.solveGraph(ctx, spec, task, jm.graph)
	}
	var fixed []byte
	if f := task.Fixed; f != nil && f.Data.Object != "" {
		if fixed, err = w.res.GetBytes(ctx, f.Data.Object, f.Data.Size); err != nil {
			return protocol.WindowResult{}, fmt.Errorf("fixed labels %s: %w", f.Data.Object, err)
		}
	}
	return Solve(ctx, spec, task, jm.raster, fixed, w.o.ID)
}

// solveGraph fetches a graph window's objects (its node list and fixed labels, when
// too large for the task) and solves it.
func (w *server) solveGraph(ctx context.Context, spec protocol.JobSpec, task protocol.WindowTask, m *model.Model) (protocol.WindowResult, error) {
	if task.Graph == nil || m == nil {
		return protocol.WindowResult{}, fmt.Errorf("task %s/%d/%d: a raster window of a graph job, or a graph window of a raster job", task.Job, task.Round, task.Window)
	}
	g := task.Graph
	nodes, err := w.graphObject(ctx, g.Nodes.Data, int64(spec.Width)*int64(g.Nodes.Width), "node list")
	if err != nil {
		return protocol.WindowResult{}, err
	}
	var fixed []byte
	if g.Fixed != nil {
		// The extent cannot exceed the model.
		if fixed, err = w.graphObject(ctx, g.Fixed.Data, int64(spec.Width)*int64(g.Fixed.Width), "fixed labels"); err != nil {
			return protocol.WindowResult{}, err
		}
	}
	return SolveGraph(ctx, spec, task, m, nodes, fixed, w.o.ID)
}

// graphObject fetches a graph window's payload when it is an object (nil when
// inline), refusing one larger than limit bytes before the download.
func (w *server) graphObject(ctx context.Context, p protocol.Payload, limit int64, what string) ([]byte, error) {
	if p.Object == "" {
		return nil, nil
	}
	if p.Size > limit {
		return nil, fmt.Errorf("%s %s of %d bytes, more than the model can need (%d)", what, p.Object, p.Size, limit)
	}
	data, err := w.res.GetBytes(ctx, p.Object, p.Size)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, p.Object, err)
	}
	return data, nil
}

// spec returns a job's spec, cached.
func (w *server) spec(ctx context.Context, job string) (protocol.JobSpec, error) {
	w.mu.Lock()
	s, ok := w.specs[job]
	w.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := w.res.JobSpec(ctx, job)
	if err != nil {
		return s, err
	}
	w.mu.Lock()
	if len(w.specs) >= 64 {
		clear(w.specs)
	}
	w.specs[job] = s
	w.mu.Unlock()
	return s, nil
}

// resultMsgID is the message id of the result of task message m: the task's own
// (protocol.TaskMsgID: a redelivery's result is dropped as a duplicate, a task
// the coordinator sent again gets its result through), else the window's.
func resultMsgID(m jetstream.Msg, job string, round, window int) string {
	if h := m.Headers(); h != nil {
		if id := h.Get(jetstream.MsgIDHeader); id != "" {
			return id
		}
	}
	return protocol.MsgID(job, round, window)
}

// answered says whether the result of the task of message id msgID is in the
// results stream already: then solving it again would only make a duplicate.
func (w *server) answered(ctx context.Context, task protocol.WindowTask, msgID string) bool {
	if protocol.ValidateJob(task.Job) != nil {
		return false // not a subject token: the solve rejects it
	}
	ctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	raw, err := w.res.Results.GetLastMsgForSubject(ctx, w.res.Names.ResultSubject(task.Job, task.Round, task.Window))
	return err == nil && raw.Header.Get(jetstream.MsgIDHeader) == msgID
}

// publish sends the result on its subject with message id msgID, through the
// object store (as object) when the message would exceed the server's limit.
func (w *server) publish(ctx context.Context, out protocol.WindowResult, msgID, object string) error {
	data, err := protocol.Marshal(out)
	if err != nil {
		return err
	}
	if int64(len(data)) > w.res.Conn.MaxPayload()-4096 { // room for the headers
		if err := w.res.PutBytes(ctx, object, data); err != nil {
			return err
		}
		ref := protocol.ResultRef{Job: out.Job, Round: out.Round, Window: out.Window, Worker: out.Worker,
			Result: protocol.Payload{Object: object, Size: int64(len(data)), CRC32C: protocol.CRC32C(data)}}
		if data, err = protocol.Marshal(ref); err != nil {
			return err
		}
	}
	_, err = w.res.JS.Publish(ctx, w.res.Names.ResultSubject(out.Job, out.Round, out.Window), data, jetstream.WithMsgID(msgID))
	return err
}

// report publishes a permanent error of a task, so the coordinator lists the
// window as lost with the reason.
func (w *server) report(ctx context.Context, task protocol.WindowTask, cause error) {
	msg := protocol.Error{Job: task.Job, Round: task.Round, Window: task.Window, Worker: w.o.ID, Message: cause.Error(), Permanent: true}
	data, err := protocol.Marshal(msg)
	if err == nil {
		_, err = w.res.JS.Publish(ctx, w.res.Names.ErrorSubject(task.Job), data)
	}
	if err != nil {
		w.o.Log.Error("reporting a failed task", "job", task.Job, "round", task.Round, "window", task.Window, "err", errors.Join(err, cause))
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
