package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/replica"
	"github.com/partopt/partopt/service"
	"github.com/partopt/partopt/worker"
)

// replicaGroup is three coordinator replicas (raft) and a worker on one NATS
// server, in this process, each replica on its own connection.
type replicaGroup struct {
	t    *testing.T
	conn cluster.ConnOptions
	// kill crashes replica i: its connection closed, its context cancelled
	// (nothing it does afterwards reaches NATS); it does not wait.
	kill   []func()
	served []chan error
	pages  []string // each replica's status page URL
	data   []string // each replica's data directory
	// workers are the two workers' counts, w1's and w2's.
	workers []*worker.Stats
}

// failoverTimeouts fail over in about a second, without flapping on a test
// machine running other packages' tests.
var failoverTimeouts = replica.Timeouts{Heartbeat: 700 * time.Millisecond, Election: 700 * time.Millisecond, LeaderLease: 350 * time.Millisecond}

// startReplicaGroup starts the group; onPhase(i, job, phase) is replica i's
// Config.OnPhase.
func startReplicaGroup(ctx context.Context, t *testing.T, onPhase func(i int, job, phase string)) *replicaGroup {
	t.Helper()
	return startReplicaGroupWith(ctx, t, onPhase, nil)
}

// startReplicaGroupWith is startReplicaGroup with prepare(i, data) called on
// replica i's data directory before it starts, when set.
func startReplicaGroupWith(ctx context.Context, t *testing.T, onPhase func(i int, job, phase string), prepare func(i int, data string)) *replicaGroup {
	t.Helper()
	srv := listeningServer(t)
	g := &replicaGroup{t: t, conn: cluster.ConnOptions{URL: srv.URL()}}
	cfg := cluster.DefaultConfig()
	cfg.AckWait, cfg.Memory = 2*time.Second, true
	addrs := testutil.FreeAddrs(t, 6)
	var peers []replica.Peer
	for i, a := range addrs[:3] {
		peers = append(peers, replica.Peer{ID: fmt.Sprintf("c%d", i), Addr: a})
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for i := range 3 {
		res, err := cluster.DialService(ctx, g.conn, cfg, fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		g.kill = append(g.kill, func() { res.Conn.Close(); cancel() })
		served := make(chan error, 1)
		g.served = append(g.served, served)
		data := t.TempDir()
		g.data = append(g.data, data)
		if prepare != nil {
			prepare(i, data)
		}
		g.pages = append(g.pages, "http://"+addrs[3+i])
		sc := service.Config{Res: res, Data: data, Log: quiet(), HTTP: addrs[3+i],
			Raft: &replica.Config{ID: peers[i].ID, Bind: peers[i].Addr, Dir: filepath.Join(data, "raft"), Peers: peers, Bootstrap: true,
				Timeouts: failoverTimeouts, Log: slog.New(slog.DiscardHandler)}, // a dead peer's dial errors
			OnPhase: func(job, phase string) { onPhase(i, job, phase) }}
		wg.Go(func() { served <- service.Serve(rctx, sc); res.Conn.Close() })
	}
	wres, err := cluster.DialService(ctx, g.conn, cfg, "test-worker")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wres.Conn.Close)
	for _, id := range []string{"w1", "w2"} {
		stats := new(worker.Stats)
		g.workers = append(g.workers, stats)
		wg.Go(func() {
			worker.Serve(ctx, wres, worker.Options{ID: id, Slots: 1, CacheDir: t.TempDir(), Log: quiet()}, stats)
		})
	}
	return g
}

// submit submits s, again until a leader takes it.
func (g *replicaGroup) submit(ctx context.Context, s job.Spec, id string) {
	g.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := service.Submit(ctx, g.conn, s, service.SubmitOptions{ID: id})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("submitting %s: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestJobIdsNameOnlyJobs: job ids share no namespace with a coordinator's own
// directories. Jobs named after every entry a replica keeps in its data
// (raft, its state; jobs, the directory of the jobs' files) run, end and are
// deleted on three replicas, and every replica's raft state is still there —
// a job named raft once wrote into it and its delete removed it, the WAL and
// snapshots with it.
func TestJobIdsNameOnlyJobs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := startReplicaGroup(ctx, t, func(int, string, string) {})
	client, err := cluster.Dial(ctx, g.conn, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Conn.Close()
	raftFiles := func() []int {
		n := make([]int, len(g.data))
		for i, data := range g.data {
			entries, _ := os.ReadDir(filepath.Join(data, "raft"))
			n[i] = len(entries)
		}
		return n
	}
	names := []string{"raft", service.JobsDir}
	for _, id := range names {
		g.submit(ctx, job.Spec{Model: blocksModel(t), Window: 8, Halo: 2}, id)
		fetchDone(ctx, t, client, id)
	}
	before := raftFiles()
	for _, id := range names {
		if err := service.Delete(ctx, client, id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	for i, n := range raftFiles() {
		if n == 0 || n < before[i] {
			t.Errorf("replica c%d: %d entries in its raft directory, %d before the deletes", i, n, before[i])
		}
	}
	g.submit(ctx, job.Spec{Model: blocksModel(t), Window: 8, Halo: 2}, "after")
	fetchDone(ctx, t, client, "after")
}

// TestALeaderKilledAtAnyPhaseFailsNoJob: a job of the default method,
// pbp+iri, on three coordinator replicas whose leader crashes as the job
// enters each phase — loading its model, dispatching windows, merging them (in
// its pbp stage and in its iri stage), writing the outputs, storing them,
// having recorded the job's end but not its final status — ends done on the
// next leader, its outputs byte for byte those of the job solved here. The
// status shows loading and storing as they happen. Its story goes on: the
// report counts the time since submission and every worker whose results were
// merged, the status the resumes, and the new leader's page (and the
// follower's, through it) shows the job that ended before the change.
func TestALeaderKilledAtAnyPhaseFailsNoJob(t *testing.T) {
	spec := job.Spec{Model: blocksModel(t), Window: 8, Halo: 2} // the default method, pbp+iri
	here := t.TempDir()
	spec.Output = here
	if _, err := job.Run(context.Background(), spec, job.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{service.PhaseLoading, coordinator.PhaseDispatching, coordinator.PhaseMerging,
		"iri/" + coordinator.PhaseDispatching, "iri/" + coordinator.PhaseMerging, service.PhaseFinishing, service.PhaseStoring, service.PhaseEnded} {
		t.Run(phase, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			id := "kill-at-" + strings.ReplaceAll(phase, "/", "-")
			var killed atomic.Int32
			killed.Store(-1)
			var killedAt atomic.Int64 // unix nanoseconds
			var shown atomic.Value    // the status's phase at the kill
			var g *replicaGroup
			var client *cluster.Resources
			var err error
			ready := make(chan struct{})
			g = startReplicaGroup(ctx, t, func(i int, job, p string) {
				if job == id && p == phase && killed.CompareAndSwap(-1, int32(i)) {
					<-ready
					if sum, err := service.Status(ctx, client, id); err == nil {
						shown.Store(sum.Phase)
					}
					killedAt.Store(time.Now().UnixNano())
					g.kill[i]()
				}
			})
			client, err = cluster.Dial(ctx, g.conn, "test-client")
			if err != nil {
				t.Fatal(err)
			}
			close(ready)
			defer client.Conn.Close()
			g.submit(ctx, spec, "before")
			fetchDone(ctx, t, client, "before")

			submitted := time.Now()
			g.submit(ctx, spec, id)
			fetched := fetchDone(ctx, t, client, id)
			k := killed.Load()
			if k < 0 {
				t.Fatalf("no leader reached phase %s", phase)
			}
			sameOutputs(t, here, fetched)
			// What the coordinator does before and after the windows shows in
			// the status too (a 16 GB model loads for minutes).
			if want := map[string]string{service.PhaseLoading: service.PhaseLoading, service.PhaseStoring: service.PhaseStoring}[phase]; want != "" && shown.Load() != want {
				t.Errorf("the status at the kill in phase %s showed %v", phase, shown.Load())
			}
			var rep struct {
				Seconds     float64  `json:"seconds"`
				Workers     int      `json:"workers"`
				WorkersSeen []string `json:"workers_seen"`
			}
			data, err := os.ReadFile(filepath.Join(fetched, job.ReportFile))
			if err == nil {
				err = json.Unmarshal(data, &rep)
			}
			var contributed []string
			for i, w := range g.workers {
				if w.Solved.Load() > 0 {
					contributed = append(contributed, fmt.Sprintf("w%d", i+1))
				}
			}
			// The report is written after the kill, by the next leader: it counts
			// at least the time from the submission to the kill (a job whose end
			// was recorded kept the report its leader wrote before).
			lower := time.Unix(0, killedAt.Load()).Sub(submitted).Seconds()
			if phase == service.PhaseEnded {
				lower = math.SmallestNonzeroFloat64
			}
			if err != nil || rep.Seconds < lower || rep.Workers != len(rep.WorkersSeen) || !slices.Equal(rep.WorkersSeen, contributed) {
				t.Errorf("report %+v (%v): want at least the %.2f s from the submission to the kill, workers %v", rep, err, lower, contributed)
			}
			// A job whose end was recorded before the kill is not resumed: the
			// next leader completes its end (the status done, not stale).
			resumes := 1
			if phase == service.PhaseEnded {
				resumes = 0
			}
			if sum, err := service.Status(ctx, client, id); err != nil || sum.Resumes != resumes || sum.Started.After(submitted.Add(time.Second)) {
				t.Errorf("status %+v, %v: want %d resumes, started at the submission (%v)", sum, err, resumes, submitted)
			}
			for i, page := range g.pages {
				if int32(i) == k {
					continue
				}
				resp, err := http.Get(page + "/jobs/before")
				if err == nil {
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Errorf("replica c%d's page of the job ended before the leader changed: %v %v", i, resp, err)
				}
			}
			if err := <-g.served[k]; err != nil {
				t.Errorf("the killed replica c%d: %v", k, err)
			}
		})
	}
}

// TestAReplicaThatDoesNotLeadKeepsNoJobFiles: job directories left in a
// replica's data by an earlier life (a leader killed while it ran a job, whose
// next leader resumed it elsewhere) are removed when the replica starts, the
// followers' included: a follower runs no job, and a 10⁸-pixel job's files
// are gigabytes.
func TestAReplicaThatDoesNotLeadKeepsNoJobFiles(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const left = "20261127-120000-0a0b0c0d" // a job id
	g := startReplicaGroupWith(ctx, t, func(int, string, string) {}, func(i int, data string) {
		dir := filepath.Join(data, service.JobsDir, left, "out", ".partopt-run-1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, job.WindowCertificatesFile), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	client, err := cluster.Dial(ctx, g.conn, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Conn.Close()
	g.submit(ctx, job.Spec{Model: blocksModel(t), Window: 8, Halo: 2}, "after")
	fetchDone(ctx, t, client, "after") // a leader was elected and every replica has started
	for i, data := range g.data {
		if _, err := os.Stat(filepath.Join(data, service.JobsDir, left)); !os.IsNotExist(err) {
			t.Errorf("replica c%d still holds the job files of its earlier life: %v", i, err)
		}
		if _, err := os.Stat(filepath.Join(data, "raft")); err != nil {
			t.Errorf("replica c%d: its raft directory: %v", i, err)
		}
	}
}
