// The cluster commands: worker, coordinator, submit, status, fetch and cancel,
// all reaching NATS with the same connection flags.
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
	"runtime"
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
	"github.com/partopt/partopt/worker"
	"github.com/spf13/cobra"
)

// natsFlags are the connection flags every cluster command takes.
type natsFlags struct{ cluster.ConnOptions }

func addNATSFlags(cmd *cobra.Command, n *natsFlags) {
	fl := cmd.Flags()
	def := os.Getenv("NATS_URL")
	if def == "" {
		def = nats.DefaultURL
	}
	fl.StringVar(&n.URL, "nats", def, "NATS server URL(s), comma-separated (default $NATS_URL)")
	fl.StringVar(&n.CredsFile, "creds", "", "NATS user credentials (JWT) file")
	fl.StringVar(&n.NKeyFile, "nkey", "", "NATS nkey seed file")
	fl.StringVar(&n.Token, "token", "", "NATS authentication token")
	fl.StringVar(&n.User, "user", "", "NATS user name")
	fl.StringVar(&n.Password, "password", "", "NATS password")
	fl.StringVar(&n.TLSCA, "tls-ca", "", "CA certificate file to verify the server")
	fl.StringVar(&n.TLSCert, "tls-cert", "", "client certificate file")
	fl.StringVar(&n.TLSKey, "tls-key", "", "client key file")
}

// open connects and opens partopt's JetStream resources.
func (n natsFlags) open(ctx context.Context, name string) (*cluster.Resources, error) {
	nc, err := cluster.Connect(n.ConnOptions, name)
	if err != nil {
		return nil, err
	}
	res, err := cluster.Open(ctx, nc, cluster.DefaultConfig())
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w (is JetStream enabled on the server?)", n.URL, err)
	}
	return res, nil
}

func newWorkerCmd() *cobra.Command {
	var n natsFlags
	var o worker.Options
	cmd := &cobra.Command{
		Use:   "worker --nats URL",
		Short: "Solve window tasks of the cluster's jobs until stopped (SIGINT/SIGTERM)",
		Long: `Pull window tasks from the cluster, one per slot, solve them and publish the
results. A worker may start or stop at any time: on SIGINT or SIGTERM it stops
taking tasks, lets running ones finish for up to --grace, then hands the rest
back to the cluster for another worker. Models come from the path in the job
(a filesystem every worker shares) or from the object store, downloaded into
--cache.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Slots < 1 {
				return fmt.Errorf("--slots %d: want at least 1", o.Slots)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := n.open(ctx, "partopt-worker")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			var stats worker.Stats
			err = worker.Serve(ctx, res, o, &stats)
			o.Log.Info("worker stopped", "solved", stats.Solved.Load(), "rejected", stats.Rejected.Load(), "failed", stats.Failed.Load(), "returned", stats.Returned.Load())
			return err
		},
	}
	addNATSFlags(cmd, &n)
	fl := cmd.Flags()
	fl.IntVar(&o.Slots, "slots", runtime.NumCPU(), "tasks solved at once")
	fl.StringVar(&o.ID, "id", "", "worker name in results and logs (default host-pid)")
	fl.StringVar(&o.CacheDir, "cache", "", "directory for downloaded models (default in the temporary directory)")
	fl.DurationVar(&o.Grace, "grace", 30*time.Second, "at shutdown, how long running tasks may finish before they are handed back")
	return cmd
}

// service is the coordinator command's state: the jobs it runs.
type service struct {
	res  *cluster.Resources
	data string
	out  io.Writer
	log  *slog.Logger

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

func newCoordinatorCmd() *cobra.Command {
	var n natsFlags
	var data, httpAddr string
	cmd := &cobra.Command{
		Use:   "coordinator --nats URL --data DIR",
		Short: "Run the jobs submitted to the cluster: dispatch windows, merge results, write outputs",
		Long: `Accept jobs from "partopt submit", run each (windows dispatched to the workers,
results merged in plan order into label files under --data/JOB) and, when a job
is done, upload its outputs (those of "partopt solve --window") to the object
store for "partopt fetch". With --http a status page and Prometheus metrics
(/metrics) are served (default localhost only).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := os.MkdirAll(data, 0o755); err != nil {
				return err
			}
			res, err := n.open(ctx, "partopt-coordinator")
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			s := &service{res: res, data: data, out: cmd.ErrOrStderr(), jobs: map[string]*serviceJob{},
				log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))}
			if httpAddr != "" {
				if err := serveStatus(ctx, cmd, httpAddr, s.views); err != nil {
					return err
				}
			}
			sub, err := res.Conn.QueueSubscribe(protocol.SubjectSubmit, "partopt-coordinators", func(m *nats.Msg) { s.submit(ctx, m) })
			if err != nil {
				return err
			}
			defer sub.Unsubscribe()
			csub, err := res.Conn.Subscribe(protocol.CancelSubject("*"), s.cancel)
			if err != nil {
				return err
			}
			defer csub.Unsubscribe()
			s.resumeAll(ctx)
			s.log.Info("coordinator ready", "nats", res.Conn.ConnectedUrlRedacted(), "data", data)
			<-ctx.Done()
			s.wg.Wait()
			return nil
		},
	}
	addNATSFlags(cmd, &n)
	cmd.Flags().StringVar(&data, "data", "partopt-data", "directory for the jobs' label files and outputs")
	cmd.Flags().StringVar(&httpAddr, "http", "localhost:8222", "status page and /metrics address (empty: none)")
	return cmd
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
	if _, err := s.res.Jobs.Get(ctx, protocol.JobSpecKey(spec.Job)); dup || err == nil {
		stop()
		reply(submitReply{Error: fmt.Sprintf("job %s exists", spec.Job)})
		return
	}
	// Stored at once, so that status and cancel know the job before it runs.
	initial, _ := json.Marshal(coordinator.Summary{Status: coordinator.Status{Job: spec.Job, Phase: "submitted",
		Pixels: int64(spec.Width) * int64(spec.Height)}, Started: time.Now()})
	if err := s.res.PutJobSpec(ctx, spec); err != nil {
		stop()
		reply(submitReply{Error: err.Error()})
		return
	}
	s.res.Jobs.Put(ctx, protocol.JobStatusKey(spec.Job), initial)
	s.log.Info("job submitted", "job", spec.Job, "model", spec.Model.FileName(), "width", spec.Width, "height", spec.Height)
	reply(submitReply{Job: spec.Job})
	s.wg.Go(func() {
		defer stop()
		s.run(jctx, spec, false)
	})
}

