package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/internal/redact"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/replica"
	"github.com/partopt/partopt/worker"
)

// Config configures a coordinator service.
type Config struct {
	// Res are the cluster's resources (cluster.DialWaiting).
	Res *cluster.Resources
	// Data receives each job's model, label files and outputs, in
	// Data/jobs/JOB (JobsDir): a directory of jobs alone, so that no job id
	// names anything else of Data's (its raft directory, Data/raft by default).
	Data string
	// Raft, when set, makes this coordinator one replica of a group: the job
	// table is replicated with raft and only the leader runs the jobs. Nil: a
	// single coordinator, its job table in the key-value bucket.
	Raft *replica.Config
	// HTTP, when set, serves the status page and /metrics there.
	HTTP string
	// AdvertiseHTTP is the URL at which the other replicas reach this one's
	// page ("": its --http address, or this host's name and its port where it
	// listens on every interface). A follower's page serves the leader's.
	AdvertiseHTTP string
	// SharedRoots are the directories below which a job's shared model path
	// may lie (worker.SharedPath); none: only uploaded models are accepted.
	SharedRoots []string
	// DataRetention is how long a finished job's files stay in Data (0: they
	// go when it ends; its outputs are in the object store). Files of jobs
	// that are not running, left by a crash or a failed download, go too.
	DataRetention time.Duration
	// OutputRetention is how long a finished job's outputs stay in the object
	// store for fetch (0: until deleted); then they go and its status says so.
	OutputRetention time.Duration
	// JobRetention is how long a finished job is kept at all (0: until
	// deleted); then the leader deletes it as partopt delete does.
	JobRetention time.Duration
	Log          *slog.Logger // nil: slog.Default()
	// OnPhase, if set, is called as a job enters each phase on this
	// coordinator — PhaseLoading, coordinator.PhaseDispatching and
	// PhaseMerging (each dispatch and merge; "iri/dispatching" and
	// "iri/merging" in a pbp+iri job's second stage), PhaseFinishing (writing
	// the outputs), PhaseStoring (after the first output is stored),
	// PhaseEnded (the end recorded, the final status not yet stored) — on the
	// job's goroutine: the fault injection of failover tests, which stop a
	// leader at a phase. It may block.
	OnPhase func(job, phase string)
}

// Phases of a job on its coordinator, told to Config.OnPhase.
const (
	PhaseLoading   = "loading"
	PhaseFinishing = "finishing"
	PhaseStoring   = "storing"
	PhaseEnded     = "ended" // the end recorded in the job table; its final status not yet stored
)

// Serve runs the jobs submitted to the cluster until ctx ends: alone, or as a
// raft replica that runs them while it leads (a new leader resumes them from
// what JetStream kept). Unfinished jobs of the table are resumed at start.
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	jobs := filepath.Join(cfg.Data, JobsDir)
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		return err
	}
	s := &service{onPhase: cfg.OnPhase, res: cfg.Res, data: jobs, retention: cfg.DataRetention, outputRetention: cfg.OutputRetention, jobRetention: cfg.JobRetention, sharedRoots: cfg.SharedRoots, jobs: map[string]*serviceJob{}, log: cfg.Log, table: kvTable{cfg.Res}}
	if cfg.Raft != nil {
		s.raftDir = cfg.Raft.Dir
	}
	gauges.add(s) // the cluster's gauges, while it serves
	defer gauges.remove(s)
	if cfg.HTTP != "" {
		note := func(msg string) { cfg.Log.Info(msg) }
		page := &coordinator.StatusPage{Jobs: s.views}
		if cfg.Raft != nil {
			page.Leader = s.leaderPage
		}
		bound, _, err := servePage(ctx, cfg.HTTP, note, page)
		if err != nil {
			return err
		}
		self := cfg.AdvertiseHTTP
		if self == "" {
			self = pageURL(bound)
		}
		if err := protocol.CheckPageURL(self); err != nil {
			return fmt.Errorf("--advertise-http: %w", err)
		}
		s.selfPage.Store(&self)
	}
	if cfg.Raft == nil {
		s.log.Info("coordinator ready", "nats", redact.URL(s.res.Conn.ConnectedUrl()), "data", cfg.Data)
		return s.lead(ctx)
	}
	rep, err := replica.Open(*cfg.Raft)
	if err != nil {
		return err
	}
	defer rep.Close()
	s.table = raftTable{rep: rep, res: s.res}
	s.rep.Store(rep)
	s.log.Info("coordinator replica ready", "id", cfg.Raft.ID, "raft", cfg.Raft.Bind, "nats", redact.URL(s.res.Conn.ConnectedUrl()), "data", cfg.Data)
	return s.follow(ctx, rep, cfg.Raft.ID)
}

