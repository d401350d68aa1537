// Package replica replicates the coordinator's job table over a few coordinator
// processes with hashicorp/raft, and elects the one that runs the jobs.
//
// The job table is small: each job's spec, its phase, the reason it failed and
// the names of its outputs. Everything a running job produces — tasks, window
// results, label files rebuilt from them — lives in JetStream, so a new leader
// resumes every unfinished job of the table from the results stream
// (coordinator.RunOptions.Resume): windows already solved are merged again, not
// solved again. The table is a deterministic state machine (Apply of commands,
// Snapshot and Restore of the whole table), kept on disk (raft-wal log, file
// snapshots), so a replica that restarts catches up from its own disk and its
// peers.
//
//	r, err := replica.Open(replica.Config{ID: "c1", Dir: dir, Bind: "10.0.0.1:7000",
//		Peers: []replica.Peer{{"c1", "10.0.0.1:7000"}, {"c2", "10.0.0.2:7000"}, {"c3", "10.0.0.3:7000"}},
//		Bootstrap: true})
//	for leader := range r.LeaderCh() { ... } // run the jobs while leader
//	err = r.Submit(spec)                      // on the leader
//	err = r.Update(replica.Update{Job: id, Phase: "done", Outputs: names})
package replica

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/partopt/partopt/protocol"
	"github.com/vmihailenco/msgpack/v5"
)

// Peer is a replica's raft id and address.
type Peer struct{ ID, Addr string }

// Config configures a replica.
type Config struct {
	ID   string
	Dir  string // raft log, stable store and snapshots
	Bind string // host:port of the raft transport (also advertised)
	// Peers are all replicas, this one included (static membership).
	Peers []Peer
	// Bootstrap forms the cluster from Peers when this replica has no state
	// yet; harmless on every later start. Give it to every replica, or to one.
	Bootstrap bool
	// Timeouts are raft's; zero fields take DefaultTimeouts'.
	Timeouts Timeouts
	Log      *slog.Logger
}

// Timeouts are raft's timeouts (hashicorp/raft's Config fields of the same
// names). A follower that hears nothing from the leader for Heartbeat starts
// an election (after a random wait up to Election); a leader that cannot reach
// a quorum for LeaderLease steps down. Short timeouts fail over fast but make a
// loaded machine — a coordinator merging, workers on every core, a garbage
// collection — look dead: leadership changes without any failure, and each
// change reloads every running job.
type Timeouts struct {
	Heartbeat, Election, LeaderLease time.Duration
}

// DefaultTimeouts are those of hashicorp/raft scaled by 5, as Consul's default
// raft_multiplier does for machines that are not dedicated to consensus: a
// failover costs 5 to 10 s, nothing next to a job's reload, and a 2-core
// machine running a job at full load keeps its leader.
var DefaultTimeouts = Timeouts{Heartbeat: 5 * time.Second, Election: 5 * time.Second, LeaderLease: 2500 * time.Millisecond}

// FastTimeouts fail over within a second (tests on an idle machine).
var FastTimeouts = Timeouts{Heartbeat: 200 * time.Millisecond, Election: 200 * time.Millisecond, LeaderLease: 100 * time.Millisecond}

// withDefaults fills the zero fields and checks what raft requires.
func (t Timeouts) withDefaults() (Timeouts, error) {
	d := DefaultTimeouts
	if t.Heartbeat > 0 {
		d.Heartbeat = t.Heartbeat
		d.Election = max(d.Election, t.Heartbeat)
		d.LeaderLease = min(d.LeaderLease, t.Heartbeat)
	}
	if t.Election > 0 {
		d.Election = t.Election
	}
	if t.LeaderLease > 0 {
		d.LeaderLease = t.LeaderLease
	}
	if d.Election < d.Heartbeat || d.LeaderLease > d.Heartbeat {
		return d, fmt.Errorf("replica: raft timeouts heartbeat %v, election %v, leader lease %v: want election ≥ heartbeat ≥ leader lease", d.Heartbeat, d.Election, d.LeaderLease)
	}
	return d, nil
}

// Job phases in the table.
const (
	PhaseSubmitted = "submitted"
	PhaseRunning   = "running"
	PhaseDone      = "done"
	PhaseCanceled  = "canceled"
	PhaseFailed    = "failed"
)

// Finished says whether a job of this phase needs nothing more.
func Finished(phase string) bool {
	return phase == PhaseDone || phase == PhaseCanceled || phase == PhaseFailed
}

// Job is a job of the table.
type Job struct {
	Spec    protocol.JobSpec `msgpack:"s"`
	Phase   string           `msgpack:"p"`
	Err     string           `msgpack:"e,omitempty"`
	Outputs []string         `msgpack:"o,omitempty"`
}

