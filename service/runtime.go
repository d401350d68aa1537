package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/internal/dirlock"
	"github.com/partopt/partopt/internal/redact"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
)

// Embedded is the job.Runtime of "partopt run": an embedded NATS server with
// JetStream in a temporary directory, a coordinator and Workers worker slots in
// this process. The outputs are those of the job solved in this process, byte
// for byte.
type Embedded struct {
	Workers int // worker slots (at least 1)
	// Listen, when set, also accepts workers of other machines at HOST:PORT; the
	// model (and its evidence) is then uploaded to the object store for them.
	// Server holds the server's authentication (its Dir and Listen are set here).
	Listen string
	Server cluster.EmbeddedOptions
	// HTTP, when set, serves the status page and /metrics there.
	HTTP string
	Log  *slog.Logger // nil: warnings to stderr
	// Note, when set, receives messages for the user (how workers may join,
	// the status page's address, lost windows).
	Note func(string)
	// State, when set, keeps the server's store (the window tasks and the
	// results of every stage) in this directory instead of a temporary one
	// removed at the end: a run stopped before its end — interrupted, killed,
	// its machine restarted — and started again with the same State and job
	// resumes from the results it stored, as a cluster's new leader does, and
	// writes the outputs of an uninterrupted run. One run uses a State at a
	// time (from its first stage until Close); RemoveState removes it once
	// the outputs are written.
	State string

	stages int    // the stages run so far with State: the next one's job id
	unlock func() // State's lock, held from the first stage
}

// stateStore is the server's store in Embedded.State, stateModel the
// description of the model the state was made for.
const (
	stateStore = "nats"
	stateModel = "model.json"
)

// modelStamp is what a run state records of its model file: a model
// regenerated at the same path is another model.
type modelStamp struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// sameModel records the model's stamp in State (nothing without one) or, when
// one is recorded, refuses a model that differs from it: the stored windows'
// proofs would be checked against another model and the work done lost.
func (e *Embedded) sameModel(path string) error {
	if e.State == "" {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return err
	}
	now := modelStamp{Path: abs, Size: info.Size(), Modified: info.ModTime().UTC()}
	file := filepath.Join(e.State, stateModel)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		data, err := json.Marshal(now)
		if err != nil {
			return err
		}
		return os.WriteFile(file, data, 0o644)
	}
	var was modelStamp
	if err == nil {
		err = json.Unmarshal(data, &was)
	}
	if err != nil {
		return fmt.Errorf("the run state in %s: %s: %w", e.State, stateModel, err)
	}
	if was.Path != now.Path || was.Size != now.Size || !was.Modified.Equal(now.Modified) {
		return fmt.Errorf("the run state in %s was made for the model %s of %d bytes modified %s; %s is now %d bytes modified %s: remove the state, or give another --state",
			e.State, was.Path, was.Size, was.Modified.Format(time.RFC3339), now.Path, now.Size, now.Modified.Format(time.RFC3339))
	}
	return nil
}