// service is a coordinator's state: the jobs it runs.
type service struct {
	res             *cluster.Resources
	data            string
	retention       time.Duration // of a finished job's files in data
	outputRetention time.Duration // of a finished job's outputs in the object store
	jobRetention    time.Duration // of a finished job
	raftDir         string        // the replica's raft files, when in data
	sharedRoots     []string
	log             *slog.Logger
	table           jobTable
	onPhase         func(job, phase string)
	// The raft replica, when one, and this coordinator's status page URL,
	// when it serves one: set while the page already serves requests.
	rep      atomic.Pointer[replica.Replica]
	selfPage atomic.Pointer[string]

	mu   sync.Mutex
	jobs map[string]*serviceJob
	wg   sync.WaitGroup
}

type serviceJob struct {
	runner   *coordinator.Runner   // the current stage's
	stages   []*coordinator.Runner // every stage's (pbp+iri: two)
	png      func(w io.Writer, maxSide int) error
	final    *coordinator.Summary
	stop     context.CancelFunc // ends the job before its runner exists
	canceled string             // the reason, when cancelled before its runner existed
	settled  chan struct{}      // closed when run has returned (its end recorded)
}

func newServiceJob(stop context.CancelFunc) *serviceJob {
	return &serviceJob{stop: stop, settled: make(chan struct{})}
}

// follow runs the jobs while this replica leads, and stops them when it no
// longer does (the new leader resumes them).
//
// A replica that does not lead runs no job, so the job directories in its data
// are left from when it led (killed, or its leadership lost) and are pruned as
// a leader prunes those of ended jobs: at 10⁸ pixels each holds gigabytes of
// label files and outputs, and the job goes on elsewhere.
func (s *service) follow(ctx context.Context, rep *replica.Replica, id string) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	s.pruneData()
	for {
		for !rep.IsLeader() {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		if err := rep.Barrier(30 * time.Second); err != nil {
			s.log.Warn("raft barrier", "err", err)
			continue
		}
		s.log.Info("leading", "id", id)
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.lead(lctx) }()
		for rep.IsLeader() && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		cancel()
		if err := <-done; err != nil {
			s.log.Error("leading", "err", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		s.log.Info("no longer leading", "id", id)
		s.pruneData() // lead has returned: none of its jobs runs here any more
	}
}

// lead takes submissions and cancels, resumes the unfinished jobs, and runs
// jobs until ctx ends; then it waits for them to stop.
func (s *service) lead(ctx context.Context) error {
	sub, err := s.res.Conn.QueueSubscribe(s.res.Names.SubjectSubmit(), "partopt-coordinators", func(m *nats.Msg) { s.submit(ctx, m) })
	if err != nil {
		return err
	}
	csub, err := s.res.Conn.Subscribe(s.res.Names.CancelSubject("*"), s.cancel)
	if err != nil {
		sub.Unsubscribe()
		return err
	}
	dsub, err := s.res.Conn.Subscribe(s.res.Names.DeleteSubject("*"), func(m *nats.Msg) { s.delete(ctx, m) })
	if err != nil {
		sub.Unsubscribe()
		csub.Unsubscribe()
		return err
	}
	if rep, self := s.rep.Load(), s.selfPage.Load(); rep != nil && self != nil {
		// Followers' pages serve this one's while it leads.
		if err := rep.SetPage(*self); err != nil {
			s.log.Warn("recording the leader's status page", "err", err)
		}
	}
	s.resumeAll(ctx)
	s.closeEnded(ctx)
	s.pruneData()
	s.pruneOutputs(ctx)
	s.pruneJobs(ctx)
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-prune.C:
			s.pruneData()
			s.pruneOutputs(ctx)
			s.pruneJobs(ctx)
		}
	}
	sub.Unsubscribe()
	csub.Unsubscribe()
	dsub.Unsubscribe()
	s.wg.Wait()
	s.mu.Lock()
	s.jobs = map[string]*serviceJob{} // a later leadership resumes them afresh
	s.mu.Unlock()
	return nil
}

