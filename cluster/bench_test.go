package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
)

// BenchmarkCoordinatorTrivialWindows measures the runtime's cost per window:
// 2×2-pixel windows without halo (solved in microseconds) of a 100×100 raster,
// 2500 per job, through the embedded server, 8 worker slots and the coordinator
// (dispatch, fixed labels, results, plan-order merges). Target: ≥ 1000 windows/s.
func BenchmarkCoordinatorTrivialWindows(b *testing.B) {
	const w, h, core = 100, 100, 2
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	open := func(name string) *cluster.Resources {
		nc, err := cluster.Connect(cluster.ConnOptions{Server: srv}, name)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		cfg := cluster.DefaultConfig()
		cfg.Memory = true
		res, err := cluster.Open(context.Background(), nc, cfg)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	m := random.PottsDenoising(random.New(1), w, h, 2, 0.9, 4, 1.3)
	raster, err := partition.RasterOf(m, w, h)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wres := open("workers")
	go worker.Serve(ctx, wres, worker.Options{ID: "bench", Slots: 8, Log: quiet,
		Models: func(context.Context, protocol.JobSpec) (partition.Raster, io.Closer, error) { return raster, nil, nil }}, nil)
	cres := open("coordinator")
	windows := 0
	start := time.Now()
	b.ResetTimer()
	for i := range b.N {
		spec := protocol.JobSpec{Job: fmt.Sprintf("bench-%d", i), Model: protocol.ModelRef{Path: "/m.uai"}, Width: w, Height: h, Labels: 2,
			Core: core, Halo: 0, MaxRounds: 1, Variant: protocol.VariantInvariant}
		r, err := coordinator.NewRunner(cres, spec, 0, coordinator.Stores{Persistent: partition.NewMemStore(w, h),
			Labeling: partition.NewMemStore(w, h), Scratch: partition.NewMemStore(w, h)}, coordinator.RunOptions{Log: quiet, Raster: raster})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := r.Run(ctx)
		if err != nil {
			b.Fatal(err)
		}
		windows += sum.Dispatched
	}
	b.ReportMetric(float64(windows)/time.Since(start).Seconds(), "windows/s")
}

// BenchmarkNATSPerWindowMessages measures the messages of one real-size window
// through the embedded server with file storage: its task (fixed labels of
// 580×580 pixels inline, ~336 KB) published, fetched and acked, and its result
// (~630 KB: 544² persistent labels and 512² relaxed ones) published.
func BenchmarkNATSPerWindowMessages(b *testing.B) {
	nc := embeddedConn(b)
	ctx := context.Background()
	res, err := cluster.Open(ctx, nc, cluster.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	task, result := make([]byte, 580*580), make([]byte, 544*544+512*512)
	b.SetBytes(int64(len(task) + len(result)))
	b.ResetTimer()
	for i := range b.N {
		if _, err := res.JS.Publish(ctx, res.Names.TaskSubject("bench"), task); err != nil {
			b.Fatal(err)
		}
		batch, err := res.Workers.Fetch(1)
		if err != nil {
			b.Fatal(err)
		}
		for m := range batch.Messages() {
			if err := m.DoubleAck(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := res.JS.Publish(ctx, res.Names.ResultSubject("bench", 0, i), result); err != nil {
			b.Fatal(err)
		}
	}
}
