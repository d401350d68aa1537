package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/coordinator"
)

// proc is a partopt process of a local cluster, with its log in a file.
type proc struct {
	t    *testing.T
	name string
	args []string
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

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestChaosKillsCostTimeNotResults: a cluster of separate processes (a NATS
// server, three coordinator replicas, three workers) runs a multi-window job
// while workers and the coordinator leader are killed with SIGKILL and started
// again; the job finishes with the outputs of an undisturbed local solve, byte
// for byte, and no window lost. PARTOPT_CHAOS=long runs a longer job with more
// kills.
func TestChaosKillsCostTimeNotResults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the chaos test builds the binary and runs a cluster of processes")
	}
	// A killed worker's task waits for its ack wait (3 s here) before another
	// worker gets it, and the merges in plan order wait for it.
	side, killEvery, workerKills, leaderKills := 240, 1500*time.Millisecond, 3, 1
	if os.Getenv("PARTOPT_CHAOS") == "long" {
		side, killEvery, workerKills, leaderKills = 640, time.Second, 40, 5
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "partopt")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	model := filepath.Join(dir, "chaos.grid")
	if code, _, stderr := partopt("gen", "tiled", filepath.Join(genTestdata, "blocks.png"), "-o", model,
		"--width", fmt.Sprint(side), "--height", fmt.Sprint(side), "--labels", "4"); code != 0 {
		t.Fatal(stderr)
	}
	margs := []string{"--window", "8", "--halo", "2"}

	natsAddr := freePort(t)
	url := "nats://" + natsAddr
	var all []*proc
	newProc := func(name string, args ...string) *proc {
		p := &proc{t: t, name: name, args: append([]string{bin}, args...), log: filepath.Join(dir, name+".log")}
		all = append(all, p)
		p.start()
		return p
	}
	defer func() {
		for _, p := range all {
			p.kill()
		}
		if t.Failed() || os.Getenv("PARTOPT_CHAOS_LOGS") != "" {
			for _, p := range all {
				t.Logf("%s:\n%s", p.name, p.output())
			}
		}
	}()
	ack := []string{"--ack-wait", "3s"}
	newProc("nats", "server", "--listen", natsAddr, "--dir", filepath.Join(dir, "nats"))
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("c%d=%s", i, freePort(t)))
	}
	var coords, workers []*proc
	for i := range 3 {
		_, addr, _ := strings.Cut(peers[i], "=")
		coords = append(coords, newProc(fmt.Sprintf("coordinator%d", i), "coordinator", "--nats", url, "--http", "",
			"--data", filepath.Join(dir, fmt.Sprintf("data%d", i)), "--id", fmt.Sprintf("c%d", i),
			"--raft-addr", addr, "--peers", strings.Join(peers, ","), "--bootstrap", ack[0], ack[1]))
	}
	for i := range 3 {
		workers = append(workers, newProc(fmt.Sprintf("worker%d", i), "worker", "--nats", url, "--slots", "1", "--grace", "0s", ack[0], ack[1]))
	}
	cli := func(args ...string) (int, string, string) { return partopt(append(args, "--nats", url)...) }
	status := func(job string) coordinator.Summary {
		var s coordinator.Summary
		if _, stdout, _ := cli("status", "--json", job); stdout != "" {
			json.Unmarshal([]byte(stdout), &s)
		}
		return s
	}
	submit := func(job string) time.Time {
		deadline := time.Now().Add(time.Minute)
		for {
			code, _, stderr := cli(append([]string{"submit", model, "--job", job}, margs...)...)
			if code == 0 {
				return time.Now()
			}
			if time.Now().After(deadline) {
				t.Fatalf("submit: %s", stderr)
			}
			time.Sleep(200 * time.Millisecond) // the server and a leader are starting
		}
	}
	fetch := func(job string) string {
		out := filepath.Join(dir, job)
		if code, _, stderr := cli("fetch", job, "-o", out); code != 0 {
			t.Fatalf("fetch %s: %s", job, stderr)
		}
		return out
	}

	// The same job undisturbed, for the time chaos costs.
	calmStart := submit("calm")
	if code, stdout, stderr := cli("status", "--wait", "calm"); code != 0 || !strings.Contains(stdout, "done") {
		t.Fatalf("calm job: %s %s", stdout, stderr)
	}
	calm := time.Since(calmStart)
	calmOut := fetch("calm")

	submitted := submit("chaos")
	rng := rand.New(rand.NewPCG(1, 2))
	killedWorkers, killedLeaders := 0, 0
	var failovers []time.Duration // from a leader's kill to a new leader
	deadline := time.Now().Add(10 * time.Minute)
	for s := status("chaos"); s.Phase != "done"; s = status("chaos") {
		if time.Now().After(deadline) || s.Phase == "failed" || s.Phase == "canceled" {
			t.Fatalf("job %s after %v: %+v", s.Phase, time.Since(submitted), s)
		}
		time.Sleep(killEvery)
		if s.Phase != "running" || killedWorkers == workerKills {
			continue
		}
		w := workers[rng.IntN(len(workers))]
		w.kill()
		killedWorkers++
		w.start()
		if killedLeaders < leaderKills && killedWorkers%2 == 0 {
			for _, c := range coords {
				if c.leads() {
					c.kill()
					killed := time.Now()
					killedLeaders++
					for !slices.ContainsFunc(coords, (*proc).leads) && time.Since(killed) < time.Minute {
						time.Sleep(10 * time.Millisecond)
					}
					failovers = append(failovers, time.Since(killed).Round(10*time.Millisecond))
					c.start() // back from its raft directory, as a follower
					break
				}
			}
		}
	}
	elapsed := time.Since(submitted)
	if killedLeaders < leaderKills || killedWorkers < workerKills {
		t.Fatalf("the job ended after %d worker and %d leader kills: make it longer", killedWorkers, killedLeaders)
	}
	out := fetch("chaos")
	start := time.Now()
	want := solveWindowed(t, model, side*side, side, side, margs...)
	local := time.Since(start)
	sameOutputs(t, want.dir, out)
	sameOutputs(t, want.dir, calmOut)
	s := status("chaos")
	if s.Lost != 0 || len(s.LostWindows) != 0 {
		t.Fatalf("windows lost: %+v", s)
	}
	t.Logf("%d×%d, %d windows: %v undisturbed, %v under chaos (%d workers and %d leaders killed, +%v; new leader after %v); the local solve %v",
		side, side, s.WindowsTotal, calm.Round(time.Millisecond), elapsed.Round(time.Millisecond), killedWorkers, killedLeaders,
		(elapsed - calm).Round(time.Millisecond), failovers, local.Round(time.Millisecond))
}