func (s *service) submit(ctx context.Context, m *nats.Msg) {
	reply := func(r submitReply) {
		data, _ := json.Marshal(r)
		m.Respond(data)
	}
	spec, err := protocol.Decode[protocol.JobSpec](m.Data, protocol.MaxMessageBytes)
	if err == nil {
		err = protocol.ValidateSubmitted(spec.Job)
	}
	if err == nil && spec.Model.Path != "" {
		_, err = worker.SharedPath(s.sharedRoots, spec.Model.Path) // checked again where it is opened
	}
	if err != nil {
		s.log.Error("rejected submission", "err", err)
		reply(submitReply{Error: err.Error()})
		return
	}
	jctx, stop := context.WithCancel(ctx)
	s.mu.Lock()
	_, dup := s.jobs[spec.Job]
	sj := newServiceJob(stop)
	if !dup {
		s.jobs[spec.Job] = sj
	}
	s.mu.Unlock()
	if dup {
		err = fmt.Errorf("job %s exists", spec.Job)
	} else {
		err = s.table.add(ctx, spec)
	}
	if err != nil {
		stop()
		if !dup {
			s.mu.Lock()
			delete(s.jobs, spec.Job)
			s.mu.Unlock()
		}
		reply(submitReply{Error: err.Error()})
		return
	}
	// Stored at once, so that status and cancel know the job before it runs.
	initial, _ := json.Marshal(coordinator.Summary{Status: coordinator.Status{Job: spec.Job, Layout: spec.Layout, Phase: replica.PhaseSubmitted,
		Pixels: int64(spec.Width) * int64(spec.Height)}, Started: time.Now()})
	s.res.Jobs.Put(ctx, protocol.JobStatusKey(spec.Job), initial)
	s.log.Info("job submitted", "job", spec.Job, "model", spec.Model.FileName(), "width", spec.Width, "height", spec.Height)
	reply(submitReply{Job: spec.Job})
	s.wg.Go(func() {
		defer close(sj.settled)
		defer stop()
		s.run(jctx, spec, false)
	})
}

// leaderPage is the leading replica's page URL when another replica leads
// ("" when this one does, or none is known): what it recorded in the raft
// table, never what the network says.
func (s *service) leaderPage() string {
	rep := s.rep.Load()
	if rep == nil || rep.IsLeader() {
		return ""
	}
	u := rep.LeaderPage()
	if self := s.selfPage.Load(); self != nil && u == *self {
		return "" // a record of this replica's own leadership, not yet replaced
	}
	return u
}

// delete answers a request to delete the job named in its subject.
func (s *service) delete(ctx context.Context, m *nats.Msg) {
	id := strings.TrimPrefix(m.Subject, s.res.Names.DeleteSubject(""))
	r := submitReply{Job: id}
	err := protocol.ValidateJob(id)
	if err == nil {
		err = s.deleteJob(ctx, id)
	}
	if err != nil {
		s.log.Warn("job not deleted", "job", id, "err", err)
		r = submitReply{Error: err.Error()}
	} else {
		s.log.Info("job deleted", "job", id)
	}
	data, _ := json.Marshal(r)
	m.Respond(data)
}

// deleteJob removes an ended job: whatever it left in the streams, its
// objects (model, outputs, …), its files in data, and last its table entry,
// spec and status, so that a delete cut short can be done again.
func (s *service) deleteJob(ctx context.Context, id string) error {
	s.mu.Lock()
	j := s.jobs[id]
	running := j != nil && j.final == nil && j.canceled == "" && (j.runner == nil || !Ended(j.runner.Summary().Phase))
	s.mu.Unlock()
	if running {
		return fmt.Errorf("job %s is running: cancel it first", id)
	}
	if j != nil { // ended here: its end is being recorded
		select {
		case <-j.settled:
		case <-time.After(requestTimeout / 2):
			return fmt.Errorf("job %s is still recording its end: try again", id)
		}
	}
	phase, err := s.table.phase(ctx, id)
	if err != nil {
		return err
	}
	if !replica.Finished(phase) {
		return fmt.Errorf("job %s is %s: cancel it first", id, phase)
	}
	for _, stage := range []string{id, protocol.IRIStage(id)} {
		if err := s.res.PurgeJob(ctx, stage, nil); err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
	}
	if err := s.res.Jobs.Purge(ctx, protocol.JobSpecKey(protocol.IRIStage(id))); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if s.isRaftDir(id) {
		return fmt.Errorf("job %s: %s is this replica's raft directory (--raft-dir): not removed", id, filepath.Join(s.data, id))
	}
	if err := os.RemoveAll(filepath.Join(s.data, id)); err != nil {
		return err
	}
	if err := s.table.remove(ctx, id); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
	return nil
}

