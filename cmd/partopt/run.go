// The run command: a windowed solve over an embedded NATS server, with the
// coordinator and the workers in this process (and, with --listen, workers of
// other machines joining it).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
	"github.com/spf13/cobra"
)

const runHelp = `Solve MODEL by windows as "partopt solve --method pbp --window N" does, but
distributed: an embedded NATS server with JetStream (in a temporary directory,
nothing to install) carries the window tasks to --workers worker slots in this
process and their results back to the coordinator, which merges them in plan
order. The outputs are those of the windowed solve, byte for byte (a raster's
labels.plf, persistent.plf and persistency.png; labels.sol and persistent.evid
when small enough), and report.json with "runtime": "nats-embedded" and, should a window
fail on every delivery, "lost_windows" (such windows prove nothing; the run
still finishes).

MODEL may be any model. A raster — a .grid file or a UAI model whose factors
form a 4-connected W×H grid — gets square windows (default 512 pixels, halo
32) and label files. Any other model, of any factor order (MODEL.evid
applied), gets the BFS regions of "solve --window N": regions of N variables
(default 512) plus --halo graph steps (default 2), the coordinator planning
them on the model in memory and each task carrying its region's variables and
the labels fixed around them; it writes labels.sol, persistent.evid and
report.json, those of "partopt solve --window N --halo H" whatever --workers.
With --listen HOST:PORT the server also accepts workers of other machines
("partopt worker --nats nats://HOST:PORT"); the model (and MODEL.evid) is then
uploaded to the object store for them. With --http ADDR a status page (job
progress, workers, the live persistency map of a raster) and Prometheus
metrics (/metrics) are served there.`

// embeddedRun is how a windowed solve goes over NATS: by run (an embedded
// server and in-process workers) or by the coordinator command (a cluster's
// connection and a submitted job).
type embeddedRun struct {
	listen, http string // run: where the server listens, the status page
	// res and spec, when set, are the coordinator's connection and the submitted
	// job: no server or worker is started.
	res  *cluster.Resources
	spec *protocol.JobSpec
	// started, when set, receives the job's runner (the coordinator's status page).
	started func(*coordinator.Runner, *rasterFiles)
	// resume continues the job spec from what JetStream kept of it.
	resume bool
	lost   []string // windows lost, for the report
}

func newRunCmd() *cobra.Command {
	var f solveFlags
	e := &embeddedRun{}
	cmd := &cobra.Command{
		Use:   "run MODEL -o DIR",
		Short: "Prove persistent labels by windows over an embedded NATS cluster (no server to install)",
		Long:  runHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.method, f.embedded = "pbp", e
			f.haloSet = cmd.Flags().Changed("halo")
			if f.window == 0 {
				f.window = defaultRasterWindow
			}
			if err := f.validate(); err != nil {
				return err
			}
			return runWindowed(cmd, args[0], f)
		},
	}
	addSolveFlags(cmd, &f, false)
	cmd.Flags().StringVar(&e.listen, "listen", "", "also accept workers of other machines at HOST:PORT (default: in-process only)")
	cmd.Flags().StringVar(&e.http, "http", "", "serve the status page and /metrics at ADDR (e.g. localhost:8222)")
	return cmd
}

// solveEmbedded is SolveRaster's work done by a coordinator and in-process
// workers over an embedded NATS server.
func solveEmbedded(ctx context.Context, cmd *cobra.Command, job rasterJob, files *rasterFiles, opt partition.RasterOptions, f solveFlags, status *windowStatus) (*partition.RasterResult, error) {
	if job.raster.Width*job.raster.Height == 0 {
		return nil, fmt.Errorf("empty raster")
	}
	spec, err := runSpec(job, opt, f)
	if err != nil {
		return nil, err
	}
	sum, err := runEmbedded(ctx, cmd, embeddedJob{spec: spec, path: job.path, raster: job.raster, files: files,
		stores: coordinator.Stores{Persistent: files.persistent, Labeling: files.labels, Scratch: files.scratch}}, f, status)
	if err != nil {
		return nil, err
	}
	return &partition.RasterResult{Persistent: sum.Proven, Rounds: sum.Rounds, Windows: sum.WindowsTotal, Solved: sum.Solved,
		WindowSeconds: sum.WindowSeconds, MaxWindowVars: sum.MaxWindowVars,
		PruningIterations: sum.PruningIterations, SolverIterations: sum.SolverIterations}, nil
}

// embeddedJob is a job for runEmbedded: its spec as run submits it, and what the
// coordinator and the in-process workers need of its model.
type embeddedJob struct {
	spec protocol.JobSpec
	// path is the model file (uploaded for the workers of other machines with
	// --listen), evPath a graph job's evidence file (uploaded with it: those
	// workers condition the model on it).
	path, evPath string
	raster       partition.Raster // a raster job's model
	graph        *model.Model     // a graph job's model, conditioned on the evidence
	stores       coordinator.Stores
	files        *rasterFiles // a raster job's label files (the live map); nil for a graph job
}

