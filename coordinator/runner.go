package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// Stores are a job's labels (see partition.SolveRaster): Persistent holds label+1
// of proven pixels (the evidence before the job starts), Labeling receives the
// labeling, Scratch the labels fixed before the current round. A graph job's are
// Width×1 rasters, variable v at x = v.
type Stores struct{ Persistent, Labeling, Scratch partition.Store }

// MaxResultObject bounds a window's result read from the object store (its
// reference's declared size): a 512+32 window's proof is tens of MB.
const MaxResultObject = 1 << 30

// RunOptions configure a Runner.
type RunOptions struct {
	Log     *slog.Logger
	Metrics *Metrics // nil: not exported
	// Finish writes the outputs once the labels are final (Labeling holds the
	// proven labels where proven). Without it the caller writes them after Run
	// returns, and the stored status says "finishing" until the caller records
	// the end.
	Finish func(ctx context.Context, s Summary) error
	// CacheBytes bounds the decoded results held until their merge; beyond it a
	// result is read again from the results stream when its turn comes.
	CacheBytes int64
	// StatusEvery is how often long work on the runner's loop (a dispatch
	// of hundreds of tasks, a resumed round's merges reading their stored
	// results) stores the job's status; 0: every second.
	StatusEvery time.Duration
	// MaxMessage is the largest result message accepted (default
	// protocol.MaxMessageBytes).
	MaxMessage int
	// Resume continues a job that an earlier coordinator started (it crashed,
	// or the cluster restarted), on empty Stores: the results kept in the
	// results stream are merged again, round by round, in plan order, which
	// rebuilds the labels; windows without a usable result are dispatched.
	Resume bool
	// Model is a graph job's model, required for one (spec.Layout
	// protocol.LayoutGraph): the file's model conditioned on the job's
	// evidence, with spec.Width variables. The coordinator plans its rounds on
	// it (partition.RegionPlan) and reads the fixed labels of each window's
	// extent (partition.WindowExtent) for its task. An iri job needs it too.
	Model *model.Model
	// Raster is a raster job's model (pbp or iri), required for one: the
	// coordinator re-checks each window's proof on it
	// (partition.CheckRasterWindow, ProvenRasterElimination) before it merges
	// the window, so that no worker can get a false proof merged.
	Raster partition.Raster
	// Plan and MaxLevel are an iri job's plans over Model, by round and level
	// (partition.EliminateOptions's), required for one.
	Plan     func(round, level int) partition.Plan
	MaxLevel int
	// Domains, if set, are an iri job's labels alive before its first round
	// (partition.EliminateOptions's): what an earlier job in this process
	// proved. They live in memory only, so such a job does not resume.
	Domains [][]int
	// A raster iri job (spec.RasterIRI: a .grid eliminated out of core) needs
	// Raster (its windows' models, to re-check each proof on), its windows by
	// round and level (Windows, partition.RasterEliminateOptions's Plan) with
	// MaxLevel, and the labels alive: Alive, initialised by the caller
	// (partition.InitAlive: every label, or what an earlier stage proved),
	// and Prior, planes of the same size for the scratch copy of each round.
	// They stay on disk (label files): the coordinator's memory is the
	// windows in flight and bands, never the pixels. A resumed job starts on
	// planes initialised again, and the stored results merged again in plan
	// order rebuild them.
	Windows      func(round, level int) []partition.RasterWindow
	Alive, Prior partition.AliveLabels
	// Attempts bounds the dispatches of one window (default 3). A result is
	// data from the network: one that does not decode, does not match its task,
	// fails its proof check or reports an error, and a task that left the queue
	// without a result (see WindowDeadline), send the task again; the last
	// attempt's failure loses the window, with the reason.
	Attempts int
	// Proofs, if set, receives every merged window's proof, in merge order
	// (a windowed run's window certificates file, for a later verify).
	Proofs *partition.ProofWriter
	// WindowDeadline is how often a window without a result is looked at
	// (default 30 minutes). Its task is sent again only when it is truly
	// stuck: no longer in the tasks stream (a worker acked it, or terminated it,
	// without a result of it stored). A task still queued, or held by a worker
	// whose heartbeats (JetStream's in-progress acks) keep it, is left to
	// JetStream, which hands it to another worker when they stop: queue depth
	// and long windows never make a second copy.
	WindowDeadline time.Duration
	// OnPhase, if set, is called as the runner starts each dispatch
	// ("dispatching") and each merge ("merging"), on its loop: the fault
	// injection of failover tests (it may block; whatever the runner does
	// after it, with ctx cancelled meanwhile, must leave the job resumable).
	OnPhase func(phase string)
	// StatusAs, when set, is the job id under which the status is stored,
	// answered and exported (the job's own otherwise): a pbp+iri job's iri
	// stage runs as protocol.IRIStage(job) and shows as the job.
	StatusAs string
}

// Phases OnPhase reports (the service reports the others: PhaseLoading,
// PhaseFinishing, PhaseStoring).
const (
	PhaseDispatching = "dispatching"
	PhaseMerging     = "merging"
)

// Summary is a job's status with the totals a report needs.
type Summary struct {
	Status
	InFlight          int                   `json:"in_flight"`            // tasks dispatched and not answered in this round
	Dispatched        int                   `json:"dispatched"`           // tasks published over all rounds
	Skipped           int                   `json:"skipped"`              // windows not dispatched: nothing free in them
	Reused            int                   `json:"reused"`               // windows merged from results stored before a resume
	Solved            int                   `json:"solved"`               // windows whose result had a free variable
	MaxWindowVars     int                   `json:"max_window_variables"` // largest window model
	WindowSeconds     float64               `json:"window_seconds"`
	PruningIterations int                   `json:"pruning_iterations"`
	SolverIterations  int                   `json:"solver_iterations"`
	Rejected          int                   `json:"rejected"` // result messages rejected
	Resent            int                   `json:"resent"`   // tasks sent again: unusable results, failed proofs, deadlines
	Workers           map[string]WorkerSeen `json:"workers"`
	Errors            []string              `json:"errors"` // the latest permanent errors reported by workers
	LostWindows       []WindowID            `json:"lost_windows"`
	// Started is when the job was submitted (when its first coordinator
	// started, without a submission), kept across resumes; Resumes counts
	// them (the service's: a coordinator that takes the job over).
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	Resumes int       `json:"resumes,omitempty"`
	// Outputs are the output files of a finished job in the object store
	// (protocol.OutputObject), set by whoever uploaded them.
	Outputs []string `json:"outputs,omitempty"`
	// RoundReused counts the windows of round ReusedRound among Reused (see
	// ReusedInRound).
	RoundReused int `json:"-"`
	ReusedRound int `json:"-"`
}

// ReusedInRound is the number of the current round's windows merged from
// results stored before a resume: a resumed round's pace is in its others.
func (s Summary) ReusedInRound() int {
	if s.ReusedRound != s.Round {
		return 0
	}
	return s.RoundReused
}

// summaryJSON is Summary without its JSON methods.
type summaryJSON Summary

