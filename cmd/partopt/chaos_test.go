package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/internal/testutil"
)

// proc is a partopt process of a local cluster, with its log in a file.
type proc struct {
	t    *testing.T
	name string
	args []string
	env  []string // added to the test's environment
	log  string
	cmd  *exec.Cmd
}

func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	f.Close()
}

// kill is kill -9: no signal handler runs, nothing is flushed or handed back.
func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		p.cmd = nil
	}
}

func (p *proc) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// leads says whether a coordinator replica's log ends leading.
func (p *proc) leads() bool {
	out := p.output()
	if i := strings.LastIndex(out, "coordinator replica ready"); i >= 0 {
		out = out[i:] // this life of the process
	}
	return p.cmd != nil && strings.Count(out, "msg=leading") > strings.Count(out, "no longer leading")
}

// buildBinary builds partopt into dir and returns its path; the test is
// skipped under -short.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test builds the binary")
	}
	bin := filepath.Join(dir, "partopt")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// localCluster is a cluster of partopt processes on loopback: a NATS server,
// three coordinator replicas (raft) and three workers of one slot, with
// --ack-wait 3s.
type localCluster struct {
	t               *testing.T
	dir, bin, url   string
	nats            *proc
	coords, workers []*proc
	all             []*proc
	model           string
	margs           []string
}

// newLocalCluster builds the binary, writes a side×side model and starts the
// processes; they are killed at the end of the test (their logs shown if it
// failed, or with PARTOPT_CHAOS_LOGS set).
func newLocalCluster(t *testing.T, side int) *localCluster {
	if testing.Short() {
		t.Skip("-short: this test builds the binary and runs a cluster of processes")
	}
	c := newJobClient(t, "", side)
	c.bin = buildBinary(t, c.dir)
	t.Cleanup(func() {
		for _, p := range c.all {
			p.kill()
		}
		if t.Failed() || os.Getenv("PARTOPT_CHAOS_LOGS") != "" {
			for _, p := range c.all {
				t.Logf("%s:\n%s", p.name, p.output())
			}
		}
	})
	addrs := testutil.FreeAddrs(t, 4)
	natsAddr := addrs[3]
	c.url = "nats://" + natsAddr
	ack := []string{"--ack-wait", "3s"}
	c.nats = c.newProc("nats", "server", "--listen", natsAddr, "--dir", filepath.Join(c.dir, "nats"))
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("c%d=%s", i, addrs[i]))
	}
	for i := range 3 {
		_, addr, _ := strings.Cut(peers[i], "=")
		c.coords = append(c.coords, c.newProc(fmt.Sprintf("coordinator%d", i), "coordinator", "--nats", c.url, "--http", "",
			"--data", filepath.Join(c.dir, fmt.Sprintf("data%d", i)), "--id", fmt.Sprintf("c%d", i),
			"--raft-addr", addr, "--peers", strings.Join(peers, ","), "--bootstrap", ack[0], ack[1]))
	}
	for i := range 3 {
		c.workers = append(c.workers, c.newProc(fmt.Sprintf("worker%d", i), "worker", "--nats", c.url, "--slots", "1", "--grace", "0s", ack[0], ack[1]))
	}
	return c
}

// newJobClient is the client side of a cluster at url (a localCluster without
// processes): a side×side segmentation model and the CLI calls on it.
func newJobClient(t *testing.T, url string, side int) *localCluster {
	c := &localCluster{t: t, dir: t.TempDir(), url: url, margs: []string{"--method", "pbp", "--window", "8", "--halo", "2"}}
	c.model = filepath.Join(c.dir, "model.grid")
	if code, _, stderr := partopt("gen", "tiled", filepath.Join(genTestdata, "blocks.png"), "-o", c.model,
		"--width", fmt.Sprint(side), "--height", fmt.Sprint(side), "--labels", "4"); code != 0 {
		t.Fatal(stderr)
	}
	return c
}

func (c *localCluster) newProc(name string, args ...string) *proc {
	p := &proc{t: c.t, name: name, args: append([]string{c.bin}, args...), log: filepath.Join(c.dir, name+".log")}
	c.all = append(c.all, p)
	p.start()
	return p
}

func (c *localCluster) cli(args ...string) (int, string, string) {
	return partopt(append(args, "--nats", c.url)...)
}

func (c *localCluster) status(job string) coordinator.Summary {
	var s coordinator.Summary
	if _, stdout, _ := c.cli("status", "--json", job); stdout != "" {
		json.Unmarshal([]byte(stdout), &s)
	}
	return s
}

// submit submits the model as job, retrying while the cluster starts.
func (c *localCluster) submit(job string) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, _, stderr := c.cli(append([]string{"submit", c.model, "--job", job}, c.margs...)...)
		if code == 0 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("submit: %s", stderr)
		}
		time.Sleep(200 * time.Millisecond) // the server and a leader are starting
	}
}

