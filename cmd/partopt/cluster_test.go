package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
)

// rasterOutputs are the files a windowed raster solve writes that must not
// depend on how its windows were distributed.
var rasterOutputs = []string{labelTilesFile, persistentTilesFile, persistencyPNG, labelsFile, persistentFile}

// sameOutputs fails unless dirs a and b hold byte-identical raster outputs.
func sameOutputs(t *testing.T, a, b string) {
	t.Helper()
	for _, name := range rasterOutputs {
		x, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and %s", name, a, b)
		}
	}
}

// TestRunEqualsWindowedSolve: run (embedded NATS, in-process workers) writes the
// outputs of solve --window byte for byte, for a .grid file with evidence and for
// a UAI raster; a model that is not a raster is refused.
func TestRunEqualsWindowedSolve(t *testing.T) {
	gp, up := genGrid(t, "3")
	if err := os.WriteFile(gp+".evid", []byte("2 5 3 100 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{gp, up} {
		args := []string{"--window", "8", "--halo", "2", "--workers", "2"}
		want := solveWindowed(t, model, 24*16, 24, 16, args...)
		dir := filepath.Join(t.TempDir(), "run")
		code, stdout, stderr := partopt(append([]string{"run", "-o", dir, model}, args...)...)
		if code != 0 {
			t.Fatalf("run %s: exit %d: %s", model, code, stderr)
		}
		sameOutputs(t, want.dir, dir)
		var rep windowedReport
		data, _ := os.ReadFile(filepath.Join(dir, reportFile))
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		w := want.report
		if rep.Runtime != "nats-embedded" || rep.Windows != w.Windows || rep.WindowsSolved != w.WindowsSolved || rep.Rounds != w.Rounds ||
			rep.PersistentVariables != w.PersistentVariables || rep.Observed != w.Observed || *rep.Energy != *w.Energy || len(rep.LostWindows) != 0 {
			t.Errorf("run report %s\nsolve report %+v", data, w)
		}
		if !strings.HasPrefix(stdout, "persistent ") {
			t.Errorf("stdout %q", stdout)
		}
	}
	path := writeFrustrated(t, t.TempDir())
	if code, _, stderr := partopt("run", "-o", t.TempDir(), path); code != exitBadInput || !strings.Contains(stderr, "not a raster") {
		t.Errorf("a model that is not a raster: exit %d, %q", code, stderr)
	}
}

// TestClusterCommandsEndToEnd: a NATS server, a coordinator and a worker as
// commands; jobs submitted (uploaded, or by a shared path) finish with the
// outputs of the local windowed solve, which fetch downloads; status reports
// them; cancel stops a running job; errors are clear.
func TestClusterCommandsEndToEnd(t *testing.T) {
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.URL()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var logs [3]bytes.Buffer
	data := t.TempDir()
	start := func(ctx context.Context, i int, args ...string) (done chan struct{}) {
		done = make(chan struct{})
		wg.Go(func() {
			defer close(done)
			if code := runContext(ctx, args, &bytes.Buffer{}, &logs[i]); code != 0 {
				t.Errorf("%s: exit %d", args[0], code)
			}
		})
		return done
	}
	coordCtx, stopCoordinator := context.WithCancel(ctx)
	coordinatorDone := start(coordCtx, 0, "coordinator", "--nats", url, "--data", data, "--http", "")
	start(ctx, 1, "worker", "--nats", url, "--slots", "2", "--grace", "0s", "--cache", t.TempDir())
	defer func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("coordinator log:\n%s\nworker log:\n%s\nrestarted coordinator log:\n%s", logs[0].String(), logs[1].String(), logs[2].String())
		}
	}()
	nats := []string{"--nats", url}
	cli := func(args ...string) (int, string, string) { return partopt(append(args, nats...)...) }

	gp, up := genGrid(t, "3")
	if err := os.WriteFile(gp+".evid", []byte("2 5 3 100 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--window", "8", "--halo", "2"}
	for _, c := range []struct {
		model string
		extra []string
	}{{gp, nil}, {up, []string{"--shared", "--job", "shared-uai"}}} {
		want := solveWindowed(t, c.model, 24*16, 24, 16, args...)
		code, stdout, stderr := cli(append(append([]string{"submit", c.model}, args...), c.extra...)...)
		if code != 0 {
			t.Fatalf("submit: exit %d: %s", code, stderr)
		}
		job := strings.TrimSpace(stdout)
		if code, stdout, stderr = cli("status", "--wait", job); code != 0 || !strings.Contains(stdout, "done") {
			t.Fatalf("status --wait: exit %d: %s %s", code, stdout, stderr)
		}
		dir := filepath.Join(t.TempDir(), "fetched")
		if code, _, stderr = cli("fetch", job, "-o", dir); code != 0 {
			t.Fatalf("fetch: exit %d: %s", code, stderr)
		}
		sameOutputs(t, want.dir, dir)
		code, stdout, _ = cli("status", "--json", job)
		var s coordinator.Summary
		if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Job != job || s.Phase != "done" || s.Proven != want.report.PersistentVariables+int64(want.report.Observed) {
			t.Errorf("status --json: exit %d, %v: %s", code, err, stdout)
		}
	}
	if code, _, stderr := cli("submit", up, "--job", "shared-uai"); code != exitBadInput || !strings.Contains(stderr, "exists") {
		t.Errorf("a second job of the same id: exit %d, %q", code, stderr)
	}

	// A job long enough to cancel: 400 windows.
	big := filepath.Join(t.TempDir(), "big.grid")
	if code, _, stderr := partopt("gen", "tiled", filepath.Join(genTestdata, "blocks.png"), "-o", big, "--width", "320", "--height", "320", "--labels", "4"); code != 0 {
		t.Fatal(stderr)
	}
	code, stdout, stderr := cli("submit", big, "--window", "16", "--halo", "2", "--job", "big")
	if code != 0 {
		t.Fatalf("submit: %s", stderr)
	}
	if code, _, stderr = cli("cancel", strings.TrimSpace(stdout), "--reason", "test"); code != 0 {
		t.Fatalf("cancel: exit %d: %s", code, stderr)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, stdout, stderr = cli("status", "big")
		if strings.Contains(stdout, "canceled") && strings.Contains(stdout, "test") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after cancel: exit %d: %s %s", code, stdout, stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fetch", "big", "-o", t.TempDir()}, "nothing to fetch"},
		{[]string{"status", "nosuchjob"}, "no job nosuchjob"},
		{[]string{"cancel", "nosuchjob"}, "no job nosuchjob"},
		{[]string{"cancel", "big"}, "has ended: canceled"},
		{[]string{"cancel", "bad id"}, "job id"},
		{[]string{"submit", filepath.Join("..", "..", "testdata", "water.uai")}, "not a raster"},
	} {
		if code, _, stderr := cli(c.args...); code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := partopt("status", "x", "--nats", "nats://127.0.0.1:1"); code != exitBadInput || !strings.Contains(stderr, "connect") {
		t.Errorf("no server: exit %d, %q", code, stderr)
	}

	// The coordinator stopped mid-job and started again on the same data: the
	// job resumes and ends with the outputs of the local solve.
	mid := newJobClient(t, url, 160)
	mid.submit("mid")
	mid.waitMerging("mid")
	stopCoordinator()
	<-coordinatorDone
	start(ctx, 2, "coordinator", "--nats", url, "--data", data, "--http", "")
	want := solveWindowed(t, mid.model, 160*160, 160, 160, mid.margs...)
	mid.wait("mid")
	sameOutputs(t, want.dir, mid.fetch("mid"))
	if !strings.Contains(logs[2].String(), "resuming job") {
		t.Errorf("the restarted coordinator did not resume the job")
	}
}