// pruneEvery is how often a leader prunes its data directory besides at each
// job's end.
const pruneEvery = 10 * time.Minute

// pruneData removes the files of jobs that are not running from the data
// directory once they are older than the retention: a finished job's (its
// outputs are in the object store), a failed download's, a job of another
// coordinator's that this one no longer runs. Only job directories go.
func (s *service) pruneData() {
	entries, err := os.ReadDir(s.data)
	if err != nil {
		s.log.Error("pruning the data directory", "err", err)
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || protocol.ValidateJob(name) != nil || s.isRaftDir(name) {
			continue
		}
		s.mu.Lock()
		j := s.jobs[name]
		s.mu.Unlock()
		if j != nil && j.final == nil {
			continue // running
		}
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < s.retention {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.data, name)); err != nil {
			s.log.Error("pruning a job's files", "job", name, "err", err)
		}
	}
}

// pruneOutputs removes from the object store the outputs of jobs that ended
// more than the output retention ago, and says so in their status (fetch then
// explains why there is nothing to fetch).
func (s *service) pruneOutputs(ctx context.Context) {
	if s.outputRetention <= 0 {
		return
	}
	err := jobStatuses(ctx, s.res, func(job string, e jetstream.KeyValueEntry, sum coordinator.Summary, err error) error {
		if err != nil || !replica.Finished(sum.Phase) || len(sum.Outputs) == 0 || time.Since(sum.Updated) < s.outputRetention {
			return nil
		}
		for _, name := range sum.Outputs {
			if err := s.res.Objects.Delete(ctx, protocol.OutputObject(job, name)); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				s.log.Error("removing an expired output", "job", job, "output", name, "err", err)
			}
		}
		sum.Outputs, sum.Err = nil, fmt.Sprintf("its outputs were removed %s after it ended (--output-retention)", s.outputRetention)
		data, _ := json.Marshal(sum)
		if _, err := s.res.Jobs.Update(ctx, e.Key(), data, e.Revision()); err != nil {
			s.log.Error("recording expired outputs", "job", job, "err", err)
		}
		s.log.Info("outputs expired", "job", job)
		return nil
	})
	if err != nil {
		s.log.Error("listing jobs for the output retention", "err", err)
	}
}

// pruneJobs deletes the jobs that ended more than the job retention ago.
func (s *service) pruneJobs(ctx context.Context) {
	if s.jobRetention <= 0 {
		return
	}
	var old []string
	err := jobStatuses(ctx, s.res, func(job string, _ jetstream.KeyValueEntry, sum coordinator.Summary, err error) error {
		if err == nil && replica.Finished(sum.Phase) && time.Since(sum.Updated) >= s.jobRetention {
			old = append(old, job)
		}
		return nil
	})
	if err != nil {
		s.log.Error("listing jobs for the job retention", "err", err)
	}
	for _, job := range old {
		if err := s.deleteJob(ctx, job); err != nil {
			s.log.Error("deleting an expired job", "job", job, "err", err)
			continue
		}
		s.log.Info("job expired and deleted", "job", job, "retention", s.jobRetention)
	}
}

// isRaftDir says whether the entry name of the jobs directory holds the
// replica's raft files (a --raft-dir given there).
func (s *service) isRaftDir(name string) bool {
	if s.raftDir == "" {
		return false
	}
	a, err := os.Stat(filepath.Join(s.data, name))
	b, err2 := os.Stat(s.raftDir)
	return err == nil && err2 == nil && os.SameFile(a, b)
}

