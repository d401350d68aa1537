// Package local_test runs deploy/local/cluster.sh, the script that starts a
// whole partopt cluster (a NATS server, three raft coordinators, workers) as
// processes on this machine.
package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cluster is one run of cluster.sh: its state directory and environment.
type cluster struct {
	t    *testing.T
	bash string
	bin  string // the partopt binary
	dir  string // $DIR
	url  string // the NATS URL
	env  []string
}

// script runs cluster.sh with args and returns its output; a failure is fatal
// and logs the tails of the processes' logs.
func (c *cluster) script(timeout time.Duration, args ...string) string {
	c.t.Helper()
	out, err := c.try(timeout, args...)
	if err != nil {
		logs, _ := c.try(10*time.Second, "logs")
		c.t.Fatalf("cluster.sh %s: %v\n%s\nlogs:\n%s", strings.Join(args, " "), err, out, logs)
	}
	return out
}

func (c *cluster) try(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bash, append([]string{"cluster.sh"}, args...)...)
	cmd.Env = c.env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	c.t.Logf("cluster.sh %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// pids reads the pid files the script wrote, by process name.
func (c *cluster) pids() map[string]int {
	files, _ := filepath.Glob(filepath.Join(c.dir, "pids", "*.pid"))
	m := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			m[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
		}
	}
	return m
}

// alive says whether process pid runs (a zombie does not).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil || p.Signal(syscall.Signal(0)) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc: trust the signal
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// runs says whether process pid is alive and runs this test's partopt binary
// (not another process that got the pid since).
func (c *cluster) runs(pid int) bool {
	if !alive(pid) {
		return false
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		return true // no /proc: trust the pid
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	exe, _, _ := strings.Cut(string(cmdline), "\x00")
	return exe == c.bin
}

// freeBasePort picks BASE_PORT in [20000, 40000) with BASE_PORT..BASE_PORT+13
// free on the loopback interface.
func freeBasePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		base := 20000 + rand.IntN(20000-14)
		free := true
		for p := base; p <= base+13 && free; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no 14 consecutive free ports in 20000–40000")
	return 0
}