func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		done, total int
		want        string
	}{{0, 10, "[.....]"}, {5, 10, "[##...]"}, {10, 10, "[#####]"}, {0, 0, "[.....]"}, {12, 10, "[#####]"}} {
		if got := progressBar(c.done, c.total, 5); got != c.want {
			t.Errorf("progressBar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
}

// TestCoordinatorReplicasFailOver: three coordinator replicas (raft); the
// leader dies in the middle of a job; another replica takes the lead, resumes
// the job and ends it with the outputs of the local solve; the dead replica
// comes back as a follower.
func TestCoordinatorReplicasFailOver(t *testing.T) {
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.URL()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	logs := make([]*lockedBuffer, 4)
	start := func(ctx context.Context, i int, args ...string) chan struct{} {
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			if code := runContext(ctx, args, &bytes.Buffer{}, logs[i]); code != 0 {
				t.Errorf("%s: exit %d", args[0], code)
			}
		})
		return done
	}
	var peers []string
	for i := range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, fmt.Sprintf("c%d=%s", i, l.Addr()))
		l.Close()
	}
	data := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	stops := make([]context.CancelFunc, 3)
	dones := make([]chan struct{}, 3)
	replicaArgs := func(i int) []string {
		_, addr, _ := strings.Cut(peers[i], "=")
		return []string{"coordinator", "--nats", url, "--data", data[i], "--http", "", "--id", fmt.Sprintf("c%d", i),
			"--raft-addr", addr, "--peers", strings.Join(peers, ","), "--bootstrap"}
	}
	for i := range 3 {
		logs[i] = &lockedBuffer{}
		var c context.Context
		c, stops[i] = context.WithCancel(ctx)
		dones[i] = start(c, i, replicaArgs(i)...)
	}
	logs[3] = &lockedBuffer{}
	start(ctx, 3, "worker", "--nats", url, "--slots", "2", "--grace", "0s")
	defer func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			for i, l := range logs {
				t.Logf("log %d:\n%s", i, l.String())
			}
		}
	}()
	leader := func(except int) int {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			for i := range 3 {
				if i != except && strings.Count(logs[i].String(), "msg=leading") > strings.Count(logs[i].String(), "no longer leading") {
					return i
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("no replica leads")
		return -1
	}
	first := leader(-1)

	job := newJobClient(t, url, 160)
	job.submit("failover") // retried until the leader subscribes, a moment after its election
	job.waitMerging("failover")
	stops[first]()
	<-dones[first]
	second := leader(first)
	want := solveWindowed(t, job.model, 160*160, 160, 160, job.margs...)
	job.wait("failover")
	sameOutputs(t, want.dir, job.fetch("failover"))
	if !strings.Contains(logs[second].String(), "resuming job") {
		t.Errorf("the new leader c%d did not resume the job", second)
	}
	// The dead replica comes back from its raft directory, as a follower.
	logs[first] = &lockedBuffer{}
	start(ctx, first, replicaArgs(first)...)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs[first].String(), "coordinator replica ready") {
		if time.Now().After(deadline) {
			t.Fatal("the restarted replica did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer is a log sink written from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
