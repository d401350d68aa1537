package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/internal/testutil"
)

// rasterOutputs are the files a windowed raster solve writes that must not
// depend on how its windows were distributed.
var rasterOutputs = []string{labelTilesFile, persistentTilesFile, persistencyPNG, labelsFile, persistentFile}

// sameOutputs fails unless dirs a and b hold byte-identical raster outputs.
func sameOutputs(t *testing.T, a, b string) {
	t.Helper()
	sameFiles(t, a, b, rasterOutputs)
}

// sameFiles fails unless dirs a and b hold the named files, byte-identical.
func sameFiles(t *testing.T, a, b string, names []string) {
	t.Helper()
	for _, name := range names {
		x, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and %s:\n%s\n%s", name, a, b, x, y)
		}
	}
}

// TestRunEqualsWindowedSolve: run (embedded NATS, in-process workers) writes the
// outputs of solve --window byte for byte, for a .grid file with evidence and for
// a UAI raster.
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
}

// graphOutputs are the files a windowed solve of regions writes that must not
// depend on how its windows were distributed.
var graphOutputs = []string{labelsFile, persistentFile}

// sameGraphOutputs fails unless dirs a and b hold byte-identical outputs of a
// solve by regions, and b no raster outputs.
func sameGraphOutputs(t *testing.T, a, b string) {
	t.Helper()
	sameFiles(t, a, b, graphOutputs)
	for _, name := range []string{labelTilesFile, persistentTilesFile, persistencyPNG} {
		if _, err := os.Stat(filepath.Join(b, name)); err == nil {
			t.Errorf("%s in %s: a model that is not a raster has no label files", name, b)
		}
	}
}

// graphFixtures are committed models that are not rasters, with the window
// flags of their tests: a pairwise model (40 variables, up to 4 labels, 178
// pairwise tables), and the toulbar2 network with order-3 factors and evidence on
// 4 variables, whose windows are solved by the higher-order relaxation.
var graphFixtures = []struct {
	name  string
	model string
	args  []string
}{
	{"pairwise", filepath.Join("..", "..", "testdata", "dense40.uai"), []string{"--window", "6", "--halo", "1"}},
	{"higher order with evidence", filepath.Join("..", "..", "testdata", "network-evid.uai"), []string{"--window", "4", "--halo", "0"}},
}