// Update changes a job's phase (and error, outputs).
type Update struct {
	Job     string   `msgpack:"j"`
	Phase   string   `msgpack:"p"`
	Err     string   `msgpack:"e,omitempty"`
	Outputs []string `msgpack:"o,omitempty"`
}

// Errors of Submit and Update.
var (
	ErrNotLeader = errors.New("replica: not the leader")
	ErrExists    = errors.New("replica: job exists")
	ErrNoJob     = errors.New("replica: no such job")
	ErrRunning   = errors.New("replica: job not finished")
)

// command is a raft log entry.
type command struct {
	Submit *protocol.JobSpec `msgpack:"s,omitempty"`
	Update *Update           `msgpack:"u,omitempty"`
	Delete string            `msgpack:"d,omitempty"` // a finished job's id
	Page   *Page             `msgpack:"g,omitempty"`
}

// Page is a replica's status page URL, which the others' pages serve while it
// leads (recorded through raft; anyone who reaches a raft port could write
// one, so only URLs protocol.CheckPageURL accepts are recorded).
type Page struct {
	ID  string `msgpack:"i"`
	URL string `msgpack:"u"`
}

// Replica is one coordinator's raft node and its copy of the job table.
type Replica struct {
	raft      *raft.Raft
	fsm       *fsm
	wal       *wal.WAL
	meta      *metadb.BoltMetaDB
	transport *raft.NetworkTransport
	id        string
}

// Open starts a replica (bootstrapping the cluster if asked and new).
func Open(cfg Config) (*Replica, error) {
	if cfg.ID == "" || cfg.Dir == "" || cfg.Bind == "" {
		return nil, errors.New("replica: want an id, a directory and a bind address")
	}
	if !slices.ContainsFunc(cfg.Peers, func(p Peer) bool { return p.ID == cfg.ID && p.Addr == cfg.Bind }) {
		return nil, fmt.Errorf("replica: the peers %v do not list this replica %s at %s", cfg.Peers, cfg.ID, cfg.Bind)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "wal"), 0o755); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = raftLogger(cfg.Log)
	rc.SnapshotThreshold = 1024
	t, err := cfg.Timeouts.withDefaults()
	if err != nil {
		return nil, err
	}
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = t.Heartbeat, t.Election, t.LeaderLease
	if t.Heartbeat < time.Second { // a test's: snapshots as fast
		rc.CommitTimeout = 10 * time.Millisecond
		rc.SnapshotInterval, rc.TrailingLogs = 100*time.Millisecond, 64
	}
	// Our own meta store, closed by Close: WAL.Close leaves it open, and its
	// file lock would block the next Open in this process for ever.
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(filepath.Join(cfg.Dir, "wal"), wal.WithMetaStore(meta))
	if err != nil {
		meta.Close()
		return nil, fmt.Errorf("replica: raft log in %s: %w", cfg.Dir, err)
	}
	closeLog := func() { w.Close(); meta.Close() }
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 3, rc.Logger)
	if err != nil {
		closeLog()
		return nil, err
	}
	addr, err := net.ResolveTCPAddr("tcp", cfg.Bind)
	if err != nil {
		closeLog()
		return nil, fmt.Errorf("replica: bind address %q: %w", cfg.Bind, err)
	}
	trans, err := raft.NewTCPTransportWithLogger(cfg.Bind, addr, 3, 10*time.Second, rc.Logger)
	if err != nil {
		closeLog()
		return nil, fmt.Errorf("replica: raft transport on %s: %w", cfg.Bind, err)
	}
	f := &fsm{jobs: map[string]*Job{}, pages: map[string]string{}}
	r, err := raft.NewRaft(rc, f, w, w, snaps, trans)
	if err != nil {
		trans.Close()
		closeLog()
		return nil, err
	}
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(w, w, snaps)
		if err == nil && !has {
			var servers []raft.Server
			for _, p := range cfg.Peers {
				servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
			}
			if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				cfg.Log.Warn("raft bootstrap", "err", err)
			}
		}
	}
	return &Replica{raft: r, fsm: f, wal: w, meta: meta, transport: trans, id: cfg.ID}, nil
}

// Close stops the replica (the others go on without it).
func (r *Replica) Close() error {
	err := r.raft.Shutdown().Error()
	return errors.Join(err, r.transport.Close(), r.wal.Close(), r.meta.Close())
}

// LeaderCh reports leadership changes of this replica (true: it leads).
func (r *Replica) LeaderCh() <-chan bool { return r.raft.LeaderCh() }

// IsLeader says whether this replica leads.
func (r *Replica) IsLeader() bool { return r.raft.State() == raft.Leader }

// Leader is the leader's id ("" while there is none).
func (r *Replica) Leader() string {
	_, id := r.raft.LeaderWithID()
	return string(id)
}