// MarshalJSON writes the summary in snake_case, its round counted from 1 as
// in the status line.
func (s Summary) MarshalJSON() ([]byte, error) {
	v := summaryJSON(s)
	v.Round++
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON writes, and the statuses stored before
// (Go field names, rounds from 0: "Phase" gives them away).
func (s *Summary) UnmarshalJSON(data []byte) error {
	var v summaryJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	v.Round = max(v.Round-1, 0)
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) == nil && keys["Phase"] != nil {
		var old legacySummary
		if err := json.Unmarshal(data, &old); err != nil {
			return err
		}
		v.Round, v.Rounds, v.WindowsTotal, v.Err = old.Round, old.Rounds, old.WindowsTotal, old.Err
		v.Proven, v.Pixels, v.Eliminated = old.Proven, old.Pixels, old.Eliminated
		v.InFlight, v.MaxWindowVars, v.WindowSeconds = old.InFlight, old.MaxWindowVars, old.WindowSeconds
		v.PruningIterations, v.SolverIterations = old.PruningIterations, old.SolverIterations
		v.LostWindows = nil
		for _, w := range old.LostWindows {
			v.LostWindows = append(v.LostWindows, WindowID(w))
		}
	}
	*s = Summary(v)
	return nil
}

// legacySummary are the fields of a stored status of before snake_case whose
// names changed (the others match whatever their case).
type legacySummary struct {
	Round, Rounds, WindowsTotal, InFlight, MaxWindowVars, PruningIterations, SolverIterations int
	Err                                                                                       string
	Proven, Pixels, Eliminated                                                                int64
	WindowSeconds                                                                             float64
	LostWindows                                                                               []struct{ Round, Window int }
}

// WorkerSeen is what the coordinator knows of a worker: the results it sent.
type WorkerSeen struct {
	Windows  int       `json:"windows"`
	LastSeen time.Time `json:"last_seen"`
}

// Runner drives one Job over NATS: it publishes the tasks, collects results and
// errors through the job's own durable consumer, watches for tasks that exhausted
// their deliveries, merges results in plan order into the Stores and calls Finish.
// All of Job's actions are performed on one goroutine, in order.
type Runner struct {
	res    *cluster.Resources
	spec   protocol.JobSpec
	job    *Job
	queue  []Action
	stores Stores
	graph  *model.Model // a graph job's model; nil for a raster job
	opt    RunOptions
	log    *slog.Logger
	m      *Metrics

	// Per round: windows not dispatched (no free node, merged as empty) and
	// the arrived results, decoded while the cache has room. Results stay in
	// the results stream until the job ends: a resumed job merges them again.
	skipped map[int]bool
	cached  map[int]decoded
	cache   int64
	// An iri job's domains and labeling (merged in plan order), and the work of
	// each window of the round, as dispatched.
	merger *partition.Merger
	works  map[int]partition.WindowWork
	// A raster iri job's labels alive, on disk (RunOptions.Alive), and its
	// summary once Finish ran.
	rmerger *partition.RasterMerger
	rres    *partition.RasterEliminationResult
	// iri results whose proofs are being checked (check), the checks' outcomes,
	// and the slots bounding them; done is closed when Run returns.
	checking   map[WindowID]bool
	checks     chan checked
	checkSlots chan struct{}
	done       chan struct{}
	cancels    chan string
	// epoch makes this runner's task message ids its own: a resumed job's
	// tasks must not be dropped as duplicates of its predecessor's.
	epoch string
	// The dispatches of each window; when the current round's windows were
	// last sent or found alive (their deadline runs from there), and their
	// live task's sequence in the tasks stream and message id.
	attempts map[WindowID]int
	sentAt   map[int]time.Time
	tasks    map[int]liveTask

	live Summary // the loop's counters; snapshot publishes them as sum
	// prior is the status the job's predecessor stored, shown (phase
	// PhaseResuming) while a resumed job merges its stored results again,
	// until its own counts reach it or a window it solved itself merges
	// (caughtUp); replayed are the current round's windows merged again.
	prior    *Summary
	replayed map[int]bool
	statusAt time.Time // when the status was last stored
	mu       sync.Mutex
	sum      Summary
}

// PhaseResuming is the phase a resumed job shows while it merges the results
// stored before its coordinator changed, with the counts last stored.
const PhaseResuming = "resuming"

// NewRunner prepares a job; proven is the number of pixels fixed in
// stores.Persistent before round 0.
func NewRunner(res *cluster.Resources, spec protocol.JobSpec, proven int64, stores Stores, opt RunOptions) (*Runner, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Metrics == nil {
		opt.Metrics = noMetrics()
	}
	if opt.CacheBytes == 0 {
		opt.CacheBytes = 512 << 20
	}
	if opt.StatusEvery <= 0 {
		opt.StatusEvery = time.Second
	}
	if opt.MaxMessage <= 0 {
		opt.MaxMessage = protocol.MaxMessageBytes
	}
	if opt.Attempts <= 0 {
		opt.Attempts = 3
	}
	if opt.WindowDeadline <= 0 {
		opt.WindowDeadline = 30 * time.Minute
	}
	var job *Job
	var actions []Action
	var merger *partition.Merger
	var rmerger *partition.RasterMerger
	switch {
	case spec.RasterIRI():
		if r := opt.Raster; r.Window == nil || r.Width != spec.Width || r.Height != spec.Height || opt.Windows == nil {
			return nil, fmt.Errorf("raster iri job %s of %d×%d pixels: the runner needs its model and windows (RunOptions.Raster, Windows)", spec.Job, spec.Width, spec.Height)
		}
		if opt.Alive.Labels > spec.Labels {
			return nil, fmt.Errorf("raster iri job %s of %d labels: alive planes of %d", spec.Job, spec.Labels, opt.Alive.Labels)
		}
		var err error
		if rmerger, err = partition.NewRasterMerger(spec.Width, spec.Height, opt.Alive, opt.Prior, stores.Labeling); err != nil {
			return nil, err
		}
		job, actions = NewRasterEliminationJob(spec, rmerger.Persistent(), opt.MaxLevel, opt.Windows)
	case spec.IRI():
		m := opt.Model
		if m == nil || m.NumVars() != spec.Width || opt.Plan == nil {
			return nil, fmt.Errorf("iri job %s of %d variables: the runner needs its model and plans (RunOptions.Model, Plan)", spec.Job, spec.Width)
		}
		var err error
		if merger, err = partition.NewMergerFrom(m, opt.Domains); err != nil {
			return nil, err
		}
		job, actions = NewEliminationJob(spec, int64(merger.Persistent()), opt.MaxLevel, opt.Plan)
	case spec.Layout == protocol.LayoutGraph:
		m := opt.Model
		if m == nil || m.NumVars() != spec.Width {
			return nil, fmt.Errorf("graph job %s of %d variables: the runner needs its model (RunOptions.Model)", spec.Job, spec.Width)
		}
		job, actions = NewGraphJob(spec, proven, func(round int) partition.Plan {
			return partition.RegionPlan(m, spec.Core, spec.Halo, partition.RegionShift(round, spec.Core))
		})
	default:
		if r := opt.Raster; r.Window == nil || r.Width != spec.Width || r.Height != spec.Height {
			return nil, fmt.Errorf("raster job %s of %d×%d pixels: the runner needs its model to check the windows' proofs (RunOptions.Raster)", spec.Job, spec.Width, spec.Height)
		}
		job, actions = NewJob(spec, proven)
	}
	r := &Runner{res: res, spec: spec, job: job, queue: actions, stores: stores, graph: opt.Model, opt: opt, merger: merger, rmerger: rmerger,
		log: opt.Log.With("job", spec.Job), m: opt.Metrics, cancels: make(chan string, 8),
		checking: map[WindowID]bool{}, checks: make(chan checked), checkSlots: make(chan struct{}, runtime.GOMAXPROCS(0)), done: make(chan struct{}),
		attempts: map[WindowID]int{}, sentAt: map[int]time.Time{}, tasks: map[int]liveTask{}, replayed: map[int]bool{}}
	r.live.Workers = map[string]WorkerSeen{}
	r.live.Started = time.Now()
	r.snapshot()
	return r, nil
}