// RemoveState removes what the run kept in State (nothing without one): the
// store, and State itself when nothing else is left in it; State is released.
func (e *Embedded) RemoveState() error {
	if e.State == "" {
		return nil
	}
	defer e.Close()
	if err := os.RemoveAll(filepath.Join(e.State, stateStore)); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(e.State, stateModel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	os.Remove(e.State) // when empty: files of the user's own stay, and so does State
	return nil
}

// store is the server's store directory: State's, locked against another run
// from the first stage until Close, or a temporary one that done removes.
func (e *Embedded) store() (dir string, done func(), err error) {
	if e.State == "" {
		if dir, err = os.MkdirTemp("", "partopt-nats-"); err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	if e.unlock == nil {
		if err := os.MkdirAll(e.State, 0o755); err != nil {
			return "", nil, fmt.Errorf("run state: %w", err)
		}
		if e.unlock, err = dirlock.TryLock(e.State); err != nil {
			return "", nil, fmt.Errorf("run state: %w (one run at a time uses a state directory)", err)
		}
	}
	return filepath.Join(e.State, stateStore), func() {}, nil
}

// Close releases State for another run (nothing without one); the process's
// end releases it too.
func (e *Embedded) Close() {
	if e.unlock != nil {
		e.unlock()
		e.unlock = nil
	}
}

// resumable says whether an earlier run with State stored the job spec: it
// is then resumed, as submitted then. A stored job that differs from spec in
// anything but its time is another run's, which this one must not take for
// its own.
func (e *Embedded) resumable(ctx context.Context, res *cluster.Resources, spec *protocol.JobSpec) (bool, error) {
	entry, err := res.Jobs.Get(ctx, protocol.JobSpecKey(spec.Job))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil // none stored: a fresh start
	}
	if err != nil {
		return false, fmt.Errorf("the run state in %s: %w", e.State, err)
	}
	prev, err := protocol.Decode[protocol.JobSpec](entry.Value(), protocol.MaxMessageBytes)
	if err != nil { // another partopt's, or damaged: not this run's to take over
		return false, fmt.Errorf("the run state in %s cannot be resumed by this partopt (%w): remove it, or give another --state", e.State, err)
	}
	a, b := prev, *spec
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	x, errA := protocol.Marshal(a)
	y, errB := protocol.Marshal(b)
	if errA != nil || errB != nil || !bytes.Equal(x, y) {
		return false, fmt.Errorf("the run state in %s is that of another job (%s of %s, %d×%d, window %d, halo %d): remove it, or give another --state", e.State,
			prev.MethodName(), prev.Model.FileName(), prev.Width, prev.Height, prev.Core, prev.Halo)
	}
	spec.CreatedAt = prev.CreatedAt
	return true, nil
}

// Windows implements job.Runtime.
func (e *Embedded) Windows(ctx context.Context, d *job.Distributed) (*job.Outcome, error) {
	log := e.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: redact.ReplaceAttr}))
	}
	dir, release, err := e.store()
	if err != nil {
		return nil, err
	}
	defer release()
	if err := e.sameModel(d.ModelPath); err != nil {
		return nil, err
	}
	opts := e.Server
	opts.Dir, opts.Listen = dir, e.Listen
	srv, err := cluster.StartEmbedded(opts)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	nc, err := cluster.Connect(cluster.ConnOptions{Server: srv}, "partopt-run")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	res, err := cluster.Open(ctx, nc, cluster.DefaultConfig())
	if err != nil {
		return nil, err
	}
	defer startLocalWorkers(ctx, res, d.Raster, d.Graph, max(e.Workers, 1), log)()
	note := noteFunc(e.Note)
	if url := srv.URL(); url != "" {
		join := "partopt worker --nats " + reachableURL(url)
		switch { // the secret is not printed: it is in a file on their machine
		case e.Server.Token != "":
			join += " --token-file FILE"
		case e.Server.User != "":
			join += " --user " + e.Server.User + " --password-file FILE"
		}
		note("workers of other machines may join with: " + join)
	}
	spec := d.Spec
	if e.State != "" {
		spec.Job = fmt.Sprintf("run-%d", e.stages) // its stage's: a run's stages come in the same order every time
		e.stages++
	}
	if e.Listen != "" {
		if spec.Model, err = UploadModel(ctx, res, spec.Job, d.ModelPath); err != nil {
			return nil, err
		}
		if d.EvidencePath != "" {
			if spec.Evidence, err = uploadFile(ctx, res, protocol.EvidenceObject(spec.Job), d.EvidencePath); err != nil {
				return nil, err
			}
		}
	}
	resume := false
	if e.State != "" {
		if resume, err = e.resumable(ctx, res, &spec); err != nil {
			return nil, err
		}
		if resume {
			note(fmt.Sprintf("resuming the run stored in %s (stage %d): the windows it solved are merged again, not solved", e.State, e.stages))
		}
		defer func() {
			if ctx.Err() != nil {
				note(fmt.Sprintf("the run's state stays in %s: the same command resumes it", e.State))
			}
		}()
	}
	var page func(*coordinator.Runner) error
	if e.HTTP != "" {
		// The page ends with this job, so that the next (pbp+iri's second) can
		// serve its own at the same address.
		pageCtx, stop := context.WithCancel(ctx)
		var stopped <-chan error
		defer func() {
			stop()
			if stopped != nil {
				<-stopped
			}
		}()
		page = func(r *coordinator.Runner) (err error) {
			stopped, err = ServeStatus(pageCtx, e.HTTP, note, func() []coordinator.JobView {
				return []coordinator.JobView{{Summary: r.Summary(), PNG: d.PNG}}
			})
			return err
		}
	}
	return drive(ctx, res, spec, d, driveOptions{log: log, note: note, resume: resume, started: page, runtime: job.RuntimeEmbedded})
}

// noteFunc is note, or a function that drops the notes.
func noteFunc(note func(string)) func(string) {
	if note == nil {
		return func(string) {}
	}
	return note
}

// driveOptions configure drive.
type driveOptions struct {
	log    *slog.Logger
	note   func(string)
	resume bool
	// started, when set, receives the job's runner before it runs.
	started func(*coordinator.Runner) error
	// runtime is the reports' Provenance.Runtime (job.RuntimeEmbedded,
	// job.RuntimeCluster).
	runtime string
	// onPhase, when set, is told the job's phases (Config.OnPhase).
	onPhase func(phase string)
	// statusAs is RunOptions.StatusAs.
	statusAs string
}