// WaitLeader waits until some replica leads, for up to d.
func (r *Replica) WaitLeader(d time.Duration) error {
	deadline := time.Now().Add(d)
	for r.Leader() == "" {
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s: no leader after %v", r.id, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Submit adds a job (phase submitted) to the table.
func (r *Replica) Submit(spec protocol.JobSpec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	return r.apply(command{Submit: &spec})
}

// Update changes a job of the table.
func (r *Replica) Update(u Update) error { return r.apply(command{Update: &u}) }

// SetPage records this replica's status page URL (it must lead).
func (r *Replica) SetPage(url string) error { return r.apply(command{Page: &Page{ID: r.id, URL: url}}) }

// LeaderPage is the page URL the leader recorded ("" when none, or no leader).
func (r *Replica) LeaderPage() string {
	id := r.Leader()
	r.fsm.mu.Lock()
	defer r.fsm.mu.Unlock()
	return r.fsm.pages[id]
}

// Delete removes a finished job from the table (ErrRunning for another).
func (r *Replica) Delete(id string) error { return r.apply(command{Delete: id}) }

func (r *Replica) apply(c command) error {
	if !r.IsLeader() {
		return ErrNotLeader
	}
	data, err := msgpack.Marshal(c)
	if err != nil {
		return err
	}
	f := r.raft.Apply(data, 10*time.Second)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		return err
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

// Barrier waits until this replica's table has every committed entry (a new
// leader calls it before reading the table).
func (r *Replica) Barrier(d time.Duration) error { return r.raft.Barrier(d).Error() }

// Jobs lists the table, by job id.
func (r *Replica) Jobs() []Job { return r.fsm.list() }

// Job returns one job of the table.
func (r *Replica) Job(id string) (Job, bool) { return r.fsm.get(id) }

// fsm is the job table as raft's state machine.
type fsm struct {
	mu    sync.Mutex
	jobs  map[string]*Job
	pages map[string]string // status page URLs by replica id
}

// Apply applies a committed command; it returns nil or the command's error.
func (f *fsm) Apply(l *raft.Log) any {
	var c command
	if err := msgpack.Unmarshal(l.Data, &c); err != nil {
		return fmt.Errorf("replica: malformed log entry %d: %w", l.Index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case c.Submit != nil:
		if _, ok := f.jobs[c.Submit.Job]; ok {
			return fmt.Errorf("%w: %s", ErrExists, c.Submit.Job)
		}
		f.jobs[c.Submit.Job] = &Job{Spec: *c.Submit, Phase: PhaseSubmitted}
	case c.Update != nil:
		j, ok := f.jobs[c.Update.Job]
		if !ok {
			return fmt.Errorf("%w: %s", ErrNoJob, c.Update.Job)
		}
		if Finished(j.Phase) {
			return nil // a finished job stays as it ended
		}
		j.Phase, j.Err, j.Outputs = c.Update.Phase, c.Update.Err, c.Update.Outputs
	case c.Delete != "":
		j, ok := f.jobs[c.Delete]
		if !ok {
			return fmt.Errorf("%w: %s", ErrNoJob, c.Delete)
		}
		if !Finished(j.Phase) {
			return fmt.Errorf("%w: %s is %s", ErrRunning, c.Delete, j.Phase)
		}
		delete(f.jobs, c.Delete)
	case c.Page != nil:
		if err := protocol.CheckPageURL(c.Page.URL); err != nil {
			return err // an entry no replica makes: what a raft port's intruder might
		}
		f.pages[c.Page.ID] = c.Page.URL
	}
	return nil
}

func (f *fsm) list() []Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Job, 0, len(f.jobs))
	for _, j := range f.jobs {
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Spec.Job < out[b].Spec.Job })
	return out
}

func (f *fsm) get(id string) (Job, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *j, true
}

// Snapshot captures the table, then the pages (raft writes it out off the
// apply loop).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	data, err := msgpack.Marshal(f.list())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	pages, err := msgpack.Marshal(f.pages)
	f.mu.Unlock()
	return snapshot(append(data, pages...)), err
}

// Restore replaces the table by a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var jobs []Job
	dec := msgpack.NewDecoder(rc)
	if err := dec.Decode(&jobs); err != nil {
		return fmt.Errorf("replica: snapshot: %w", err)
	}
	pages := map[string]string{}
	if err := dec.Decode(&pages); err != nil && !errors.Is(err, io.EOF) { // none in a snapshot of before pages
		return fmt.Errorf("replica: snapshot: pages: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages = pages
	f.jobs = make(map[string]*Job, len(jobs))
	for i := range jobs {
		f.jobs[jobs[i].Spec.Job] = &jobs[i]
	}
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