// Summary returns the job's latest status (safe from any goroutine).
func (r *Runner) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sum.clone()
}

// Shown returns the job's status as status readers get it (safe from any
// goroutine): while a resumed job merges its stored results again, its
// predecessor's last counts in phase PhaseResuming; a done job whose caller
// writes the outputs, finishing.
func (r *Runner) Shown() Summary { return r.shown() }

// clone copies s with its own maps and slices.
func (s Summary) clone() Summary {
	c := s
	c.Workers = make(map[string]WorkerSeen, len(s.Workers))
	for k, v := range s.Workers {
		c.Workers[k] = v
	}
	c.Errors = append([]string(nil), s.Errors...)
	c.LostWindows = append([]WindowID(nil), s.LostWindows...)
	c.Outputs = append([]string(nil), s.Outputs...)
	return c
}

// Cancel asks the job to stop (it ends as canceled, with reason in its status);
// safe from any goroutine, before or during Run.
func (r *Runner) Cancel(reason string) {
	select {
	case r.cancels <- reason:
	default: // a cancel is pending already
	}
}

// Run runs the job to its end: done, cancelled (Runner.Cancel) or failed. It
// returns when the job is terminal, or with ctx's error when ctx ends first; the
// job's tasks and results then stay in JetStream (RunOptions.Resume continues it).
func (r *Runner) Run(ctx context.Context) (Summary, error) {
	defer r.m.Forget(r.statusJob()) // the job's series end with its run
	if err := r.res.PutJobSpec(ctx, r.spec); err != nil {
		return r.Summary(), fmt.Errorf("storing the job spec: %w", err)
	}
	r.epoch = strconv.FormatInt(time.Now().UnixNano(), 36)
	r.continueStory(ctx)
	if r.opt.Resume {
		// Start over on the job's messages: the results are read again from the
		// beginning, the tasks queued by the predecessor are replaced.
		if err := r.res.Results.DeleteConsumer(ctx, r.res.Names.CoordinatorConsumer(r.spec.Job)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return r.Summary(), err
		}
		if err := r.res.Tasks.Purge(ctx, jetstream.WithPurgeSubject(r.res.Names.TaskSubject(r.spec.Job))); err != nil {
			return r.Summary(), err
		}
		r.log.Info("resuming the job from its stored results")
	}
	iter, err := r.consumeResults(ctx)
	if err != nil {
		return r.Summary(), err
	}
	msgs, stopped := make(chan jetstream.Msg, 256), make(chan struct{})
	var iterMu sync.Mutex // iter: the goroutine replaces it, Run stops it
	go func() {
		defer close(msgs)
		for {
			iterMu.Lock()
			it := iter
			iterMu.Unlock()
			m, err := it.Next()
			if err != nil {
				if it, err = r.resumeResults(ctx, err, stopped); err != nil {
					return
				}
				iterMu.Lock()
				select {
				case <-stopped: // Run returned while it was taken up
					it.Stop()
					iterMu.Unlock()
					return
				default:
				}
				iter = it
				iterMu.Unlock()
				continue
			}
			select {
			case msgs <- m:
			case <-stopped: // Run returned; the message is redelivered to a successor
				return
			}
		}
	}()
	defer func() {
		close(stopped)
		iterMu.Lock()
		iter.Stop()
		iterMu.Unlock()
	}()
	defer close(r.done)

	nc := r.res.Conn
	advisories := make(chan *nats.Msg, 1024)
	adv, err := nc.ChanSubscribe(r.res.Names.MaxDeliveriesAdvisory(), advisories)
	if err != nil {
		return r.Summary(), err
	}
	defer adv.Unsubscribe()
	status, err := nc.Subscribe(r.res.Names.StatusSubject(r.statusJob()), func(m *nats.Msg) {
		data, _ := json.Marshal(r.shown())
		m.Respond(data)
	})
	if err != nil {
		return r.Summary(), err
	}
	defer status.Unsubscribe()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := r.perform(ctx); err != nil {
			if ctx.Err() != nil {
				return r.Summary(), ctx.Err() // stopped, not failed: the job can resume
			}
			r.apply(Fail{Reason: err.Error()})
			r.perform(ctx) // the purge
		}
		if r.job.Phase.Terminal() {
			if r.job.Phase != Done || r.opt.Finish != nil {
				r.cleanup(ctx)
			} // else the caller writes the outputs, then calls Cleanup: until then a resume needs the results
			r.publishStatus(ctx)
			sum := r.Summary()
			if r.job.Phase != Done {
				return sum, fmt.Errorf("job %s %s: %s", r.spec.Job, r.job.Phase, r.job.Err)
			}
			return sum, nil
		}
		select {
		case <-ctx.Done():
			r.publishStatus(context.WithoutCancel(ctx))
			return r.Summary(), ctx.Err()
		case m, ok := <-msgs:
			if !ok {
				return r.Summary(), errors.New("the results consumer stopped")
			}
			r.onResult(ctx, m)
		case c := <-r.checks:
			r.onChecked(c)
		case m := <-advisories:
			r.onAdvisory(ctx, m)
		case reason := <-r.cancels:
			r.log.Info("job cancelled", "reason", reason)
			r.apply(Cancel{Reason: "cancelled: " + reason})
		case now := <-tick.C:
			r.overdue(ctx, now)
			r.publishStatus(ctx)
		}
	}
}

// consumeResults creates (or finds) the job's durable consumer of results
// and iterates its messages.
func (r *Runner) consumeResults(ctx context.Context) (jetstream.MessagesContext, error) {
	cons, err := r.res.Results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:        r.res.Names.CoordinatorConsumer(r.spec.Job),
		FilterSubjects: []string{r.res.Names.ResultFilter(r.spec.Job), r.res.Names.ErrorSubject(r.spec.Job)},
		AckPolicy:      jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxAckPending: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("results consumer: %w", err)
	}
	return cons.Messages(jetstream.PullMaxMessages(256))
}