// resumeAll continues the jobs left unfinished by a coordinator before a
// restart or a change of leader. A job this coordinator already runs — one
// submitted while the table was listed: submit registers it before it
// stores it — is left to that run (two runs of one job on one leader left
// it unfinished).
func (s *service) resumeAll(ctx context.Context) {
	specs, err := s.table.unfinished(ctx)
	if err != nil {
		s.log.Error("listing jobs to resume", "err", err)
		return
	}
	for _, spec := range specs {
		jctx, stop := context.WithCancel(ctx)
		sj := newServiceJob(stop)
		s.mu.Lock()
		_, running := s.jobs[spec.Job]
		if !running {
			s.jobs[spec.Job] = sj
		}
		s.mu.Unlock()
		if running {
			stop()
			continue
		}
		s.log.Info("resuming job", "job", spec.Job)
		s.wg.Go(func() {
			defer close(sj.settled)
			defer stop()
			s.run(jctx, spec, true)
		})
	}
}

func (s *service) cancel(m *nats.Msg) {
	c, err := protocol.Decode[protocol.Cancel](m.Data, protocol.MaxMessageBytes)
	if err != nil {
		s.log.Error("rejected cancel message", "err", err)
		return
	}
	s.mu.Lock()
	j := s.jobs[c.Job]
	switch {
	case j == nil || j.final != nil:
	case j.runner != nil:
		j.runner.Cancel(c.Reason)
	default:
		j.canceled = c.Reason
		j.stop()
	}
	s.mu.Unlock()
	if j != nil {
		m.Respond([]byte("ok"))
	}
}

// JobsDir is the directory of Config.Data that holds the jobs' files,
// JobsDir/JOB, and nothing else: delete, the retentions and pruning remove
// only what is in it.
const JobsDir = "jobs"

// MaxLoadStarts is how many starts of a job may end with their coordinator
// stopped before the job reached its windows: the next start fails the job
// (cluster.Resources.StartLoading), so that a job whose model kills any
// coordinator that loads it is failed once rather than resumed forever.
const MaxLoadStarts = 2

// run runs a job as "solve --window" would, over the cluster, and uploads its
// outputs.
func (s *service) run(ctx context.Context, spec protocol.JobSpec, resume bool) {
	dir := filepath.Join(s.data, spec.Job)
	out := filepath.Join(dir, "out")
	log := s.log.With("job", spec.Job)
	began := time.Now()
	if resume {
		s.show(ctx, spec.Job, coordinator.PhaseResuming)
	} else {
		s.show(ctx, spec.Job, PhaseLoading)
	}
	defer s.heartbeat(ctx, spec.Job)()
	var sum coordinator.Summary
	err := func() error {
		s.phase(spec.Job, PhaseLoading)
		starts, err := s.res.StartLoading(ctx, spec.Job)
		if err != nil {
			return err
		}
		if starts >= MaxLoadStarts {
			return fmt.Errorf("coordinators stopped %d times while loading this job, before its windows (out of memory?): it is failed rather than loaded again", starts)
		}
		modelPath, err := s.materialize(ctx, spec, dir)
		if err != nil {
			return err
		}
		rt := &submitted{s: s, spec: spec, resume: resume, log: log}
		if s.onPhase != nil {
			rt.onPhase = func(phase string) { s.onPhase(spec.Job, phase) }
		}
		_, err = job.Run(ctx, job.FromWire(spec, modelPath, out), job.Options{Runtime: rt, Note: func(msg string) { log.Info(msg) }})
		return err
	}()
	s.mu.Lock()
	j := s.jobs[spec.Job]
	if j.runner != nil {
		sum = j.runner.Summary()
	}
	canceled := j.canceled
	s.mu.Unlock()
	if err == nil {
		// An upload cut short by this coordinator's stop (a leader that lost
		// its leadership, a shutdown) is no failure: the next one redoes it.
		err = s.upload(ctx, spec.Job, out, &sum)
	}
	switch {
	case err == nil:
		log.Info("job done", "proven", sum.Proven, "pixels", sum.Pixels, "outputs", sum.Outputs)
	case sum.Phase == coordinator.Canceled.String():
		log.Info("job cancelled", "reason", sum.Err)
	case canceled != "":
		sum.Job, sum.Phase, sum.Err = spec.Job, coordinator.Canceled.String(), "cancelled: "+canceled
		log.Info("job cancelled", "reason", sum.Err)
	case ctx.Err() != nil:
		log.Info("coordinator stopping; the job stays in JetStream", "err", err)
		if err := s.res.Loaded(context.WithoutCancel(ctx), spec.Job); err != nil { // a stop, not a crash
			log.Error("ending the job's load count", "err", err)
		}
		return
	default:
		log.Error("job failed", "err", err)
		sum.Job, sum.Phase, sum.Err = spec.Job, coordinator.Failed.String(), err.Error()
	}
	if sum.Started.IsZero() { // ended before its runner started
		sum.Started = began
	}
	if sum.Updated.IsZero() {
		sum.Updated = time.Now()
	}
	s.mu.Lock()
	j.final = &sum
	s.mu.Unlock()
	bg := context.WithoutCancel(ctx)
	if err := s.res.Loaded(bg, spec.Job); err != nil {
		log.Error("ending the job's load count", "err", err)
	}
	if err := s.table.end(bg, sum); err != nil {
		log.Error("recording the job's end", "err", err) // a new leader resumes and ends it
		return
	}
	s.phase(spec.Job, PhaseEnded)
	for _, r := range j.stages {
		r.Cleanup(bg) // the end is recorded: the results are no longer needed
	}
	s.ended(bg, sum, log)
	s.pruneData()
}