// drive runs the windowed job d as spec (d.Spec, or the job as submitted) through
// a coordinator.Runner over res, and reports its outcome.
func drive(ctx context.Context, res *cluster.Resources, spec protocol.JobSpec, d *job.Distributed, o driveOptions) (*job.Outcome, error) {
	var proven int64 // a raster iri job counts its own, from its planes
	if d.Scratch != nil {
		var err error
		if proven, err = partition.CopyStore(d.Scratch, d.Persistent, spec.Width, spec.Height); err != nil {
			return nil, err
		}
	}
	runner, err := coordinator.NewRunner(res, spec, proven, coordinator.Stores{Persistent: d.Persistent, Labeling: d.Labeling, Scratch: d.Scratch},
		coordinator.RunOptions{Log: o.log, Metrics: Metrics(), Resume: o.resume, Model: d.Graph, Raster: d.Raster, Plan: d.Plan, MaxLevel: d.MaxLevel, Domains: d.Domains,
			Windows: d.Windows, Alive: d.Alive, Prior: d.Prior, Proofs: d.Proofs, OnPhase: o.onPhase, StatusAs: o.statusAs})
	if err != nil {
		return nil, err
	}
	if o.started != nil {
		if err := o.started(runner); err != nil {
			return nil, err
		}
	}
	progressDone, progressStopped := make(chan struct{}), make(chan struct{})
	go func() { // progress follows the coordinator
		defer close(progressStopped)
		if d.Progress == nil {
			return
		}
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				s := runner.Shown() // a resumed run's last counts while it replays its results
				d.Progress(partition.RasterProgress{Round: s.Round, WindowsDone: s.Merged, Windows: s.Windows, Persistent: s.Proven,
					Resuming: s.Phase == coordinator.PhaseResuming, Reused: s.ReusedInRound(), Waiting: s.Stored})
			}
		}
	}()
	sum, err := runner.Run(ctx)
	close(progressDone)
	<-progressStopped
	if err != nil {
		return nil, err
	}
	if o.onPhase != nil {
		o.onPhase(PhaseFinishing) // the caller writes the outputs
	}
	out := &job.Outcome{Runtime: o.runtime, Workers: slices.Sorted(maps.Keys(sum.Workers)), Started: sum.Started, RasterResult: partition.RasterResult{Persistent: sum.Proven, Rounds: sum.Rounds,
		Windows: sum.WindowsTotal, Solved: sum.Solved, WindowSeconds: sum.WindowSeconds, MaxWindowVars: sum.MaxWindowVars,
		PruningIterations: sum.PruningIterations, SolverIterations: sum.SolverIterations}}
	out.Elimination, out.RasterElimination = runner.Elimination(), runner.RasterElimination()
	for _, w := range sum.LostWindows {
		out.Lost = append(out.Lost, fmt.Sprintf("round %d window %d", w.Round+1, w.Window))
	}
	if len(sum.Errors) > 0 {
		o.note(fmt.Sprintf("%d windows lost (they prove nothing): %v", len(sum.LostWindows), sum.Errors))
	}
	return out, nil
}

// localGrace is how long the in-process workers' running tasks may go on once the
// run ends: enough to ack a result published just before (a run of many small
// windows ends while its workers ack), never the length of a solve.
const localGrace = time.Second

// startLocalWorkers serves tasks on slots in-process goroutines, which share the
// already open raster or graph model; the returned function stops them and waits.
func startLocalWorkers(ctx context.Context, res *cluster.Resources, raster partition.Raster, graph *model.Model, slots int, log *slog.Logger) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		worker.Serve(wctx, res, worker.Options{ID: "local", Slots: slots, Log: log, Grace: localGrace,
			Models: func(context.Context, protocol.JobSpec) (partition.Raster, io.Closer, error) { return raster, nil, nil },
			Graphs: func(context.Context, protocol.JobSpec) (*model.Model, error) { return graph, nil }}, nil)
	}()
	return func() { cancel(); <-done }
}

// UploadModel puts the model file in the object store for workers without the
// file, returning its reference.
func UploadModel(ctx context.Context, res *cluster.Resources, jobID, path string) (protocol.ModelRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return protocol.ModelRef{}, err
	}
	defer f.Close()
	crc := protocol.NewCRC32C()
	size, err := io.Copy(crc, f)
	if err != nil {
		return protocol.ModelRef{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return protocol.ModelRef{}, err
	}
	name := protocol.ModelObject(jobID)
	if err := res.Put(ctx, name, f); err != nil {
		return protocol.ModelRef{}, fmt.Errorf("uploading the model: %w", err)
	}
	return protocol.ModelRef{Object: name, Size: size, CRC32C: crc.Sum32(), Name: filepath.Base(path)}, nil
}

// uploadFile puts a small file in the object store as name.
func uploadFile(ctx context.Context, res *cluster.Resources, name, path string) (*protocol.Payload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := res.PutBytes(ctx, name, data); err != nil {
		return nil, err
	}
	return &protocol.Payload{Object: name, Size: int64(len(data)), CRC32C: protocol.CRC32C(data)}, nil
}

// reachableURL is the server URL u as other machines reach it: a server
// listening on every address (0.0.0.0, ::) is named by this host's name.
func reachableURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	host, port, err := net.SplitHostPort(p.Host)
	if err != nil || !(host == "0.0.0.0" || host == "::" || host == "") {
		return u
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		return u
	}
	p.Host = net.JoinHostPort(name, port)
	return p.String()
}