// resumeResults takes the results consumer up again after its iterator ended
// with cause while the run goes on — the consumer deleted under it, a server's
// hiccup under a starved machine — retrying every few seconds; the results it
// had acknowledged come again and count as duplicates. It gives up (an error)
// when Run returned (stopped), ctx ended or the connection is closed.
func (r *Runner) resumeResults(ctx context.Context, cause error, stopped <-chan struct{}) (jetstream.MessagesContext, error) {
	for wait := time.Duration(0); ; wait = min(max(2*wait, time.Second), 15*time.Second) {
		select {
		case <-stopped:
			return nil, cause
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		select { // Run returning stops the iterator: no loss to take up
		case <-stopped:
			return nil, cause
		default:
		}
		if r.res.Conn.IsClosed() {
			return nil, cause
		}
		r.log.Warn("the results consumer stopped: taking it up again", "err", cause)
		it, err := r.consumeResults(ctx)
		if err == nil {
			return it, nil
		}
		cause = err
	}
}

// continueStory carries the job's story over from the status stored before
// this runner: its submission time and resume count, and for a resumed job
// the counts shown while its stored results are merged again.
func (r *Runner) continueStory(ctx context.Context) {
	e, err := r.res.Jobs.Get(ctx, protocol.JobStatusKey(r.statusJob()))
	if err != nil {
		return
	}
	var prev Summary
	if json.Unmarshal(e.Value(), &prev) != nil || ended(prev.Phase) {
		return // another job's of the same id, ended
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !prev.Started.IsZero() && prev.Started.Before(r.live.Started) {
		r.live.Started = prev.Started
	}
	r.live.Resumes = prev.Resumes // counted by whoever resumes the job
	if r.opt.Resume {
		r.prior = &prev
	}
	r.sum.Started, r.sum.Resumes = r.live.Started, r.live.Resumes
}

// ended says whether a stored phase is final.
func ended(phase string) bool {
	return phase == Done.String() || phase == Canceled.String() || phase == Failed.String()
}

// credit counts a merged window's result to the worker that sent it.
func (r *Runner) credit(worker string, at time.Time) {
	ws := r.live.Workers[worker]
	ws.Windows++
	ws.LastSeen = at
	r.live.Workers[worker] = ws
}

// apply feeds an event to the job and queues its actions.
func (r *Runner) apply(ev Event) {
	r.queue = append(r.queue, r.job.Apply(ev)...)
}

// statusJob is the job id the status is stored and answered under.
func (r *Runner) statusJob() string {
	if r.opt.StatusAs != "" {
		return r.opt.StatusAs
	}
	return r.spec.Job
}

// onPhase reports a phase to RunOptions.OnPhase.
func (r *Runner) onPhase(phase string) {
	if r.opt.OnPhase != nil {
		r.opt.OnPhase(phase)
	}
}

// perform carries out the queued actions (and those they lead to) in order.
func (r *Runner) perform(ctx context.Context) error {
	for len(r.queue) > 0 {
		r.statusDue(ctx)
		a := r.queue[0]
		r.queue = r.queue[1:]
		err := r.do(ctx, a)
		var bad unusableStored
		if errors.As(err, &bad) {
			// A stored result replaced or unreadable by its merge: the window
			// waits for a new one, and the merges after it come again in order.
			r.queue = slices.DeleteFunc(r.queue, func(a Action) bool { _, merge := a.(Merge); return merge })
			delete(r.replayed, bad.id.Window) // its new result is this job's own
			r.apply(Requeue(bad.id))
			r.retry(bad.id, bad.Error())
			continue
		}
		if err != nil {
			return err
		}
	}
	r.snapshot()
	return nil
}

// resend: publish the task of a window again (Runner.retry).
type resend struct{ WindowID }

func (resend) action() {}

// unusableStored is a merge's failure to read a stored result it was told of.
type unusableStored struct {
	id  WindowID
	err error
}

func (u unusableStored) Error() string {
	return fmt.Sprintf("window %d/%d: its stored result is unusable at its merge: %v", u.id.Round, u.id.Window, u.err)
}

// retry sends window id's task again after a failure (reason), or loses the
// window when its attempts are spent. Only a window still waiting for its result
// is sent again.
func (r *Runner) retry(id WindowID, reason string) {
	if !r.job.current(id) || r.job.State[id.Window] != Queued || r.checking[id] {
		return
	}
	if n := r.attempts[id]; n >= r.opt.Attempts {
		r.lose(id, fmt.Sprintf("%s (after %d attempts)", reason, n))
		return
	}
	r.log.Warn("sending a window again", "round", id.Round+1, "window", id.Window, "attempt", r.attempts[id]+1, "why", reason)
	r.sentAt[id.Window] = time.Now() // not again before the resend is out
	r.queue = append(r.queue, resend{id})
}

// overdueChecks bounds the windows overdue looks at in one tick, so that a
// deep queue reaching its deadline at once never stalls the loop.
const overdueChecks = 64

// liveTask is a window's task in the tasks stream.
type liveTask struct {
	seq   uint64 // its stream sequence (0: not known)
	msgID string
}

// overdue looks at the windows of the round without a result WindowDeadline
// after they were sent or last found alive, and sends again those whose task
// is truly stuck: gone from the tasks stream (acked or terminated by a worker)
// with no result of that task stored. A task still in the stream is queued or
// worked on (JetStream redelivers it when its worker's heartbeats stop), and a
// stored result of it is merely waiting for this loop: both get a new deadline.
func (r *Runner) overdue(ctx context.Context, now time.Time) {
	checked := 0
	for i, at := range r.sentAt {
		if now.Sub(at) <= r.opt.WindowDeadline || checked == overdueChecks {
			continue
		}
		checked++
		id := WindowID{r.job.Round, i}
		if r.alive(ctx, id) {
			r.sentAt[i] = now
			continue
		}
		r.retry(id, fmt.Sprintf("window %d/%d: its task left the queue without a result within %v", id.Round, id.Window, r.opt.WindowDeadline))
	}
}

// alive says whether window id's live task is still in the tasks stream, or
// its result is stored (unread yet). When JetStream cannot tell, it is alive:
// a doubt never makes a copy.
func (r *Runner) alive(ctx context.Context, id WindowID) bool {
	t, ok := r.tasks[id.Window]
	if !ok || t.seq == 0 {
		return true // not yet acknowledged by the server
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := r.res.Tasks.GetMsg(ctx, t.seq)
	if err == nil {
		return raw.Subject == r.res.Names.TaskSubject(r.spec.Job)
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return true
	}
	res, err := r.res.Results.GetLastMsgForSubject(ctx, r.res.Names.ResultSubject(r.spec.Job, id.Round, id.Window))
	if err != nil {
		return !errors.Is(err, jetstream.ErrMsgNotFound)
	}
	return res.Header.Get(jetstream.MsgIDHeader) == t.msgID
}

func (r *Runner) do(ctx context.Context, a Action) error {
	w, h := r.spec.Width, r.spec.Height
	switch a := a.(type) {
	case PrepareRound:
		for len(r.checking) > 0 { // a lost window's check reads the fixed labels (or scratch planes) about to change
			select {
			case c := <-r.checks:
				r.onChecked(c)
			case <-ctx.Done(): // checks waiting for their turn were dropped (Runner.check)
				return ctx.Err()
			}
		}
		switch {
		case r.merger != nil:
			r.merger.StartRound(a.Round)
			r.works = map[int]partition.WindowWork{}
		case r.rmerger != nil:
			if err := r.rmerger.StartRound(a.Round); err != nil {
				return fmt.Errorf("preparing round %d: %w", a.Round, err)
			}
		default:
			if _, err := partition.CopyStore(r.stores.Scratch, r.stores.Persistent, w, h); err != nil {
				return fmt.Errorf("preparing round %d: %w", a.Round, err)
			}
		}
		r.skipped, r.cached, r.cache, r.sentAt, r.tasks = map[int]bool{}, map[int]decoded{}, 0, map[int]time.Time{}, map[int]liveTask{}
		r.replayed = map[int]bool{}
		r.apply(RoundPrepared{Round: a.Round})
	case Dispatch:
		r.onPhase(PhaseDispatching)
		return r.dispatch(ctx, a)
	case resend:
		if !r.job.current(a.WindowID) || r.job.State[a.Window] != Queued {
			return nil // its result came meanwhile
		}
		f, err := r.publish(ctx, a.WindowID)
		if err != nil || f == nil {
			return err
		}
		r.live.Resent++
		return r.awaitPublished(ctx, *f)
	case Merge:
		r.onPhase(PhaseMerging)
		return r.merge(ctx, a)
	case Finish:
		switch {
		case r.rmerger != nil:
			// The labeling within the labels alive, the persistent map from them.
			res, err := r.rmerger.Finish(r.stores.Persistent)
			if err != nil {
				return fmt.Errorf("finishing the elimination: %w", err)
			}
			r.rres = res
		case r.merger == nil:
			if err := partition.OverrideLabels(r.stores.Labeling, r.stores.Persistent, w, h); err != nil {
				return err
			}
		}
		r.snapshot()
		if r.opt.Finish != nil {
			if err := r.opt.Finish(ctx, r.Summary()); err != nil {
				return fmt.Errorf("writing the outputs: %w", err)
			}
		}
		r.apply(OutputsWritten{})
	case Purge:
		if err := r.res.Tasks.Purge(ctx, jetstream.WithPurgeSubject(r.res.Names.TaskSubject(r.spec.Job))); err != nil {
			r.log.Warn("purging the job's tasks", "err", err)
		}
	}
	return nil
}

// dispatch publishes the round's tasks, each with the fixed labels around its
// window. A window whose nodes are all fixed is not sent: it is merged as empty,
// as SolveWindow would answer it.
func (r *Runner) dispatch(ctx context.Context, a Dispatch) error {
	stored, err := r.storedResults(ctx, a.Round)
	if err != nil {
		return err
	}
	var futures []published
	for _, i := range a.Windows {
		r.statusDue(ctx)
		if stored[r.res.Names.ResultSubject(r.spec.Job, a.Round, i)] {
			// Solved before a restart: merged again from the stream, read and
			// checked by its merge (Runner.prefetch, in parallel), sent again
			// if unusable there.
			r.replayed[i] = true
			r.apply(ResultStored{Round: a.Round, Window: i})
			continue
		}
		f, err := r.publish(ctx, WindowID{a.Round, i})
		if err != nil {
			return err
		}
		if f != nil {
			futures = append(futures, *f)
		}
	}
	if err := r.awaitPublished(ctx, futures...); err != nil {
		return err
	}
	r.log.Info("round dispatched", "round", a.Round+1, "windows", len(a.Windows), "tasks", len(futures), "persistent_variables", r.live.Proven)
	return nil
}

// published is a task publication under way.
type published struct {
	window int
	msgID  string
	f      jetstream.PubAckFuture
}

// awaitPublished waits for the server to acknowledge the publications, and
// records each task's stream sequence (what overdue looks for).
func (r *Runner) awaitPublished(ctx context.Context, futures ...published) error {
	for _, p := range futures {
		select {
		case ack := <-p.f.Ok():
			r.tasks[p.window] = liveTask{seq: ack.Sequence, msgID: p.msgID}
		case err := <-p.f.Err():
			return fmt.Errorf("publishing a task: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// publish publishes the task of window id (its attempt counted, its deadline
// started) and returns the publication under way; a window without a free
// node is not sent but merged as empty (nil).
func (r *Runner) publish(ctx context.Context, id WindowID) (*published, error) {
	task, objects, free, err := r.prepare(id)
	if err != nil {
		return nil, err
	}
	if !free {
		r.skipped[id.Window] = true
		r.live.Skipped++
		r.m.Skipped.Inc()
		r.apply(ResultStored(id))
		return nil, nil
	}
	for _, o := range objects {
		if err := r.res.PutBytes(ctx, o.name, o.content); err != nil {
			return nil, err
		}
	}
	data, err := protocol.Marshal(task)
	if err != nil {
		return nil, err
	}
	r.attempts[id]++
	msgID := protocol.TaskMsgID(r.spec.Job, id.Round, id.Window, r.epoch+"-"+strconv.Itoa(r.attempts[id])) // a resend is no duplicate
	f, err := r.res.JS.PublishAsync(r.res.Names.TaskSubject(r.spec.Job), data, jetstream.WithMsgID(msgID))
	if err != nil {
		return nil, fmt.Errorf("publishing task %d: %w", id.Window, err)
	}
	r.sentAt[id.Window] = time.Now()
	r.tasks[id.Window] = liveTask{msgID: msgID}
	r.live.Dispatched++
	r.m.Dispatched.Inc()
	return &published{id.Window, msgID, f}, nil
}

// storedResults lists the result subjects of a round already in the results
// stream (a resumed job's), none for a job that is new.
func (r *Runner) storedResults(ctx context.Context, round int) (map[string]bool, error) {
	if !r.opt.Resume {
		return nil, nil
	}
	info, err := r.res.Results.Info(ctx, jetstream.WithSubjectFilter(r.res.Names.ResultRoundFilter(r.spec.Job, round)))
	if err != nil {
		return nil, fmt.Errorf("listing stored results: %w", err)
	}
	out := make(map[string]bool, len(info.State.Subjects))
	for s := range info.State.Subjects {
		out[s] = true
	}
	return out, nil
}

// object is content the object store must hold before a task is published.
type object struct {
	name    string
	content []byte
}

// prepare returns the task of window id with the labels fixed around it (inline,
// or in the objects to store first), and whether the window has a free node.
func (r *Runner) prepare(id WindowID) (protocol.WindowTask, []object, bool, error) {
	if r.merger != nil {
		return r.eliminationTask(id)
	}
	if r.rmerger != nil {
		return r.rasterEliminationTask(id)
	}
	if r.graph != nil {
		return r.graphTask(id)
	}
	task := r.task(id)
	fixed, content, free, err := r.fixed(task)
	if err != nil {
		return task, nil, false, err
	}
	var objects []object
	if fixed != nil && fixed.Data.Object != "" {
		objects = append(objects, object{fixed.Data.Object, content})
	}
	task.Fixed = fixed
	return task, objects, free, nil
}

// graphTask is prepare for a graph window: its node list and the labels fixed
// over its extent (partition.WindowExtent, what SolveGraphWindow conditions on),
// both inline while the task stays within half the server's message limit, else
// both in the object store.
func (r *Runner) graphTask(id WindowID) (protocol.WindowTask, []object, bool, error) {
	win := r.job.Regions[id.Window]
	ext := partition.WindowExtent(r.graph, win.Nodes)
	vals := make([]int32, len(ext))
	if err := partition.ReadVars(r.stores.Scratch, ext, vals); err != nil {
		return protocol.WindowTask{}, nil, false, err
	}
	free, any := false, false
	j := 0
	for i, v := range ext {
		if vals[i] != 0 {
			any = true
			continue
		}
		for j < len(win.Nodes) && win.Nodes[j] < v {
			j++
		}
		free = free || (j < len(win.Nodes) && win.Nodes[j] == v)
	}
	if !free {
		return protocol.WindowTask{}, nil, false, nil
	}
	nodes := encodeNodes(win.Nodes, r.spec.Width)
	var fixed protocol.Labels
	if any {
		fixed = protocol.EncodeLabels(vals, r.spec.Labels)
	}
	limit := int(r.res.Conn.MaxPayload() / 2)
	if len(nodes.Data)+len(fixed.Data) > limit {
		limit = 0 // both to the object store
	}
	job := r.spec.Job
	g := &protocol.GraphWindow{Nodes: protocol.NewValues(nodes, protocol.NodesObject(job, id.Round, id.Window), limit)}
	var objects []object
	if g.Nodes.Data.Object != "" {
		objects = append(objects, object{g.Nodes.Data.Object, nodes.Data})
	}
	if any {
		f := protocol.NewValues(fixed, protocol.FixedObject(job, id.Round, id.Window), limit)
		g.Fixed = &f
		if f.Data.Object != "" {
			objects = append(objects, object{f.Data.Object, fixed.Data})
		}
	}
	return protocol.WindowTask{Job: job, Round: id.Round, Window: id.Window, Graph: g}, objects, true, nil
}

// encodeNodes packs a node list of a model of n variables.
func encodeNodes(nodes []int, n int) protocol.Labels {
	vals := make([]int32, len(nodes))
	for i, v := range nodes {
		vals[i] = int32(v)
	}
	return protocol.EncodeLabels(vals, max(n-1, 0))
}

// fixed reads the labels fixed around a task's window (its nodes grown by two
// pixels, what SolveWindow conditions on), with their content for the object
// store, and says whether a node is free.
func (r *Runner) fixed(task protocol.WindowTask) (*protocol.Fixed, []byte, bool, error) {
	n := task.Nodes
	e := protocol.Rect{X0: max(n.X0-2, 0), Y0: max(n.Y0-2, 0)}
	e.W, e.H = min(n.X0+n.W+2, r.spec.Width)-e.X0, min(n.Y0+n.H+2, r.spec.Height)-e.Y0
	vals := make([]int32, e.Pixels())
	if err := r.stores.Scratch.ReadRect(e.X0, e.Y0, e.W, e.H, vals); err != nil {
		return nil, nil, false, err
	}
	free, any := false, false
	for i, v := range vals {
		if v != 0 {
			any = true
			continue
		}
		if x, y := e.X0+i%e.W, e.Y0+i/e.W; x >= n.X0 && x < n.X0+n.W && y >= n.Y0 && y < n.Y0+n.H {
			free = true
		}
	}
	if !free || !any {
		return nil, nil, free, nil
	}
	labels := protocol.EncodeLabels(vals, r.spec.Labels)
	// Inline only while the task stays within half the server's message limit.
	limit := int(r.res.Conn.MaxPayload() / 2)
	f := protocol.NewFixedWithin(e, labels, protocol.FixedObject(task.Job, task.Round, task.Window), limit)
	return &f, labels.Data, true, nil
}

// onResult handles a message of the job's results consumer: a result, a result
// reference or a worker's error.
func (r *Runner) onResult(ctx context.Context, m jetstream.Msg) {
	msg, err := protocol.Unmarshal(m.Data(), r.opt.MaxMessage)
	if err != nil {
		r.reject(m, "", err)
		return
	}
	var (
		job, worker string
		id          WindowID
		load        func() (protocol.WindowResult, error) // the result, read by its check
	)
	switch v := msg.(type) {
	case protocol.WindowResult:
		job, worker, id = v.Job, v.Worker, WindowID{v.Round, v.Window}
		load = func() (protocol.WindowResult, error) { return v, nil }
	case protocol.ResultRef:
		job, worker, id = v.Job, v.Worker, WindowID{v.Round, v.Window}
		load = func() (protocol.WindowResult, error) {
			res, err := r.readRef(ctx, v)
			if err != nil {
				err = fmt.Errorf("result object %s: %w", v.Result.Object, err)
			}
			return res, err
		}
	case protocol.Error:
		m.Ack()
		r.log.Error("worker reported an error", "worker", v.Worker, "round", v.Round+1, "window", v.Window, "permanent", v.Permanent, "err", v.Message)
		if v.Permanent && v.Window >= 0 {
			r.retry(WindowID{v.Round, v.Window}, fmt.Sprintf("window %d/%d on %s: %s", v.Round, v.Window, v.Worker, v.Message))
		}
		return
	default:
		r.reject(m, fmt.Sprintf("a %T on the results subject", msg), nil)
		return
	}
	if job != r.spec.Job {
		r.reject(m, fmt.Sprintf("a %T of another job", msg), nil)
		return
	}
	// A result not awaited — of another round, stored already or being
	// checked — is a duplicate, known before a referenced object is read (a
	// resumed job's consumer meets every stored result again).
	if !r.job.current(id) || r.job.State[id.Window] != Queued || r.checking[id] {
		m.Ack()
		r.m.Duplicates.Inc()
		r.apply(ResultStored(id)) // counted as a duplicate
		return
	}
	r.check(ctx, m, id, worker, load) // stored by onChecked
}

// stored keeps a decoded result of a current window until its merge, acks its
// message and reports it stored.
func (r *Runner) stored(m jetstream.Msg, id WindowID, worker string, dec decoded) {
	delete(r.sentAt, id.Window)
	r.keep(id.Window, dec)
	r.credit(worker, time.Now())
	r.m.WindowSeconds.Observe(dec.Seconds)
	r.log.Debug("window result stored", "round", id.Round+1, "window", id.Window, "worker", worker, "seconds", dec.Seconds)
	m.Ack()
	r.apply(ResultStored(id))
}

// keep caches a decoded result until its merge, while the cache has room.
func (r *Runner) keep(i int, dec decoded) {
	if size := dec.size(); r.cache+size <= r.opt.CacheBytes {
		r.cached[i] = dec
		r.cache += size
	}
}

// reject drops a message that can never be merged, with a logged error.
func (r *Runner) reject(m jetstream.Msg, what string, err error) {
	r.live.Rejected++
	r.m.Rejected.Inc()
	r.log.Error("rejected result message", "subject", m.Subject(), "bytes", len(m.Data()), "what", what, "err", err)
	m.Term()
}

// lose marks a window of the current round lost, with the reason in the status.
func (r *Runner) lose(id WindowID, reason string) {
	if r.job.current(id) && r.job.State[id.Window] == Queued {
		r.m.Lost.Inc()
		r.live.Errors = append(r.live.Errors, reason)
		if len(r.live.Errors) > 20 {
			r.live.Errors = r.live.Errors[len(r.live.Errors)-20:]
		}
	}
	r.apply(DeliveriesExhausted(id))
}

// advisory is the part of JetStream's max-deliveries advisory used here.
type advisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// onAdvisory reports a task of this job that exhausted its deliveries: its
// window is lost (and listed), the task removed from the queue.
func (r *Runner) onAdvisory(ctx context.Context, m *nats.Msg) {
	var a advisory
	if err := json.Unmarshal(m.Data, &a); err != nil || a.Stream != r.res.Names.StreamTasks() {
		r.log.Warn("unreadable max-deliveries advisory", "err", err)
		return
	}
	raw, err := r.res.Tasks.GetMsg(ctx, a.StreamSeq)
	if err != nil {
		return // another job's, already removed
	}
	task, err := protocol.Decode[protocol.WindowTask](raw.Data, protocol.MaxMessageBytes)
	if err != nil || task.Job != r.spec.Job {
		return
	}
	r.log.Error("task exhausted its deliveries; its window is lost", "round", task.Round+1, "window", task.Window, "deliveries", a.Deliveries)
	r.lose(WindowID{task.Round, task.Window}, fmt.Sprintf("window %d/%d: no result after %d deliveries", task.Round, task.Window, a.Deliveries))
	r.res.Tasks.DeleteMsg(ctx, a.StreamSeq)
}

// merge merges a window's result into the stores, in plan order.
func (r *Runner) merge(ctx context.Context, a Merge) error {
	start := time.Now()
	i := a.Window
	var added int64
	var eliminated int64
	if !a.Empty && !r.skipped[i] {
		dec, ok := r.cached[i]
		if !ok {
			if err := r.prefetch(ctx, a.WindowID); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return unusableStored{a.WindowID, err}
			}
			dec = r.cached[i]
		}
		delete(r.cached, i)
		r.cache -= dec.size()
		if r.replayed[i] {
			r.credit(dec.worker, time.Now())
			if r.live.ReusedRound != a.Round {
				r.live.ReusedRound, r.live.RoundReused = a.Round, 0
			}
			r.live.Reused++
			r.live.RoundReused++
		}
		res := dec.WindowResult
		var err error
		switch {
		case r.merger != nil:
			before := r.merger.Persistent()
			eliminated = int64(r.merger.Merge(r.job.Regions[i], r.work(i), dec.elim))
			added = int64(r.merger.Persistent() - before)
		case r.rmerger != nil:
			before := r.rmerger.Persistent()
			eliminated, err = r.rmerger.Merge(dec.rwork, dec.relim)
			added = r.rmerger.Persistent() - before
		case r.graph != nil:
			added, err = partition.MergeGraphWindow(r.job.Regions[i], res, r.stores.Persistent, r.stores.Labeling)
		default:
			added, err = partition.MergeWindow(r.job.Windows[i], res, r.stores.Persistent, r.stores.Labeling)
		}
		if err == nil && r.opt.Proofs != nil && dec.proof != nil {
			err = r.recordProof(a.WindowID, dec)
		}
		if err != nil {
			return fmt.Errorf("merging window %d/%d: %w", a.Round, i, err)
		}
		if !r.replayed[i] {
			r.endResume() // the job goes on past what its predecessor did
		}
		if res.Vars > 0 {
			r.live.Solved++
		}
		r.live.MaxWindowVars = max(r.live.MaxWindowVars, res.Vars)
		r.live.WindowSeconds += res.Seconds
		r.live.PruningIterations += res.PruningIterations
		r.live.SolverIterations += res.SolverIterations
	}
	r.m.Merged.Inc()
	r.m.MergeSeconds.Observe(time.Since(start).Seconds())
	r.log.Debug("window merged", "round", a.Round+1, "window", a.Window, "persistent_added", added, "seconds", time.Since(start).Seconds())
	r.apply(MergeDone{WindowID: a.WindowID, Added: added, Eliminated: eliminated})
	return nil
}

// recordProof writes window id's proof to RunOptions.Proofs.
func (r *Runner) recordProof(id WindowID, dec decoded) error {
	switch {
	case r.merger != nil:
		return r.opt.Proofs.Elimination(id.Round, r.work(id.Window).Nodes, dec.proof)
	case r.rmerger != nil:
		return r.opt.Proofs.Elimination(id.Round, dec.rwork.Nodes, dec.proof)
	case r.graph != nil:
		return r.opt.Proofs.Graph(id.Round, r.job.Regions[id.Window].Nodes, dec.proof)
	}
	return r.opt.Proofs.Raster(id.Round, r.job.Windows[id.Window].Nodes, dec.proof)
}

// prefetch reads and checks window id's stored result into the cache, and
// with it, in parallel, those of the next merges queued whose results are not
// cached (a resumed round's: every one of them), as many as there are check
// slots. A resumed job's replay is this: at 10⁸ pixels, reading and checking
// hundreds of stored results one by one took most of a failover's 20 minutes.
// A lookahead window whose result is unusable is left out: its own merge reads
// it again and fails.
func (r *Runner) prefetch(ctx context.Context, id WindowID) error {
	ids := []WindowID{id}
	for _, a := range r.queue {
		if len(ids) == cap(r.checkSlots) {
			break
		}
		m, ok := a.(Merge)
		if !ok || m.Empty || r.skipped[m.Window] {
			continue
		}
		if _, cached := r.cached[m.Window]; !cached && m.WindowID != id {
			ids = append(ids, m.WindowID)
		}
	}
	decs, errs := make([]decoded, len(ids)), make([]error, len(ids))
	var wg sync.WaitGroup
	for k, w := range ids {
		decode := r.decoder(w) // on this goroutine: it may fill r.works
		wg.Go(func() {
			select {
			case r.checkSlots <- struct{}{}:
			case <-ctx.Done():
				errs[k] = ctx.Err()
				return
			}
			defer func() { <-r.checkSlots }()
			decs[k], errs[k] = r.fetch(ctx, w, decode)
		})
	}
	wg.Wait()
	for k, w := range ids {
		if errs[k] == nil {
			r.cached[w.Window] = decs[k]
			r.cache += decs[k].size()
		}
	}
	return errs[0]
}

// fetch reads a stored result again from the results stream and decodes it
// (Runner.decoder); safe on any goroutine.
func (r *Runner) fetch(ctx context.Context, id WindowID, decode func(protocol.WindowResult) (decoded, error)) (decoded, error) {
	raw, err := r.res.Results.GetLastMsgForSubject(ctx, r.res.Names.ResultSubject(r.spec.Job, id.Round, id.Window))
	if err != nil {
		return decoded{}, fmt.Errorf("reading the result of window %d/%d: %w", id.Round, id.Window, err)
	}
	msg, err := protocol.Unmarshal(raw.Data, r.opt.MaxMessage)
	if err != nil {
		return decoded{}, err
	}
	var res protocol.WindowResult
	switch v := msg.(type) {
	case protocol.WindowResult:
		res = v
	case protocol.ResultRef:
		if res, err = r.readRef(ctx, v); err != nil {
			return decoded{}, err
		}
	default:
		return decoded{}, fmt.Errorf("window %d/%d: a %T where its result was", id.Round, id.Window, msg)
	}
	return decode(res)
}

// readRef reads the result a ResultRef points to, checked against its size and
// CRC32C.
func (r *Runner) readRef(ctx context.Context, ref protocol.ResultRef) (protocol.WindowResult, error) {
	if !protocol.IsResultObject(ref.Result.Object, r.spec.Job, ref.Round, ref.Window) {
		return protocol.WindowResult{}, fmt.Errorf("window %d/%d: %q is not one of its result objects", ref.Round, ref.Window, ref.Result.Object)
	}
	if ref.Result.Size > MaxResultObject {
		return protocol.WindowResult{}, fmt.Errorf("a result object of %d bytes, at most %d", ref.Result.Size, int64(MaxResultObject))
	}
	data, err := r.res.GetBytes(ctx, ref.Result.Object, ref.Result.Size)
	if err == nil {
		err = ref.Result.Verify(data)
	}
	if err != nil {
		return protocol.WindowResult{}, err
	}
	return protocol.Decode[protocol.WindowResult](data, int(ref.Result.Size))
}

// task is the task message of window id of the current round, without fixed
// labels (a graph window's with its node list inline): what a result is checked
// against.
func (r *Runner) task(id WindowID) protocol.WindowTask {
	if r.graph != nil {
		nodes := encodeNodes(r.job.Regions[id.Window].Nodes, r.spec.Width)
		g := &protocol.GraphWindow{Nodes: protocol.NewValues(nodes, protocol.NodesObject(r.spec.Job, id.Round, id.Window), protocol.InlineLimit)}
		return protocol.WindowTask{Job: r.spec.Job, Round: id.Round, Window: id.Window, Graph: g}
	}
	win := r.job.Windows[id.Window]
	return protocol.WindowTask{Job: r.spec.Job, Round: id.Round, Window: id.Window, Core: protocol.Rect(win.Core), Nodes: protocol.Rect(win.Nodes)}
}

// snapshot publishes the job's state and the loop's counters as the summary
// others read.
func (r *Runner) snapshot() {
	st := r.job.Status()
	st.Job = r.statusJob()
	r.live.Status = st
	r.live.InFlight = 0
	if r.job.Dispatched {
		r.live.InFlight = st.Queued
	}
	r.live.LostWindows = append(r.live.LostWindows[:0], r.job.Lost...)
	r.live.Updated = time.Now()
	c := r.live.clone()
	r.m.job(r.statusJob(), c)
	r.mu.Lock()
	r.sum = c
	if p := r.prior; p != nil && caughtUp(c, *p) {
		r.prior = nil
	}
	r.mu.Unlock()
}

// caughtUp says whether a resumed job's counts s reached those its
// predecessor stored (prior), or it ended: from there on they are shown.
func caughtUp(s, prior Summary) bool {
	return ended(s.Phase) || s.Round > prior.Round || s.Round == prior.Round && s.Merged >= prior.Merged
}

// endResume ends the showing of the prior status: the stored results are
// merged again up to where the job goes on.
func (r *Runner) endResume() {
	r.mu.Lock()
	r.prior = nil
	r.mu.Unlock()
}

// shown is the Summary that status readers get: a done job whose caller writes
// the outputs after Run (RunOptions.Finish unset) is finishing until the caller
// records its end with the outputs listed; a resumed job shows the status its
// predecessor stored while it merges the stored results again.
func (r *Runner) shown() Summary {
	r.mu.Lock()
	prior := r.prior
	r.mu.Unlock()
	s := r.Summary()
	if prior != nil && !ended(s.Phase) {
		p := prior.clone()
		p.Phase, p.Updated, p.Started, p.Resumes, p.InFlight = PhaseResuming, s.Updated, s.Started, s.Resumes, 0
		return p
	}
	if s.Phase == Done.String() && r.opt.Finish == nil {
		s.Phase = Finishing.String()
	}
	return s
}

// publishStatus sends the job's Progress and stores its status in the jobs
// bucket, where `partopt status` finds it when no coordinator answers.
func (r *Runner) publishStatus(ctx context.Context) {
	r.statusAt = time.Now()
	s := r.shown()
	p := protocol.Progress{Job: r.statusJob(), Round: s.Round, Done: s.Merged, Total: s.Windows, InFlight: s.InFlight, Failed: s.Lost, Persistent: s.Proven}
	if data, err := protocol.Marshal(p); err == nil {
		r.res.Conn.Publish(r.res.Names.ProgressSubject(r.statusJob()), data)
	}
	data, err := json.Marshal(s)
	if err == nil {
		_, err = r.res.Jobs.Put(ctx, protocol.JobStatusKey(r.statusJob()), data)
	}
	if err != nil && ctx.Err() == nil {
		r.log.Warn("storing the job status", "err", err)
	}
}

// statusDue stores the status when StatusEvery has passed since it was last:
// a resumed round's merges and a dispatch run for minutes at 10⁸ pixels, and
// meanwhile no reader should take the coordinator for dead.
func (r *Runner) statusDue(ctx context.Context) {
	if time.Since(r.statusAt) >= r.opt.StatusEvery {
		r.snapshot()
		r.publishStatus(ctx)
	}
}

// Cleanup removes what a done job left in JetStream, once the caller has written
// its outputs (RunOptions.Finish unset); Run does it itself otherwise.
func (r *Runner) Cleanup(ctx context.Context) { r.cleanup(ctx) }

// cleanup removes what the job left in JetStream: its consumer, stored results,
// fixed-label and result objects, queued tasks (the model, evidence and
// outputs stay).
func (r *Runner) cleanup(ctx context.Context) {
	job := r.spec.Job
	r.res.PurgeJob(ctx, job, func(name string) bool {
		return name == protocol.ModelObject(job) || name == protocol.EvidenceObject(job) || isOutput(job, name)
	})
}

func isOutput(job, name string) bool {
	p := protocol.OutputObject(job, "")
	return len(name) >= len(p) && name[:len(p)] == p
}