// ended does what follows a job's recorded end: its uploaded model and
// evidence go (the outputs stay), and its final status is stored.
func (s *service) ended(ctx context.Context, sum coordinator.Summary, log *slog.Logger) {
	for _, name := range []string{protocol.ModelObject(sum.Job), protocol.EvidenceObject(sum.Job)} {
		if err := s.res.Objects.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			log.Error("removing the job's input", "object", name, "err", err)
		}
	}
	data, _ := json.Marshal(sum)
	if _, err := s.res.Jobs.Put(ctx, protocol.JobStatusKey(sum.Job), data); err != nil {
		log.Error("storing the final status", "err", err)
	}
}

// closeEnded completes the end of every job that the replicated table records
// as ended while its stored status does not: its leader stopped after
// recording the end and before the rest (a kill while the outputs were
// stored). Without it the job would show its last phase for ever, stale.
func (s *service) closeEnded(ctx context.Context) {
	rep := s.rep.Load()
	if rep == nil {
		return // the key-value table: the final status is the end's record
	}
	for _, j := range rep.Jobs() {
		if !replica.Finished(j.Phase) {
			continue
		}
		id := j.Spec.Job
		_, sum, ok := s.liveStatus(ctx, id)
		if !ok {
			continue
		}
		log := s.log.With("job", id)
		log.Info("completing the end of a job its leader recorded and left", "phase", j.Phase)
		outputs := protocol.OutputObject(id, "")
		keep := func(name string) bool { return strings.HasPrefix(name, outputs) }
		for _, stage := range []string{id, protocol.IRIStage(id)} {
			if err := s.res.PurgeJob(ctx, stage, keep); err != nil {
				log.Error("removing the job's results", "err", err)
			}
		}
		sum.Job, sum.Phase, sum.Err, sum.Outputs, sum.InFlight, sum.Updated = id, j.Phase, j.Err, j.Outputs, 0, time.Now()
		s.ended(ctx, sum, log)
	}
}

// liveStatus reads the job's stored status; ok is false when there is none,
// it does not decode, or the job has ended (nothing more to store over it).
func (s *service) liveStatus(ctx context.Context, id string) (e jetstream.KeyValueEntry, sum coordinator.Summary, ok bool) {
	e, err := s.res.Jobs.Get(ctx, protocol.JobStatusKey(id))
	if err != nil || json.Unmarshal(e.Value(), &sum) != nil || Ended(sum.Phase) {
		return nil, sum, false
	}
	return e, sum, true
}

// statusHeartbeat is how often a job's stored status is marked current while
// no runner updates it (the model loads, the outputs are written or stored).
const statusHeartbeat = 5 * time.Second