// resumeAll continues the jobs that a coordinator (this one, before a restart)
// left unfinished: running ones, and done ones whose outputs were not uploaded.
func (s *service) resumeAll(ctx context.Context) {
	keys, err := s.res.Jobs.Keys(ctx)
	if err != nil {
		if !errors.Is(err, jetstream.ErrNoKeysFound) {
			s.log.Error("listing jobs to resume", "err", err)
		}
		return
	}
	for _, key := range keys {
		job, ok := strings.CutSuffix(key, ".status")
		if !ok {
			continue
		}
		e, err := s.res.Jobs.Get(ctx, key)
		var sum coordinator.Summary
		if err == nil {
			err = json.Unmarshal(e.Value(), &sum)
		}
		if err != nil {
			s.log.Error("reading a job status", "job", job, "err", err)
			continue
		}
		if sum.Phase == "canceled" || sum.Phase == "failed" || sum.Phase == "done" && len(sum.Outputs) > 0 {
			continue
		}
		spec, err := s.res.JobSpec(ctx, job)
		if err != nil {
			s.log.Error("resuming a job", "job", job, "err", err)
			continue
		}
		jctx, stop := context.WithCancel(ctx)
		s.mu.Lock()
		s.jobs[job] = &serviceJob{stop: stop}
		s.mu.Unlock()
		s.log.Info("resuming job", "job", job, "phase", sum.Phase, "round", sum.Round+1)
		s.wg.Go(func() {
			defer stop()
			s.run(jctx, spec, true)
		})
	}
}

// cancel handles a Cancel of one of this coordinator's jobs (others' are left to
// their coordinators).
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
	data, _ := json.Marshal(sum)
	if _, err := s.res.Jobs.Put(context.WithoutCancel(ctx), protocol.JobStatusKey(spec.Job), data); err != nil {
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
	} else if err := worker.Download(ctx, s.res.Objects, spec.Model.Object, spec.Model.Size, spec.Model.CRC32C, path); err != nil {
		return "", err
	}
	ev := path + ".evid"
	os.Remove(ev)
	if e := spec.Evidence; e != nil {
		if e.Object == "" {
			return path, os.WriteFile(ev, e.Inline, 0o644)
		}
		if err := worker.Download(ctx, s.res.Objects, e.Object, e.Size, e.CRC32C, ev); err != nil {
			return "", err
		}
	}
	return path, nil
}

// specFlags are the solve flags of a submitted job.
func specFlags(spec protocol.JobSpec, out string) solveFlags {
	f := solveFlags{method: "pbp", boundary: spec.Variant, output: out, window: spec.Core, halo: spec.Halo,
		haloSet: true, workers: 1, rounds: spec.MaxRounds, pngMax: defaultPNGSide}
	if s, ok := spec.Persistency().Solver.(persistency.TRWS); ok {
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
			out = append(out, coordinator.JobView{Summary: j.runner.Summary(), PNG: livePNG(j.files)})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Summary.Started.After(out[b].Summary.Started) })
	return out
}

func newServerCmd() *cobra.Command {
	var o cluster.EmbeddedOptions
	cmd := &cobra.Command{
		Use:   "server --listen HOST:PORT --dir DIR",
		Short: "Run a NATS server with JetStream for a cluster (no separate install)",
		Long: `Run the NATS server that "partopt run" embeds as a process of its own, for a
cluster of coordinator and workers on machines that reach HOST:PORT. JetStream
keeps its files in --dir, so jobs survive a restart. For production, a
nats-server deployment with authentication and TLS is the better choice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.Listen == "" {
				return fmt.Errorf("--listen: give HOST:PORT")
			}
			srv, err := cluster.StartEmbedded(o)
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", srv.URL())
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:4222", "address to listen on (port 0: any free port, printed)")
	cmd.Flags().StringVar(&o.Dir, "dir", "partopt-nats", "JetStream storage directory")
	return cmd
}