// wait follows job to its end, which must be done (retrying while NATS starts).
func (c *localCluster) wait(job string) {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		code, stdout, stderr := c.cli("status", "--wait", job)
		if code == 0 && strings.Contains(stdout, "done") {
			return
		}
		if !strings.Contains(stderr, "connect") || time.Now().After(deadline) {
			c.t.Fatalf("job %s: %s %s", job, stdout, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *localCluster) fetch(job string) string {
	c.t.Helper()
	out := filepath.Join(c.dir, job)
	if code, _, stderr := c.cli("fetch", job, "-o", out); code != 0 {
		c.t.Fatalf("fetch %s: %s", job, stderr)
	}
	return out
}

// waitMerging waits until job is running with windows merged.
func (c *localCluster) waitMerging(job string) {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		s := c.status(job)
		if s.Phase == "running" && s.Merged > 0 {
			return
		}
		if s.Phase == "done" || time.Now().After(deadline) {
			c.t.Fatalf("job %s %s before it could be disturbed", job, s.Phase)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestChaosKillsCostTimeNotResults: a cluster of separate processes runs a
// multi-window job while workers and the coordinator leader are killed with
// SIGKILL and started again; the job finishes with the outputs of an
// undisturbed local solve, byte for byte, and no window lost; the extra time
// over the same job undisturbed is logged. PARTOPT_CHAOS=long runs a longer job
// with more kills.
func TestChaosKillsCostTimeNotResults(t *testing.T) {
	// A killed worker's task waits for its ack wait (3 s here) before another
	// worker gets it, and the merges in plan order wait for it.
	side, killEvery, workerKills, leaderKills := 240, 1500*time.Millisecond, 3, 1
	if os.Getenv("PARTOPT_CHAOS") == "long" {
		side, killEvery, workerKills, leaderKills = 640, time.Second, 40, 5
	}
	c := newLocalCluster(t, side)

	// The same job undisturbed, for the time chaos costs.
	calmStart := c.submit("calm")
	c.wait("calm")
	calm := time.Since(calmStart)
	calmOut := c.fetch("calm")
	// Kills paced by the job's own speed, so that all of them land before it
	// ends on a fast machine too.
	killEvery = min(killEvery, max(100*time.Millisecond, calm/time.Duration(2*(workerKills+leaderKills)+2)))

	submitted := c.submit("chaos")
	rng := rand.New(rand.NewPCG(1, 2))
	killedWorkers, killedLeaders := 0, 0
	var failovers []time.Duration // from a leader's kill to a new leader
	deadline := time.Now().Add(10 * time.Minute)
	for s := c.status("chaos"); s.Phase != "done"; s = c.status("chaos") {
		if time.Now().After(deadline) || s.Phase == "failed" || s.Phase == "canceled" {
			t.Fatalf("job %s after %v: %+v", s.Phase, time.Since(submitted), s)
		}
		time.Sleep(killEvery)
		if s.Phase != "running" || killedWorkers == workerKills {
			continue
		}
		w := c.workers[rng.IntN(len(c.workers))]
		w.kill()
		killedWorkers++
		w.start()
		if killedLeaders < leaderKills && killedWorkers%2 == 0 {
			for _, co := range c.coords {
				if co.leads() {
					co.kill()
					killed := time.Now()
					killedLeaders++
					for !slices.ContainsFunc(c.coords, (*proc).leads) && time.Since(killed) < time.Minute {
						time.Sleep(10 * time.Millisecond)
					}
					failovers = append(failovers, time.Since(killed).Round(10*time.Millisecond))
					co.start() // back from its raft directory, as a follower
					break
				}
			}
		}
	}
	elapsed := time.Since(submitted)
	if killedLeaders < leaderKills || killedWorkers < workerKills {
		t.Fatalf("the job ended after %d worker and %d leader kills: make it longer", killedWorkers, killedLeaders)
	}
	out := c.fetch("chaos")
	start := time.Now()
	want := solveWindowed(t, c.model, side*side, side, side, c.margs...)
	local := time.Since(start)
	sameOutputs(t, want.dir, out)
	sameOutputs(t, want.dir, calmOut)
	s := c.status("chaos")
	if s.Lost != 0 || len(s.LostWindows) != 0 {
		t.Fatalf("windows lost: %+v", s)
	}
	t.Logf("%d×%d, %d windows: %v undisturbed, %v under chaos (%d workers and %d leaders killed, +%v; new leader after %v); the local solve %v",
		side, side, s.WindowsTotal, calm.Round(time.Millisecond), elapsed.Round(time.Millisecond), killedWorkers, killedLeaders,
		(elapsed - calm).Round(time.Millisecond), failovers, local.Round(time.Millisecond))
}

// TestWholeClusterRestartResumesTheJob: every process of the cluster — NATS
// included — is killed in the middle of a job and started again from its
// directories; status follows the same job to its end and fetch gives the
// outputs of the local solve.
func TestWholeClusterRestartResumesTheJob(t *testing.T) {
	const side = 160
	c := newLocalCluster(t, side)
	c.submit("restart")
	c.waitMerging("restart")
	for _, p := range c.all {
		p.kill()
	}
	for _, p := range c.all {
		p.start()
	}
	c.wait("restart")
	want := solveWindowed(t, c.model, side*side, side, side, c.margs...)
	sameOutputs(t, want.dir, c.fetch("restart"))
	resumed := false
	for _, co := range c.coords {
		resumed = resumed || strings.Contains(co.output(), "resuming job")
	}
	if !resumed {
		t.Error("no coordinator resumed the job")
	}
}