// TestLocalClusterScript: cluster.sh start brings up a server, three
// coordinator replicas and two workers with one leader; demo runs a 64-window
// job to done and fetches its outputs; kill-leader makes another replica lead,
// which runs a second job; stop leaves no process behind.
func TestLocalClusterScript(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a whole cluster of processes")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run cluster.sh")
	}
	bin := filepath.Join(t.TempDir(), "partopt")
	build := exec.Command("go", "build", "-o", bin, "./cmd/partopt")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	base := freeBasePort(t)
	c := &cluster{t: t, bash: bash, bin: bin, dir: t.TempDir(), url: fmt.Sprintf("nats://127.0.0.1:%d", base)}
	c.env = append(os.Environ(), "DIR="+c.dir, "BASE_PORT="+strconv.Itoa(base), "WORKERS=2", "PARTOPT="+bin, "NATS_URL=", "SHARED_ROOT="+c.dir)

	t.Cleanup(func() {
		pids := c.pids() // stop removes the files
		c.try(time.Minute, "stop")
		for name, pid := range pids {
			if c.runs(pid) {
				t.Errorf("%s (pid %d) is alive after stop: killed", name, pid)
				if p, err := os.FindProcess(pid); err == nil {
					p.Kill()
				}
			}
		}
	})

	out := c.script(90*time.Second, "start")
	started0 := out
	if !regexp.MustCompile(`(?m)^leader: +c[123]$`).MatchString(out) {
		t.Errorf("start names no leader:\n%s", out)
	}
	started := c.pids()
	for _, name := range []string{"nats", "c1", "c2", "c3", "worker1", "worker2"} {
		if pid, ok := started[name]; !ok || !c.runs(pid) {
			t.Fatalf("after start, %s is not running (pids %v)", name, started)
		}
	}

	// A second cluster on the same ports is refused before it starts anything:
	// its probes would answer from this one.
	other := *c
	other.dir = t.TempDir()
	other.env = append(slices.Clip(c.env), "DIR="+other.dir, "NAMESPACE=other")
	if out, err := other.try(30*time.Second, "start"); err == nil || !strings.Contains(out, "ports in use") {
		t.Errorf("a second start on the same ports: %v\n%s", err, out)
	}
	if left := other.pids(); len(left) != 0 {
		t.Errorf("the refused start left processes: %v", left)
	}

	job := c.demo("first")

	out = c.script(30*time.Second, "status")
	if n := strings.Count(out, "alive (pid"); n != 6 {
		t.Errorf("status lists %d processes alive, want 6:\n%s", n, out)
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		// Each process's memory and CPU time, for measuring a job.
		if n := len(regexp.MustCompile(`alive \(pid \d+\)  rss \d+ MB, peak \d+ MB, cpu \d+ s`).FindAllString(out, -1)); n != 6 {
			t.Errorf("status gives %d processes' memory and CPU time, want 6:\n%s", n, out)
		}
	}
	m := regexp.MustCompile(`(?m)^leader: (c[123]) \(status page (http://\S+/)\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("status names no leader:\n%s", out)
	}
	old := m[1]
	// Every replica's status page knows the job: the leader's, and the
	// followers' through it.
	pages := regexp.MustCompile(`(?m)^status page: +(http://\S+/) \(c[123]`).FindAllStringSubmatch(started0, -1)
	if len(pages) != 3 {
		t.Fatalf("start lists %d status pages:\n%s", len(pages), started0)
	}
	for _, p := range pages {
		resp, err := http.Get(p[1] + "jobs/" + job)
		if err != nil {
			t.Errorf("%s: %v", p[1], err)
			continue
		}
		var s struct{ Phase string }
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || s.Phase != "done" {
			t.Errorf("GET %sjobs/%s: %s, phase %q, %v", p[1], job, resp.Status, s.Phase, err)
		}
	}

	out = c.script(90*time.Second, "kill-leader")
	if !strings.Contains(out, "killed "+old) {
		t.Errorf("kill-leader did not kill the leader %s:\n%s", old, out)
	}
	m = regexp.MustCompile(`(?m)^new leader: (c[123])$`).FindStringSubmatch(out)
	if m == nil || m[1] == old {
		t.Fatalf("kill-leader: no new leader other than %s:\n%s", old, out)
	}
	if c.runs(started[old]) {
		t.Errorf("the killed leader %s (pid %d) is alive", old, started[old])
	}
	out = c.script(30*time.Second, "restart", old)
	if !strings.Contains(out, "restarted "+old) {
		t.Errorf("restart %s:\n%s", old, out)
	}
	restarted := c.pids()[old]
	if !alive(restarted) {
		t.Errorf("restarted %s (pid %d) is not running", old, restarted)
	}

	c.demo("after kill-leader")
	c.drill()

	final := c.pids()
	c.script(time.Minute, "stop")
	for name, pid := range final {
		if c.runs(pid) {
			t.Errorf("%s (pid %d) is alive after stop", name, pid)
		}
	}
	if left := c.pids(); len(left) != 0 {
		t.Errorf("pid files left after stop: %v", left)
	}
}

// demo runs cluster.sh demo, checks that its job is done and its outputs
// fetched, and returns the job id.
func (c *cluster) demo(what string) string {
	c.t.Helper()
	out := c.script(90*time.Second, "demo")
	m := regexp.MustCompile(`(?m)^job: (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		c.t.Fatalf("%s demo printed no job id:\n%s", what, out)
	}
	status := exec.Command(c.bin, "status", m[1], "--json", "--nats", c.url)
	js, err := status.Output()
	if err != nil {
		c.t.Fatalf("%s demo: partopt status %s: %v\n%s", what, m[1], err, js)
	}
	var s struct {
		Phase   string
		Windows int
		Merged  int
	}
	if err := json.Unmarshal(js, &s); err != nil {
		c.t.Fatalf("%s demo: status --json: %v\n%s", what, err, js)
	}
	if s.Phase != "done" || s.Windows == 0 {
		c.t.Errorf("%s demo: job %s %s with %d windows, want done with some:\n%s", what, m[1], s.Phase, s.Windows, js)
	}
	for _, name := range []string{"labels.plf", "persistent.plf", "persistency.png", "report.json"} {
		fi, err := os.Stat(filepath.Join(c.dir, "demo-out", name))
		if err != nil || fi.Size() == 0 {
			c.t.Errorf("%s demo: fetched %s: %v", what, name, err)
		}
	}
	var report map[string]any
	if b, err := os.ReadFile(filepath.Join(c.dir, "demo-out", "report.json")); err == nil {
		if err := json.Unmarshal(b, &report); err != nil {
			c.t.Errorf("%s demo: report.json: %v", what, err)
		}
	}
	return m[1]
}

// drill runs failover-drill.sh as deploy/README.md shows it: a job of 256
// windows submitted, the leader killed while pbp's windows run and the
// killed replica restarted; the drill finds the outputs byte-identical to
// those of partopt run and the report's seconds counting from the submission.
func (c *cluster) drill() {
	c.t.Helper()
	model, ref := filepath.Join(c.dir, "drill.grid"), filepath.Join(c.dir, "drill-ref")
	flags := []string{"--window", "32", "--halo", "8"}
	for _, args := range [][]string{
		{"gen", "tiled", filepath.Join("..", "..", "gen", "testdata", "blocks.png"), "-o", model, "--width", "512", "--height", "512", "--labels", "4"},
		append([]string{"run", model, "-o", ref, "--workers", "2"}, flags...),
	} {
		if out, err := exec.Command(c.bin, args...).CombinedOutput(); err != nil {
			c.t.Fatalf("partopt %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out := c.runDrill(append([]string{model, ref}, flags...), "PHASES=pbp/running")
	for _, want := range []string{"phase pbp/running: killed c", "identical: labels.plf", "identical: persistent.plf", "report: seconds"} {
		if !strings.Contains(out, want) {
			c.t.Errorf("failover-drill.sh printed no %q", want)
		}
	}
	// A drill that follows a job submitted before (JOB), of a model read in
	// place (SHARED_ROOT), against a file of the reference's checksums.
	sums := filepath.Join(c.dir, "drill-ref.sha256")
	if b, err := exec.Command(c.bash, "-c", `cd "$1" && sha256sum *`, "sha256sum", ref).Output(); err != nil {
		c.t.Fatalf("sha256sum: %v", err)
	} else if err := os.WriteFile(sums, b, 0o644); err != nil {
		c.t.Fatal(err)
	}
	id, err := exec.Command(c.bin, append([]string{"submit", model, "--shared", "--nats", c.url}, flags...)...).Output()
	if err != nil {
		c.t.Fatalf("submit: %v", err)
	}
	job := strings.TrimSpace(string(id))
	out = c.runDrill([]string{model, sums}, "PHASES= ", "JOB="+job)
	for _, want := range []string{"job " + job + " followed", "identical: labels.plf", "identical: persistent.plf", "identical: window-certificates.bin", "report: seconds"} {
		if !strings.Contains(out, want) {
			c.t.Errorf("failover-drill.sh with JOB printed no %q", want)
		}
	}
	// A checksum file that names nothing compares nothing, which is no pass.
	empty := filepath.Join(c.dir, "empty.sha256")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bash, "failover-drill.sh", model, empty)
	cmd.Env = append(slices.Clip(c.env), "POLL=0.2", "PHASES= ", "JOB="+job)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "NOTHING COMPARED") {
		c.t.Errorf("failover-drill.sh against an empty checksum file: %v\n%s", err, out)
	}
	// Read in place: no coordinator or worker holds a copy of the shared model.
	for _, sub := range []string{"data", "cache"} {
		filepath.WalkDir(filepath.Join(c.dir, sub), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(path, job) && strings.HasSuffix(path, ".grid") {
				c.t.Errorf("a copy of a model under %s: %s", sub, path)
			}
			return nil
		})
	}
}

// runDrill runs failover-drill.sh with args and extra environment, and returns
// its output; it must succeed.
func (c *cluster) runDrill(args []string, env ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bash, append([]string{"failover-drill.sh"}, args...)...)
	cmd.Env = append(append(slices.Clip(c.env), "POLL=0.2"), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	c.t.Logf("failover-drill.sh %s:\n%s", strings.Join(env, " "), out)
	if err != nil {
		c.t.Fatalf("failover-drill.sh: %v", err)
	}
	return string(out)
}