// runEmbedded runs a job through a coordinator over NATS: an embedded server and
// in-process workers (run), or the cluster's connection with the submitted spec
// (the coordinator command), which must describe the same model.
func runEmbedded(ctx context.Context, cmd *cobra.Command, job embeddedJob, f solveFlags, status *windowStatus) (coordinator.Summary, error) {
	e := f.embedded
	res := e.res
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	if res == nil {
		dir, err := os.MkdirTemp("", "partopt-nats-")
		if err != nil {
			return coordinator.Summary{}, err
		}
		defer os.RemoveAll(dir)
		srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: dir, Listen: e.listen})
		if err != nil {
			return coordinator.Summary{}, err
		}
		defer srv.Close()
		nc, err := cluster.Connect(cluster.ConnOptions{Server: srv}, "partopt-run")
		if err != nil {
			return coordinator.Summary{}, err
		}
		defer nc.Close()
		if res, err = cluster.Open(ctx, nc, cluster.DefaultConfig()); err != nil {
			return coordinator.Summary{}, err
		}
		defer startLocalWorkers(ctx, res, job.raster, job.graph, f.workers, log)()
		if url := srv.URL(); url != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "partopt: workers of other machines may join with: partopt worker --nats %s\n", url)
		}
	}
	spec := job.spec
	var err error
	if e.spec != nil {
		s := e.spec
		if layout(*s) != layout(spec) || s.Width != spec.Width || s.Height != spec.Height || s.Labels != spec.Labels {
			if spec.Layout == protocol.LayoutGraph || s.Layout == protocol.LayoutGraph {
				return coordinator.Summary{}, fmt.Errorf("job %s is a %s of %d×%d variables and %d labels, its model %s a %s of %d×%d and %d",
					s.Job, layout(*s), s.Width, s.Height, s.Labels, job.path, layout(spec), spec.Width, spec.Height, spec.Labels)
			}
			return coordinator.Summary{}, fmt.Errorf("job %s is a %d×%d raster of %d labels, its model %s one of %d×%d and %d", s.Job, s.Width, s.Height, s.Labels, job.path, spec.Width, spec.Height, spec.Labels)
		}
		spec = *e.spec
	} else if e.listen != "" {
		if spec.Model, err = uploadModel(ctx, res, spec.Job, job.path); err != nil {
			return coordinator.Summary{}, err
		}
		if job.evPath != "" {
			if spec.Evidence, err = uploadFile(ctx, res, protocol.EvidenceObject(spec.Job), job.evPath); err != nil {
				return coordinator.Summary{}, err
			}
		}
	}
	var proven int64
	if proven, err = partition.CopyStore(job.stores.Scratch, job.stores.Persistent, spec.Width, spec.Height); err != nil {
		return coordinator.Summary{}, err
	}
	runner, err := coordinator.NewRunner(res, spec, proven, job.stores,
		coordinator.RunOptions{Log: log, Metrics: serviceMetrics(), Resume: e.resume, Model: job.graph})
	if err != nil {
		return coordinator.Summary{}, err
	}
	if e.started != nil {
		e.started(runner, job.files)
	}
	if e.http != "" {
		if err := serveStatus(ctx, cmd, e.http, func() []coordinator.JobView {
			return []coordinator.JobView{{Summary: runner.Summary(), PNG: filesPNG(job.files)}}
		}); err != nil {
			return coordinator.Summary{}, err
		}
	}
	progressDone, progressStopped := make(chan struct{}), make(chan struct{})
	go func() { // the status line follows the coordinator
		defer close(progressStopped)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				s := runner.Summary()
				status.update(partition.RasterProgress{Round: s.Round, WindowsDone: s.Merged, Windows: s.Windows, Persistent: s.Proven})
			}
		}
	}()
	sum, err := runner.Run(ctx)
	close(progressDone)
	<-progressStopped
	if err != nil {
		return sum, err
	}
	for _, w := range sum.LostWindows {
		f.embedded.lost = append(f.embedded.lost, fmt.Sprintf("round %d window %d", w.Round, w.Window))
	}
	if len(sum.Errors) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "partopt: %d windows lost (they prove nothing): %v\n", len(sum.LostWindows), sum.Errors)
	}
	return sum, nil
}

// filesPNG is livePNG of a raster job's label files; nil for a graph job, which
// has none (the status page then shows no map).
func filesPNG(files *rasterFiles) func(w io.Writer, maxSide int) error {
	if files == nil {
		return nil
	}
	return livePNG(files)
}

// layout is a spec's layout, raster when unset.
func layout(s protocol.JobSpec) string {
	if s.Layout == "" {
		return protocol.LayoutRaster
	}
	return s.Layout
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

// runSpec is the job of a run: the flags' windows and solver options.
func runSpec(job rasterJob, opt partition.RasterOptions, f solveFlags) (protocol.JobSpec, error) {
	t := f.trwsOptions()
	abs, err := filepath.Abs(job.path)
	if err != nil {
		return protocol.JobSpec{}, err
	}
	spec := protocol.JobSpec{Job: newJobID(), Model: protocol.ModelRef{Path: abs},
		Width: job.raster.Width, Height: job.raster.Height, Labels: job.labels,
		Core: opt.Core, Halo: opt.Halo, MaxRounds: opt.MaxRounds, Variant: opt.Persistency.Variant.String(),
		TRWS: protocol.TRWSOptions{MaxIterations: t.MaxIterations, GapTolerance: t.GapTolerance,
			StallIterations: t.StallIterations, StallTolerance: t.StallTolerance, CheckEvery: t.CheckEvery},
		CreatedAt: time.Now()}
	return spec, spec.Validate()
}

// newJobID is a fresh job id: the time and a random suffix.
func newJobID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// uploadModel puts the model file in the object store for workers without the
// file, returning its reference.
func uploadModel(ctx context.Context, res *cluster.Resources, job, path string) (protocol.ModelRef, error) {
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
	name := protocol.ModelObject(job)
	if err := res.Put(ctx, name, f); err != nil {
		return protocol.ModelRef{}, fmt.Errorf("uploading the model: %w", err)
	}
	return protocol.ModelRef{Object: name, Size: size, CRC32C: crc.Sum32(), Name: filepath.Base(path)}, nil
}