// heartbeat marks the job's stored status current every statusHeartbeat,
// where nobody else updated it meanwhile, until the returned stop is called:
// clients tell a job whose coordinator is gone by its stale status (Stale).
func (s *service) heartbeat(ctx context.Context, id string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(statusHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			e, sum, ok := s.liveStatus(ctx, id)
			if !ok || time.Since(sum.Updated) < statusHeartbeat {
				continue
			}
			sum.Updated = time.Now()
			if data, err := json.Marshal(sum); err == nil {
				s.res.Jobs.Update(ctx, e.Key(), data, e.Revision()) // fails when a runner stored one meanwhile
			}
		}
	}()
	return func() { cancel(); <-done }
}

// show stores the job's last status again in phase (what this coordinator
// does with it before or after its windows run: PhaseLoading,
// coordinator.PhaseResuming with its resumes counted, PhaseStoring): status
// shows the counts it had, not a stale phase.
//
// It stores over the status it read only (a compare-and-set, retried when a
// heartbeat stored meanwhile): a cancel that ended the job between the read
// and the store must not be overwritten by a phase of a job that runs no more.
func (s *service) show(ctx context.Context, id, phase string) {
	for range 3 {
		e, sum, ok := s.liveStatus(ctx, id)
		if !ok {
			return
		}
		sum.Phase, sum.Updated = phase, time.Now()
		if phase == coordinator.PhaseResuming {
			sum.InFlight = 0
			sum.Resumes++
		}
		data, err := json.Marshal(sum)
		if err != nil {
			return
		}
		if _, err := s.res.Jobs.Update(ctx, e.Key(), data, e.Revision()); err == nil {
			return
		}
	}
}

// submitted is the job.Runtime of a submitted job: its windows over the
// cluster, as the job was submitted.
type submitted struct {
	s       *service
	spec    protocol.JobSpec
	resume  bool
	log     *slog.Logger
	onPhase func(phase string)
}

// Windows implements job.Runtime: the model materialised for the job must be
// the one it was submitted with. A pbp+iri job calls it twice: its pbp stage
// runs as submitted, its iri stage as protocol.IRIStage(job), both showing as
// the job.
func (r *submitted) Windows(ctx context.Context, d *job.Distributed) (*job.Outcome, error) {
	if err := r.s.res.Loaded(ctx, r.spec.Job); err != nil { // the model is loaded
		return nil, err
	}
	s, got := r.spec, d.Spec
	run := s
	switch {
	case s.PBPIRI() && got.IRI():
		run = got // the elimination the job plans on the model, from the labels pbp proved
		run.Job, run.Model, run.Evidence, run.CreatedAt = protocol.IRIStage(s.Job), s.Model, s.Evidence, s.CreatedAt
	case s.IRI() != got.IRI():
		return nil, fmt.Errorf("job %s is of method %s, its model %s was planned for %s", s.Job, s.MethodName(), d.ModelPath, got.MethodName())
	case layout(s) != layout(got) || s.Width != got.Width || s.Height != got.Height || s.Labels != got.Labels:
		if got.Layout == protocol.LayoutGraph || s.Layout == protocol.LayoutGraph {
			return nil, fmt.Errorf("job %s is a %s of %d×%d variables and %d labels, its model %s a %s of %d×%d and %d",
				s.Job, layout(s), s.Width, s.Height, s.Labels, d.ModelPath, layout(got), got.Width, got.Height, got.Labels)
		}
		return nil, fmt.Errorf("job %s is a %d×%d raster of %d labels, its model %s one of %d×%d and %d", s.Job, s.Width, s.Height, s.Labels, d.ModelPath, got.Width, got.Height, got.Labels)
	}
	onPhase := r.onPhase
	if run.Job != s.Job && onPhase != nil {
		onPhase = func(phase string) { r.onPhase(protocol.MethodIRI + "/" + phase) } // the iri stage's
	}
	started := func(runner *coordinator.Runner) error {
		r.s.mu.Lock()
		j := r.s.jobs[s.Job]
		j.runner, j.png = runner, d.PNG
		j.stages = append(j.stages, runner)
		r.s.mu.Unlock()
		return nil
	}
	return drive(ctx, r.s.res, run, d, driveOptions{log: r.log, note: func(msg string) { r.log.Warn(msg) }, resume: r.resume, started: started,
		runtime: job.RuntimeCluster, onPhase: onPhase, statusAs: s.Job})
}

