package service_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/service"
	"github.com/partopt/partopt/worker"
)

// blocksGrid writes blocksModel as a .grid file: a raster on which pbp
// leaves labels for label elimination.
func blocksGrid(t *testing.T) string {
	t.Helper()
	m, err := modelfile.Read(blocksModel(t))
	if err != nil {
		t.Fatal(err)
	}
	w, h, ok := grid.Dims(m)
	if !ok {
		t.Fatal("the blocks model is not a raster")
	}
	path := filepath.Join(t.TempDir(), "blocks.grid")
	if err := grid.WriteModelFile(path, m, w, h, 8); err != nil {
		t.Fatal(err)
	}
	return path
}

// eliminationReport is what a report says of an elimination.
type eliminationReport struct {
	Method     string `json:"method"`
	Eliminated *int64 `json:"eliminated_labels"`
	PBP        *int64 `json:"pbp_persistent_variables"`
	Persistent int64  `json:"persistent_variables"`
	Runtime    string `json:"runtime"`
}

func readEliminationReport(t *testing.T, dir string) eliminationReport {
	t.Helper()
	var rep eliminationReport
	data, err := os.ReadFile(filepath.Join(dir, job.ReportFile))
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil || rep.Eliminated == nil || *rep.Eliminated == 0 {
		t.Fatalf("report %+v, %v: want labels eliminated", rep, err)
	}
	return rep
}

// TestSubmittedGridEliminationRunsAsARasterJob: label elimination of a .grid
// file — method iri, and the default pbp+iri — submitted to a coordinator
// service, and run through partopt run's embedded runtime, is a raster iri job
// (rectangles, the labels alive in label files on the coordinator, the model
// read by windows on the worker): its files are those of solve --window byte
// for byte, and pbp+iri's second stage eliminates from what its first proved.
func TestSubmittedGridEliminationRunsAsARasterJob(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := listeningServer(t)
	conn := cluster.ConnOptions{URL: srv.URL()}
	_, served, _ := startCluster(ctx, t, conn, true)
	wres := dialService(ctx, t, conn, "test-worker")
	var rasterIRI, graph atomic.Int32 // the tasks of raster iri windows, of graph windows
	go worker.Serve(ctx, wres, worker.Options{ID: "w-", Slots: 2, CacheDir: t.TempDir(), Log: quiet(), OnTask: func(task protocol.WindowTask) {
		switch {
		case task.Domains != nil:
			rasterIRI.Add(1)
		case task.Graph != nil:
			graph.Add(1)
		}
	}}, nil)
	client, err := cluster.Dial(ctx, conn, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Conn.Close()
	path := blocksGrid(t)
	for _, m := range []job.Method{job.IRI, ""} {
		s := job.Spec{Model: path, Method: m, Window: 8, Halo: 2}
		w, err := job.Wire(s)
		if err != nil || w.Layout != "" || (m == job.IRI) != w.RasterIRI() {
			t.Fatalf("method %q: wire spec %+v, %v: want a raster job", m, w, err)
		}
		here := t.TempDir()
		s.Output = here
		if _, err := job.Run(ctx, s, job.Options{}); err != nil {
			t.Fatal(err)
		}
		id, err := service.Submit(ctx, conn, s, service.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fetched := fetchDone(ctx, t, client, id)
		sameOutputs(t, here, fetched)
		if rasterIRI.Load() == 0 || graph.Load() != 0 {
			t.Errorf("method %q: %d raster iri tasks, %d graph tasks: want raster iri tasks only", m, rasterIRI.Load(), graph.Load())
		}
		rasterIRI.Store(0)
		rep := readEliminationReport(t, fetched)
		if rep.Runtime != job.RuntimeCluster || (m == "" && (rep.Method != string(job.PBPIRI) || rep.PBP == nil || *rep.PBP >= rep.Persistent)) {
			t.Errorf("method %q: report %+v: want the cluster's, pbp+iri proving more than pbp", m, rep)
		}
		ran := t.TempDir()
		s.Output = ran
		if _, err := job.Run(ctx, s, job.Options{Runtime: &service.Embedded{Workers: 2, Log: quiet()}}); err != nil {
			t.Fatal(err)
		}
		sameOutputs(t, here, ran)
		if rep := readEliminationReport(t, ran); rep.Runtime != job.RuntimeEmbedded {
			t.Errorf("method %q: run's report %+v: want the embedded runtime", m, rep)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestCoordinatorRestartResumesASubmittedGridElimination: a pbp+iri job on a
// .grid file whose coordinator stops in the middle of its elimination stage
// (after a few merges) is resumed by the next coordinator, on new label files:
// the stored results of both stages merged again in plan order, the alive
// planes rebuilt from pbp's persistent map, it ends done with the files of
// solve --window byte for byte.
func TestCoordinatorRestartResumesASubmittedGridElimination(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := listeningServer(t)
	conn := cluster.ConnOptions{URL: srv.URL()}
	wres := dialService(ctx, t, conn, "test-worker")
	go worker.Serve(ctx, wres, worker.Options{ID: "w", Slots: 2, CacheDir: t.TempDir(), Log: quiet()}, nil)
	client, err := cluster.Dial(ctx, conn, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Conn.Close()

	s := job.Spec{Model: blocksGrid(t), Window: 8, Halo: 2} // the default method, pbp+iri
	here := t.TempDir()
	s.Output = here
	if _, err := job.Run(ctx, s, job.Options{}); err != nil {
		t.Fatal(err)
	}
	const id = "restart-grid"
	// The first coordinator stops at its elimination's third merge.
	first, stop := context.WithCancel(ctx)
	defer stop()
	var merges atomic.Int32
	coordinatorServes := func(ctx context.Context, onPhase func(job, phase string)) chan error {
		res := dialService(ctx, t, conn, "test-coordinator")
		served := make(chan error, 1)
		go func() {
			served <- service.Serve(ctx, service.Config{Res: res, Data: t.TempDir(), Log: quiet(), OnPhase: onPhase})
			res.Conn.Close()
		}()
		return served
	}
	served := coordinatorServes(first, func(job, phase string) {
		if job == id && phase == "iri/"+coordinator.PhaseMerging && merges.Add(1) == 3 {
			stop()
		}
	})
	if _, err := service.Submit(ctx, conn, s, service.SubmitOptions{ID: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("the first coordinator: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the first coordinator did not stop: %d merges of the elimination (a job run twice on it stalled so)", merges.Load())
	}
	if merges.Load() < 3 {
		t.Fatalf("the first coordinator stopped after %d merges of the elimination", merges.Load())
	}
	served = coordinatorServes(ctx, nil)
	fetched := fetchDone(ctx, t, client, id)
	sameOutputs(t, here, fetched)
	if sum, err := service.Status(ctx, client, id); err != nil || sum.Resumes < 1 {
		t.Errorf("status %+v, %v: want a resume", sum, err)
	}
	readEliminationReport(t, fetched)
	cancel()
	if err := <-served; err != nil {
		t.Errorf("the second coordinator: %v", err)
	}
}