// TestRunGraphEqualsWindowedSolve: run on a model that is not a raster —
// pairwise, or higher order with evidence — distributes the BFS regions of
// solve --window as a graph job and writes the same labels.sol and
// persistent.evid, byte for byte, with one worker slot or three.
func TestRunGraphEqualsWindowedSolve(t *testing.T) {
	for _, c := range graphFixtures {
		t.Run(c.name, func(t *testing.T) {
			n := map[string]int{"pairwise": 40, "higher order with evidence": 120}[c.name]
			want := solveWindowed(t, c.model, n, 0, 0, c.args...)
			if want.report.Rounds < 2 || want.report.PersistentVariables == 0 {
				t.Fatalf("solve --window proved %d variables in %d rounds: the test checks too little", want.report.PersistentVariables, want.report.Rounds)
			}
			for _, workers := range []string{"1", "3"} {
				dir := filepath.Join(t.TempDir(), "run")
				code, stdout, stderr := partopt(append([]string{"run", "-o", dir, c.model, "--workers", workers}, c.args...)...)
				if code != 0 {
					t.Fatalf("run %s: exit %d: %s", c.model, code, stderr)
				}
				sameGraphOutputs(t, want.dir, dir)
				var rep windowedReport
				data, _ := os.ReadFile(filepath.Join(dir, reportFile))
				if err := json.Unmarshal(data, &rep); err != nil {
					t.Fatal(err)
				}
				w := want.report
				if rep.Runtime != "nats-embedded" || rep.Plan != "regions" || rep.Windows != w.Windows || rep.WindowsSolved != w.WindowsSolved ||
					rep.Rounds != w.Rounds || rep.Window != w.Window || rep.Halo != w.Halo || rep.PersistentVariables != w.PersistentVariables ||
					rep.Observed != w.Observed || *rep.Energy != *w.Energy || rep.PersistentFraction != w.PersistentFraction ||
					rep.MaxWindowVariables != w.MaxWindowVariables || len(rep.LostWindows) != 0 {
					t.Errorf("run report %s\nsolve report %+v", data, w)
				}
				if !strings.HasPrefix(stdout, "persistent ") {
					t.Errorf("stdout %q", stdout)
				}
			}
		})
	}
	// --halo defaults to 2 graph steps for regions, as in solve.
	model := graphFixtures[0].model
	want := solveWindowed(t, model, 40, 0, 0, "--window", "6")
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := partopt("run", "-o", dir, model, "--window", "6"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	sameGraphOutputs(t, want.dir, dir)
}

// TestClusterGraphJobs: models that are not rasters submitted to a coordinator
// (uploaded with their evidence, or by a shared path) finish as graph jobs, and
// fetch gives the outputs of solve --window; the status counts variables. A
// job of method iri gives those of solve --method iri --window.
func TestClusterGraphJobs(t *testing.T) {
	c := newCommands(t)
	testdata, err := filepath.Abs(filepath.Join("..", "..", "testdata")) // where the shared fixture lies
	if err != nil {
		t.Fatal(err)
	}
	c.start("coordinator", "coordinator", "--data", t.TempDir(), "--http", "", "--shared-root", testdata)
	c.start("worker", "worker", "--slots", "2", "--grace", "0s", "--cache", t.TempDir(), "--shared-root", testdata)
	cli := func(args ...string) (int, string, string) { return partopt(append(args, "--nats", c.url)...) }
	for i, f := range graphFixtures {
		n := map[string]int{"pairwise": 40, "higher order with evidence": 120}[f.name]
		want := solveWindowed(t, f.model, n, 0, 0, append([]string{"--method", "pbp"}, f.args...)...)
		args := append([]string{"submit", f.model, "--method", "pbp"}, f.args...)
		if i == 1 {
			args = append(args, "--shared", "--job", "shared-graph")
		}
		job, dir := submitAndFetch(t, cli, args...)
		sameGraphOutputs(t, want.dir, dir)
		if n := storedResults(t, c.url, job); n != 0 {
			t.Errorf("job %s done, %d results left in the stream", job, n)
		}
		free := want.report.FreeVariables
		if code, stdout, _ := cli("status", job); code != 0 || !strings.Contains(stdout, fmt.Sprintf("of %d variables", free)) {
			t.Errorf("status: exit %d: %s", code, stdout)
		}
		code, stdout, _ := cli("status", "--json", job)
		var s coordinator.Summary
		if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Phase != "done" || s.Pixels != free || s.Proven != want.report.PersistentVariables || s.Rounds != want.report.Rounds {
			t.Errorf("status --json: exit %d, %v: %s", code, err, stdout)
		}
	}
	// Label elimination: the higher-order model with evidence, as solve --method iri.
	f := graphFixtures[1]
	args := append([]string{"--method", "iri"}, f.args...)
	want := solveWindowed(t, f.model, 120, 0, 0, args...)
	job, dir := submitAndFetch(t, cli, append([]string{"submit", f.model}, args...)...)
	sameFiles(t, want.dir, dir, []string{labelsFile, persistentFile, domainsFile})
	code, stdout, _ := cli("status", "--json", job)
	var s coordinator.Summary
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Phase != "done" || s.Eliminated != int64(*want.report.EliminatedLabels) || s.Rounds != want.report.Rounds {
		t.Errorf("iri status --json: exit %d, %v: %s (want %d labels eliminated in %d rounds)", code, err, stdout, *want.report.EliminatedLabels, want.report.Rounds)
	}
}

// submitAndFetch runs the submit command args through cli, waits for the job to be
// done and fetches its outputs; it returns the job id and the fetched directory.
func submitAndFetch(t *testing.T, cli func(...string) (int, string, string), args ...string) (job, dir string) {
	t.Helper()
	code, stdout, stderr := cli(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	job = strings.TrimSpace(stdout)
	if code, stdout, stderr = cli("status", "--wait", job); code != 0 || !strings.Contains(stdout, "done") {
		t.Fatalf("status --wait: exit %d: %s %s", code, stdout, stderr)
	}
	dir = filepath.Join(t.TempDir(), "fetched")
	if code, _, stderr = cli("fetch", job, "-o", dir); code != 0 {
		t.Fatalf("fetch: exit %d: %s", code, stderr)
	}
	// The cluster's result re-checks from the model alone.
	if code, stdout, stderr = partopt("verify", args[1], dir); code != 0 || !strings.Contains(stdout, "window proofs") {
		t.Errorf("verify of the fetched result: exit %d: %s %s", code, stdout, stderr)
	}
	return job, dir
}

// TestClusterCommandsEndToEnd: a NATS server, a coordinator and a worker as
// commands; jobs submitted (uploaded, or by a shared path) finish with the
// outputs of the local windowed solve, which fetch downloads; status reports
// them; cancel stops a running job; errors are clear.
func TestClusterCommandsEndToEnd(t *testing.T) {
	c := newCommands(t)
	shared := t.TempDir() // the root that shared jobs may read below
	url, data := c.url, t.TempDir()
	coord := c.start("coordinator", "coordinator", "--data", data, "--http", "", "--shared-root", shared)
	c.start("worker", "worker", "--slots", "2", "--grace", "0s", "--cache", t.TempDir(), "--shared-root", shared)
	cli := func(args ...string) (int, string, string) { return partopt(append(args, "--nats", url)...) }

	gp, generated := genGrid(t, "3")
	up := filepath.Join(shared, "b.uai") // submitted by its path below the root too
	if data, err := os.ReadFile(generated); err != nil || os.WriteFile(up, data, 0o644) != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(gp+".evid", []byte("2 5 3 100 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--method", "pbp", "--window", "8", "--halo", "2"}
	for _, c := range []struct {
		model string
		extra []string
	}{{gp, nil}, {up, []string{"--shared", "--job", "shared-uai"}}} {
		want := solveWindowed(t, c.model, 24*16, 24, 16, args...)
		job, dir := submitAndFetch(t, cli, append(append([]string{"submit", c.model}, args...), c.extra...)...)
		sameOutputs(t, want.dir, dir)
		if n := storedResults(t, url, job); n != 0 {
			t.Errorf("job %s done, %d results left in the stream", job, n)
		}
		code, stdout, _ := cli("status", "--json", job)
		var s coordinator.Summary
		if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Job != job || s.Phase != "done" || s.Proven != want.report.PersistentVariables+int64(want.report.Observed) {
			t.Errorf("status --json: exit %d, %v: %s", code, err, stdout)
		}
	}
	if code, _, stderr := cli("submit", up, "--job", "shared-uai"); code != exitBadInput || !strings.Contains(stderr, "exists") {
		t.Errorf("a second job of the same id: exit %d, %q", code, stderr)
	}
	// A shared path outside the coordinator's roots, directly or through a link
	// below one, is refused at submission (service's tests send forged specs).
	outside := filepath.Join(t.TempDir(), "b.uai")
	if data, err := os.ReadFile(up); err != nil || os.WriteFile(outside, data, 0o644) != nil {
		t.Fatal(err)
	}
	link := filepath.Join(shared, "link.uai")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{outside, link} {
		if code, _, stderr := cli("submit", path, "--shared", "--window", "8"); code == 0 || !strings.Contains(stderr, "outside the shared roots") {
			t.Errorf("submit --shared %s: exit %d, %q; want a refusal", path, code, stderr)
		}
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
	if code, _, stderr = cli("delete", "big"); code != exitBadInput || !strings.Contains(stderr, "cancel it first") {
		t.Errorf("delete of a running job: exit %d: %s", code, stderr)
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
	// Scripts: status --wait fails (1) for a cancelled job, jobs lists it,
	// delete removes it.
	if code, stdout, stderr = cli("status", "--wait", "big"); code != exitInternal || !strings.Contains(stdout, "canceled") || !strings.Contains(stderr, "job big canceled") {
		t.Errorf("status --wait of a cancelled job: exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, stderr = cli("jobs", "--json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(stdout), &listed); code != 0 || err != nil || len(listed) != 3 || listed[2]["job"] != "big" || listed[2]["phase"] != "canceled" {
		t.Errorf("jobs --json: exit %d, %v: %s %s", code, err, stdout, stderr)
	}
	if code, stdout, _ = cli("jobs"); code != 0 || !regexp.MustCompile(`(?m)^big +canceled +1 `).MatchString(stdout) || strings.Count(stdout, " done ") != 2 {
		t.Errorf("jobs: exit %d:\n%s", code, stdout)
	}
	if code, stdout, stderr = cli("fetch", "big", "-o", t.TempDir()); code != exitBadInput || !strings.Contains(stderr, "nothing to fetch") {
		t.Errorf("fetch of a cancelled job: exit %d: %s", code, stderr)
	}
	if code, _, stderr = cli("cancel", "big"); code != exitBadInput || !strings.Contains(stderr, "has ended: canceled") {
		t.Errorf("cancel of a cancelled job: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr = cli("delete", "big"); code != 0 || !strings.Contains(stdout, "job big deleted") {
		t.Errorf("delete: exit %d: %s %s", code, stdout, stderr)
	}
	if code, stdout, _ = cli("jobs"); code != 0 || strings.Contains(stdout, "big") {
		t.Errorf("jobs after delete: exit %d:\n%s", code, stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "big"}, "no job big"},
		{[]string{"delete", "big"}, "no job big"},
		{[]string{"delete", "bad id"}, "job id"},
		{[]string{"status", "nosuchjob"}, "no job nosuchjob"},
		{[]string{"cancel", "nosuchjob"}, "no job nosuchjob"},
		{[]string{"cancel", "bad id"}, "job id"},
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
	coord.kill()
	restarted := c.start("restarted coordinator", "coordinator", "--data", data, "--http", "")
	want := solveWindowed(t, mid.model, 160*160, 160, 160, mid.margs...)
	mid.wait("mid")
	sameOutputs(t, want.dir, mid.fetch("mid"))
	if !strings.Contains(restarted.log.String(), "resuming job") {
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
	c := newCommands(t)
	var peers []string
	for i, addr := range testutil.FreeAddrs(t, 3) {
		peers = append(peers, fmt.Sprintf("c%d=%s", i, addr))
	}
	data := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	replicaArgs := func(i int) []string {
		_, addr, _ := strings.Cut(peers[i], "=")
		return []string{"coordinator", "--data", data[i], "--http", "", "--id", fmt.Sprintf("c%d", i),
			"--raft-addr", addr, "--peers", strings.Join(peers, ","), "--bootstrap"}
	}
	replicas := make([]*command, 3)
	for i := range 3 {
		replicas[i] = c.start(fmt.Sprintf("c%d", i), replicaArgs(i)...)
	}
	c.start("worker", "worker", "--slots", "2", "--grace", "0s")
	leader := func(except int) int {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			for i := range 3 {
				if out := replicas[i].log.String(); i != except && strings.Count(out, "msg=leading") > strings.Count(out, "no longer leading") {
					return i
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("no replica leads")
		return -1
	}
	first := leader(-1)

	job := newJobClient(t, c.url, 160)
	job.submit("failover") // retried until the leader subscribes, a moment after its election
	job.waitMerging("failover")
	replicas[first].kill()
	second := leader(first)
	want := solveWindowed(t, job.model, 160*160, 160, 160, job.margs...)
	job.wait("failover")
	sameOutputs(t, want.dir, job.fetch("failover"))
	if !strings.Contains(replicas[second].log.String(), "resuming job") {
		t.Errorf("the new leader c%d did not resume the job", second)
	}
	// The dead replica comes back from its raft directory, as a follower.
	back := c.start(fmt.Sprintf("c%d restarted", first), replicaArgs(first)...)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(back.log.String(), "coordinator replica ready") {
		if time.Now().After(deadline) {
			t.Fatal("the restarted replica did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// storedResults counts the messages of job in the results stream.
func storedResults(t *testing.T, url, job string) uint64 {
	t.Helper()
	nc, err := cluster.Connect(cluster.ConnOptions{URL: url}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	res, err := cluster.Attach(context.Background(), nc, "")
	if err != nil {
		t.Fatal(err)
	}
	info, err := res.Results.Info(context.Background(), jetstream.WithSubjectFilter(res.Names.ResultFilter(job)))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// commands is an in-process cluster: an embedded NATS server on loopback and
// partopt commands run in goroutines, each stoppable, its stderr kept. At the
// end of the test they all stop, their logs shown if it failed.
type commands struct {
	t   *testing.T
	url string
	ctx context.Context
	wg  sync.WaitGroup
	all []*command
}

// command is a running partopt command.
type command struct {
	name string
	stop context.CancelFunc
	done chan struct{}
	log  *testutil.SyncBuffer
}

func newCommands(t *testing.T) *commands {
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &commands{t: t, url: srv.URL(), ctx: ctx}
	t.Cleanup(func() {
		cancel()
		c.wg.Wait()
		srv.Close()
		if t.Failed() {
			for _, r := range c.all {
				t.Logf("%s:\n%s", r.name, r.log.String())
			}
		}
	})
	return c
}

// start runs partopt args with --nats of the cluster.
func (c *commands) start(name string, args ...string) *command {
	ctx, stop := context.WithCancel(c.ctx)
	r := &command{name: name, stop: stop, done: make(chan struct{}), log: &testutil.SyncBuffer{}}
	c.all = append(c.all, r)
	c.wg.Go(func() {
		defer close(r.done)
		if code := runContext(ctx, append(args, "--nats", c.url), &bytes.Buffer{}, r.log); code != 0 {
			c.t.Errorf("%s: exit %d", name, code)
		}
	})
	return r
}

// kill stops the command (its context cancelled, as SIGTERM does) and waits.
func (r *command) kill() {
	r.stop()
	<-r.done
}

// TestRunLabelEliminationEqualsWindowedSolve: run --method iri — the windows'
// eliminations carried over NATS with their certificates, each re-checked by
// the coordinator before its merge — writes the outputs of solve --method iri
// --window N byte for byte, with one worker slot or three: on a UAI raster
// (square windows, alive masks) and on models that are not rasters, pairwise and
// higher order with evidence (regions). So does the default of both, pbp+iri: a
// pbp job, then an iri job from the domains it proved.
func TestRunLabelEliminationEqualsWindowedSolve(t *testing.T) {
	_, up := genGrid(t, "3")
	graphFiles := []string{labelsFile, persistentFile, domainsFile}
	for _, c := range []struct {
		name, model string
		n           int
		files, args []string
	}{
		{"raster", up, 24 * 16, append([]string{labelTilesFile, persistentTilesFile, aliveTilesFile, persistencyPNG}, graphFiles...), []string{"--window", "8", "--halo", "2"}},
		{graphFixtures[0].name, graphFixtures[0].model, 40, graphFiles, graphFixtures[0].args},
		{graphFixtures[1].name, graphFixtures[1].model, 120, graphFiles, graphFixtures[1].args},
	} {
		for _, method := range []string{"iri", "pbp+iri"} {
			t.Run(c.name+"/"+method, func(t *testing.T) {
				args := c.args
				if method == "iri" { // pbp+iri: the default of both
					args = append([]string{"--method", "iri"}, c.args...)
				}
				want := solveWindowed(t, c.model, c.n, 0, 0, args...)
				w := want.report
				if w.EliminatedLabels == nil || *w.EliminatedLabels == 0 || w.WindowsSolved < 2 {
					t.Fatalf("solve --window eliminated %v labels in %d windows: the test checks too little", w.EliminatedLabels, w.WindowsSolved)
				}
				for _, workers := range []string{"1", "3"} {
					dir := filepath.Join(t.TempDir(), "run")
					code, stdout, stderr := partopt(append([]string{"run", "-o", dir, c.model, "--workers", workers}, args...)...)
					if code != 0 {
						t.Fatalf("run %s: exit %d: %s", c.model, code, stderr)
					}
					sameFiles(t, want.dir, dir, c.files)
					var rep windowedReport
					data, _ := os.ReadFile(filepath.Join(dir, reportFile))
					if err := json.Unmarshal(data, &rep); err != nil {
						t.Fatal(err)
					}
					if rep.Runtime != "nats-embedded" || rep.Method != method || rep.Plan != w.Plan || rep.Windows != w.Windows || rep.WindowsSolved != w.WindowsSolved ||
						rep.Rounds != w.Rounds || rep.Level != w.Level || rep.Halo != w.Halo || rep.PersistentVariables != w.PersistentVariables ||
						*rep.EliminatedLabels != *w.EliminatedLabels || *rep.Energy != *w.Energy || rep.MaxWindowVariables != w.MaxWindowVariables ||
						rep.SolverIterations != w.SolverIterations || !rep.Verified || len(rep.LostWindows) != 0 {
						t.Errorf("run report %s\nsolve report %+v", data, w)
					}
					if !strings.HasPrefix(stdout, "persistent ") {
						t.Errorf("stdout %q", stdout)
					}
				}
			})
		}
	}
}

// TestServicesLogStructuredEvents: with --log-format json and --log-level
// debug, every line a coordinator (a raft replica) and a worker write is a
// JSON event — raft's included — with a line per window event (solved,
// stored, merged) and per round.
func TestServicesLogStructuredEvents(t *testing.T) {
	c := newCommands(t)
	addr := testutil.FreeAddrs(t, 1)[0]
	flags := []string{"--log-format", "json", "--log-level", "debug"}
	coord := c.start("coordinator", append([]string{"coordinator", "--data", t.TempDir(), "--http", "", "--id", "c1", "--raft-addr", addr, "--peers", "c1=" + addr, "--bootstrap"}, flags...)...)
	work := c.start("worker", append([]string{"worker", "--slots", "2", "--grace", "0s", "--cache", t.TempDir()}, flags...)...)
	cli := func(args ...string) (int, string, string) { return partopt(append(args, "--nats", c.url)...) }
	gp, _ := genGrid(t, "3")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) { // until the services made the cluster
		if code, _, _ := cli("jobs"); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no cluster within a minute")
		}
	}
	submitAndFetch(t, cli, "submit", gp, "--window", "8", "--halo", "2")
	work.kill()
	coord.kill()
	events := map[string]int{}
	for _, r := range []*command{coord, work} {
		for _, line := range strings.Split(strings.TrimSpace(r.log.String()), "\n") {
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: a line that is not a JSON event: %q", r.name, line)
			}
			msg, _ := ev["msg"].(string)
			if ev["component"] == "raft" {
				msg = "raft"
			}
			events[r.name+": "+msg]++
		}
	}
	for _, want := range []string{"coordinator: round dispatched", "coordinator: window result stored", "coordinator: window merged", "coordinator: raft", "worker: window solved"} {
		if events[want] == 0 {
			t.Errorf("no %q event: %v", want, events)
		}
	}
}

// TestServicesStoppedWhileWaitingForNATSExitCleanly: a coordinator or worker
// stopped (SIGTERM, Ctrl-C) before NATS answered exits 0 without an error
// line: it was stopped, it did not fail.
func TestServicesStoppedWhileWaitingForNATSExitCleanly(t *testing.T) {
	for _, args := range [][]string{
		{"coordinator", "--nats", "nats://127.0.0.1:1", "--data", t.TempDir(), "--http", ""},
		{"worker", "--nats", "nats://127.0.0.1:1"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		var stderr strings.Builder
		code := runContext(ctx, args, io.Discard, &stderr)
		cancel()
		if code != exitOK || strings.Contains(stderr.String(), "partopt: ") {
			t.Errorf("%s stopped while waiting for NATS: exit %d\n%s", args[0], code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "waiting for NATS") {
			t.Errorf("%s did not say it was waiting for NATS:\n%s", args[0], stderr.String())
		}
	}
}