// layout is a spec's layout, raster when unset.
func layout(s protocol.JobSpec) string {
	if s.Layout == "" {
		return protocol.LayoutRaster
	}
	return s.Layout
}

// materialize puts the job's model (and evidence) in dir as MODEL and
// MODEL.evid, so that the job reads them as it reads local files.
func (s *service) materialize(ctx context.Context, spec protocol.JobSpec, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, spec.Model.FileName())
	os.Remove(path)
	if spec.Model.Path != "" {
		shared, err := worker.SharedPath(s.sharedRoots, spec.Model.Path)
		if err != nil {
			return "", err
		}
		if err := os.Symlink(shared, path); err != nil {
			return "", err
		}
	} else if err := worker.Download(ctx, s.res, spec.Model.Object, spec.Model.Size, spec.Model.CRC32C, path); err != nil {
		return "", err
	}
	ev := path + ".evid"
	os.Remove(ev)
	if e := spec.Evidence; e != nil {
		if e.Object == "" {
			return path, os.WriteFile(ev, e.Inline, 0o644)
		}
		if err := worker.Download(ctx, s.res, e.Object, e.Size, e.CRC32C, ev); err != nil {
			return "", err
		}
	}
	return path, nil
}

// upload puts the job's outputs in the object store and lists them in sum.
func (s *service) upload(ctx context.Context, jobID, dir string, sum *coordinator.Summary) error {
	if len(sum.Outputs) > 0 {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && job.ValidateOutputName(e.Name()) == nil { // not a leftover temporary file
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for i, name := range names {
		if err := s.store(ctx, jobID, dir, name); err != nil {
			return fmt.Errorf("storing the output %s: %w", name, err)
		}
		if i == 0 {
			s.show(ctx, jobID, PhaseStoring)
			s.phase(jobID, PhaseStoring)
		}
	}
	sum.Outputs = names
	return nil
}

// storeAttempts bounds the tries of an output's upload: a server that
// restarts, a stream leader that moves, fail one and pass the next.
const storeAttempts = 4

// store puts the output file dir/name in the object store, trying again after
// a failure while ctx lasts. An object of the name that a former leader, or a
// failed attempt, stored is deleted first: JetStream replacing an object purges
// the old one's chunks after the new are in, and for an object of gigabytes
// that takes the server's memory (12.5 GB for the 11.6 GB certificates of a
// 10⁸-pixel job stored again after a failover) or fails ("too many requests"
// replacing a 3 GB object, where deleting it first did not).
func (s *service) store(ctx context.Context, jobID, dir, name string) error {
	object := protocol.OutputObject(jobID, name)
	var err error
	for i := range storeAttempts {
		if i > 0 {
			s.log.Warn("storing an output again", "job", jobID, "output", name, "attempt", i+1, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(i) * time.Second):
			}
		}
		if err = s.res.Objects.Delete(ctx, object); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		var f *os.File
		if f, err = os.Open(filepath.Join(dir, name)); err != nil {
			return err
		}
		err = s.res.Put(ctx, object, f)
		f.Close()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// phase tells Config.OnPhase that job enters phase.
func (s *service) phase(job, phase string) {
	if s.onPhase != nil {
		s.onPhase(job, phase)
	}
}

// views lists the jobs for the status page, newest first: those this
// coordinator runs or ran, and every other job of the cluster's job bucket as
// its coordinators stored it (the jobs of earlier leaders, as partopt jobs
// lists them).
func (s *service) views() []coordinator.JobView {
	s.mu.Lock()
	var out []coordinator.JobView
	here := map[string]bool{}
	for id, j := range s.jobs {
		switch {
		case j.final != nil:
			out = append(out, coordinator.JobView{Summary: *j.final})
		case j.runner != nil:
			out = append(out, coordinator.JobView{Summary: j.runner.Shown(), PNG: j.png})
		default:
			continue
		}
		here[id] = true
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	err := jobStatuses(ctx, s.res, func(id string, _ jetstream.KeyValueEntry, sum coordinator.Summary, err error) error {
		if err == nil && !here[id] {
			sum.Job = id
			out = append(out, coordinator.JobView{Summary: sum})
		}
		return nil
	})
	if err != nil {
		s.log.Warn("listing the jobs for the status page", "err", err)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Summary.Started.After(out[b].Summary.Started) })
	return out
}
