// The coordinator command: it runs the jobs submitted to the cluster, alone
// (its job table in the key-value bucket) or as one of several replicas (the
// table replicated with raft; the leader runs the jobs, a new leader resumes
// them).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/replica"
	"github.com/partopt/partopt/worker"
	"github.com/spf13/cobra"
)

// raftFlags configure a coordinator replica.
type raftFlags struct {
	id, addr, dir, peers string
	bootstrap            bool
}

func (f raftFlags) config(data string, log *slog.Logger) (replica.Config, error) {
	cfg := replica.Config{ID: f.id, Bind: f.addr, Dir: f.dir, Bootstrap: f.bootstrap, Log: log}
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(data, "raft")
	}
	for _, p := range strings.Split(f.peers, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || id == "" || addr == "" {
			return cfg, fmt.Errorf("--peers %q: want ID=HOST:PORT,ID=HOST:PORT,…", f.peers)
		}
		cfg.Peers = append(cfg.Peers, replica.Peer{ID: id, Addr: addr})
	}
	if f.id == "" {
		return cfg, errors.New("--id: a replica needs its raft id (one of --peers)")
	}
	return cfg, nil
}

func newCoordinatorCmd() *cobra.Command {
	var n natsFlags
	var rf raftFlags
	var data, httpAddr string
	cmd := &cobra.Command{
		Use:   "coordinator --nats URL --data DIR [--id ID --raft-addr HOST:PORT --peers ID=HOST:PORT,…]",
		Short: "Run the jobs submitted to the cluster: dispatch windows, merge results, write outputs",
		Long: `Accept jobs from "partopt submit", run each (windows dispatched to the workers,
results merged in plan order into label files under --data/JOB) and, when a job
is done, upload its outputs (those of "partopt solve --window") to the object
store for "partopt fetch". With --http a status page and Prometheus metrics
(/metrics) are served (default localhost only).

Alone, the coordinator keeps its jobs in the cluster's key-value bucket. With
--raft-addr it is one replica of a coordinator group (static --peers, all
listed with the same ids and addresses; --bootstrap forms the group on first
start): the job table is replicated with raft (log and snapshots in
--raft-dir, default --data/raft), the leader runs the jobs, and when it dies a
new leader resumes them from what JetStream kept: windows already solved are
merged again, not solved again. After any restart — one coordinator, or the
whole cluster with NATS on disk — unfinished jobs continue where they were.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := os.MkdirAll(data, 0o755); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			var rcfg replica.Config
			if rf.addr != "" {
				var err error
				if rcfg, err = rf.config(data, log); err != nil {
					return err
				}
			}
			res, err := n.openWaiting(ctx, "partopt-coordinator", log)
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			s := &service{res: res, data: data, out: cmd.ErrOrStderr(), jobs: map[string]*serviceJob{}, log: log, table: kvTable{res}}
			if httpAddr != "" {
				if err := serveStatus(ctx, cmd, httpAddr, s.views); err != nil {
					return err
				}
			}
			if rf.addr == "" {
				log.Info("coordinator ready", "nats", res.Conn.ConnectedUrlRedacted(), "data", data)
				return s.lead(ctx)
			}
			rep, err := replica.Open(rcfg)
			if err != nil {
				return err
			}
			defer rep.Close()
			s.table = raftTable{rep: rep, res: res}
			log.Info("coordinator replica ready", "id", rf.id, "raft", rf.addr, "nats", res.Conn.ConnectedUrlRedacted(), "data", data)
			return s.follow(ctx, rep, rf.id)
		},
	}
	addNATSFlags(cmd, &n)
	addServiceFlags(cmd, &n)
	fl := cmd.Flags()
	fl.StringVar(&data, "data", "partopt-data", "directory for the jobs' label files and outputs")
	fl.StringVar(&httpAddr, "http", "localhost:8222", "status page and /metrics address (empty: none)")
	fl.StringVar(&rf.id, "id", "", "this replica's raft id (with --raft-addr)")
	fl.StringVar(&rf.addr, "raft-addr", "", "this replica's raft address HOST:PORT (empty: a single coordinator)")
	fl.StringVar(&rf.dir, "raft-dir", "", "raft log and snapshots (default DATA/raft)")
	fl.StringVar(&rf.peers, "peers", "", "every replica as ID=HOST:PORT, comma-separated, this one included")
	fl.BoolVar(&rf.bootstrap, "bootstrap", false, "form the replica group from --peers if this replica has no raft state yet")
	return cmd
}

// follow runs the jobs while this replica leads, and stops them when it no
// longer does (the new leader resumes them).
func (s *service) follow(ctx context.Context, rep *replica.Replica, id string) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
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
	}
}

// service is the coordinator command's state: the jobs it runs.
type service struct {
	res   *cluster.Resources
	data  string
	out   io.Writer
	log   *slog.Logger
	table jobTable

	mu   sync.Mutex
	jobs map[string]*serviceJob
	wg   sync.WaitGroup
}

type serviceJob struct {
	runner   *coordinator.Runner
	files    *rasterFiles
	final    *coordinator.Summary
	stop     context.CancelFunc // ends the job before its runner exists
	canceled string             // the reason, when cancelled before its runner existed
}

// lead takes submissions and cancels, resumes the unfinished jobs, and runs
// jobs until ctx ends; then it waits for them to stop.
func (s *service) lead(ctx context.Context) error {
	sub, err := s.res.Conn.QueueSubscribe(protocol.SubjectSubmit, "partopt-coordinators", func(m *nats.Msg) { s.submit(ctx, m) })
	if err != nil {
		return err
	}
	csub, err := s.res.Conn.Subscribe(protocol.CancelSubject("*"), s.cancel)
	if err != nil {
		sub.Unsubscribe()
		return err
	}
	s.resumeAll(ctx)
	<-ctx.Done()
	sub.Unsubscribe()
	csub.Unsubscribe()
	s.wg.Wait()
	s.mu.Lock()
	s.jobs = map[string]*serviceJob{} // a later leadership resumes them afresh
	s.mu.Unlock()
	return nil
}

// jobTable is where the coordinator records its jobs: the key-value bucket
// (one coordinator) or the raft-replicated table (replicas).
type jobTable interface {
	// add records a new job; an existing id is an error.
	add(ctx context.Context, spec protocol.JobSpec) error
	// end records how a job ended.
	end(ctx context.Context, sum coordinator.Summary) error
	// unfinished lists the jobs to resume.
	unfinished(ctx context.Context) ([]protocol.JobSpec, error)
}

// kvTable keeps the jobs in the key-value bucket: the specs the workers read and
// the statuses the clients read.
type kvTable struct{ res *cluster.Resources }

func (t kvTable) add(ctx context.Context, spec protocol.JobSpec) error {
	if _, err := t.res.Jobs.Get(ctx, protocol.JobSpecKey(spec.Job)); err == nil {
		return fmt.Errorf("job %s exists", spec.Job)
	}
	return t.res.PutJobSpec(ctx, spec)
}

func (kvTable) end(context.Context, coordinator.Summary) error { return nil } // the status is the record

func (t kvTable) unfinished(ctx context.Context) ([]protocol.JobSpec, error) {
	keys, err := t.res.Jobs.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []protocol.JobSpec
	for _, key := range keys {
		job, ok := strings.CutSuffix(key, ".status")
		if !ok {
			continue
		}
		e, err := t.res.Jobs.Get(ctx, key)
		var sum coordinator.Summary
		if err == nil {
			err = json.Unmarshal(e.Value(), &sum)
		}
		if err != nil {
			return nil, fmt.Errorf("job %s: status: %w", job, err)
		}
		// A job done but not uploaded (stopped in between) is finished again.
		if replica.Finished(sum.Phase) && (sum.Phase != replica.PhaseDone || len(sum.Outputs) > 0) {
			continue
		}
		spec, err := t.res.JobSpec(ctx, job)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

// raftTable keeps the jobs in the replicated table (and the specs in the
// key-value bucket too, for the workers).
type raftTable struct {
	rep *replica.Replica
	res *cluster.Resources
}

func (t raftTable) add(ctx context.Context, spec protocol.JobSpec) error {
	if err := t.rep.Submit(spec); err != nil {
		if errors.Is(err, replica.ErrExists) {
			return fmt.Errorf("job %s exists", spec.Job)
		}
		return err
	}
	return t.res.PutJobSpec(ctx, spec)
}

func (t raftTable) end(_ context.Context, sum coordinator.Summary) error {
	return t.rep.Update(replica.Update{Job: sum.Job, Phase: sum.Phase, Err: sum.Err, Outputs: sum.Outputs})
}

func (t raftTable) unfinished(context.Context) ([]protocol.JobSpec, error) {
	var out []protocol.JobSpec
	for _, j := range t.rep.Jobs() {
		if !replica.Finished(j.Phase) {
			out = append(out, j.Spec)
		}
	}
	return out, nil
}

// submitReply answers a submission.
type submitReply struct {
	Job   string `json:"job,omitempty"`
	Error string `json:"error,omitempty"`
}

func (s *service) submit(ctx context.Context, m *nats.Msg) {
	reply := func(r submitReply) {
		data, _ := json.Marshal(r)
		m.Respond(data)
	}
	spec, err := protocol.Decode[protocol.JobSpec](m.Data, protocol.MaxMessageBytes)
	if err != nil {
		s.log.Error("rejected submission", "err", err)
		reply(submitReply{Error: err.Error()})
		return
	}
	jctx, stop := context.WithCancel(ctx)
	s.mu.Lock()
	_, dup := s.jobs[spec.Job]
	if !dup {
		s.jobs[spec.Job] = &serviceJob{stop: stop}
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
		defer stop()
		s.run(jctx, spec, false)
	})
}

// resumeAll continues the jobs left unfinished by a coordinator before a
// restart or a change of leader.
func (s *service) resumeAll(ctx context.Context) {
	specs, err := s.table.unfinished(ctx)
	if err != nil {
		s.log.Error("listing jobs to resume", "err", err)
		return
	}
	for _, spec := range specs {
		jctx, stop := context.WithCancel(ctx)
		s.mu.Lock()
		s.jobs[spec.Job] = &serviceJob{stop: stop}
		s.mu.Unlock()
		s.log.Info("resuming job", "job", spec.Job)
		s.wg.Go(func() {
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

// run runs a job as "solve --window" would, over the cluster, and uploads its
// outputs.
func (s *service) run(ctx context.Context, spec protocol.JobSpec, resume bool) {
	dir := filepath.Join(s.data, spec.Job)
	log := s.log.With("job", spec.Job)
	var sum coordinator.Summary
	err := func() error {
		modelPath, err := s.materialize(ctx, spec, dir)
		if err != nil {
			return err
		}
		f := specFlags(spec, filepath.Join(dir, "out"))
		f.embedded = &embeddedRun{res: s.res, spec: &spec, resume: resume, started: func(r *coordinator.Runner, files *rasterFiles) {
			s.mu.Lock()
			j := s.jobs[spec.Job]
			j.runner, j.files = r, files
			s.mu.Unlock()
		}}
		cmd := &cobra.Command{}
		cmd.SetContext(ctx)
		cmd.SetOut(io.Discard)
		cmd.SetErr(s.out)
		return runWindowed(cmd, modelPath, f)
	}()
	s.mu.Lock()
	j := s.jobs[spec.Job]
	if j.runner != nil {
		sum = j.runner.Summary()
	}
	canceled := j.canceled
	s.mu.Unlock()
	switch {
	case err == nil:
		if err := s.upload(ctx, spec.Job, filepath.Join(dir, "out"), &sum); err != nil {
			sum.Phase, sum.Err = coordinator.Failed.String(), err.Error()
		} else {
			log.Info("job done", "proven", sum.Proven, "pixels", sum.Pixels, "outputs", sum.Outputs)
		}
	case sum.Phase == coordinator.Canceled.String():
		log.Info("job cancelled", "reason", sum.Err)
	case canceled != "":
		sum.Job, sum.Phase, sum.Err = spec.Job, coordinator.Canceled.String(), "cancelled: "+canceled
		log.Info("job cancelled", "reason", sum.Err)
	case ctx.Err() != nil:
		log.Info("coordinator stopping; the job stays in JetStream", "err", err)
		return
	default:
		log.Error("job failed", "err", err)
		sum.Job, sum.Phase, sum.Err = spec.Job, coordinator.Failed.String(), err.Error()
	}
	s.mu.Lock()
	j.final = &sum
	s.mu.Unlock()
	bg := context.WithoutCancel(ctx)
	if err := s.table.end(bg, sum); err != nil {
		log.Error("recording the job's end", "err", err) // a new leader resumes and ends it
		return
	}
	if j.runner != nil {
		j.runner.Cleanup(bg) // the end is recorded: the results are no longer needed
	}
	data, _ := json.Marshal(sum)
	if _, err := s.res.Jobs.Put(bg, protocol.JobStatusKey(spec.Job), data); err != nil {
		log.Error("storing the final status", "err", err)
	}
}

// materialize puts the job's model (and evidence) in dir as MODEL and
// MODEL.evid, so that the windowed solve reads them as it reads local files.
func (s *service) materialize(ctx context.Context, spec protocol.JobSpec, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, spec.Model.FileName())
	os.Remove(path)
	if spec.Model.Path != "" {
		if err := os.Symlink(spec.Model.Path, path); err != nil {
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

// specFlags are the solve flags of a submitted job.
func specFlags(spec protocol.JobSpec, out string) solveFlags {
	f := solveFlags{method: "pbp", boundary: spec.Variant, output: out, window: spec.Core, halo: spec.Halo,
		haloSet: true, workers: 1, rounds: spec.MaxRounds, pngMax: defaultPNGSide}
	if s, ok := spec.Persistency().Solver.(persistency.Auto); ok {
		o := s.Options
		f.maxIterations, f.gapTolerance, f.stallIterations, f.checkEvery = o.MaxIterations, o.GapTolerance, o.StallIterations, o.CheckEvery
	}
	return f
}

// upload puts the job's outputs in the object store and lists them in sum.
func (s *service) upload(ctx context.Context, job, dir string, sum *coordinator.Summary) error {
	if len(sum.Outputs) > 0 {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = s.res.Put(ctx, protocol.OutputObject(job, name), f)
		f.Close()
		if err != nil {
			return err
		}
	}
	sum.Outputs = names
	return nil
}

// views lists the jobs for the status page, newest first.
func (s *service) views() []coordinator.JobView {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []coordinator.JobView
	for _, j := range s.jobs {
		switch {
		case j.final != nil:
			out = append(out, coordinator.JobView{Summary: *j.final})
		case j.runner != nil:
			out = append(out, coordinator.JobView{Summary: j.runner.Summary(), PNG: filesPNG(j.files)})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Summary.Started.After(out[b].Summary.Started) })
	return out
}
