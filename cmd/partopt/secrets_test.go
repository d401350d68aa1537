package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
)

// The secrets of TestCredentialsNeverWritten: distinctive, so that a match is
// never a coincidence.
const (
	testToken    = "s3cr3t-TOKEN-7f1c"
	testPassword = "s3cr3t-PASS-9b2e"
)

// TestCredentialsNeverWritten (issue 35): credentials given in NATS URLs — a
// token (nats://TOKEN@host) and a user and password (nats://alice:PASSWORD@host)
// — reach no log line, error message, status output, status page, /metrics,
// fetched output or command line. Two clusters of processes (a token server
// with a coordinator and a worker logging text; a user/password server with a
// raft replica and a worker logging JSON at debug) each run a job that
// clients submit, follow and fetch; workers and a client whose URL names a
// port where nothing listens wait, fail and exit; a client given a URL with
// credentials as a flag is warned; run --listen prints how workers join;
// worker --help runs with $NATS_URL set. Every byte they write is searched for
// the secrets.
func TestCredentialsNeverWritten(t *testing.T) {
	dir := t.TempDir()
	r := &secretRun{t: t, bin: buildBinary(t, dir), out: filepath.Join(dir, "out"), secrets: filepath.Join(dir, "secrets")}
	for _, d := range []string{r.out, r.secrets} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, p := range r.procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range r.procs {
				t.Logf("%s:\n%s", p.name, p.output())
			}
		}
	})
	tokenFile, passwordFile := r.secret("token", testToken), r.secret("password", testPassword)
	model, _ := genGrid(t, "3")
	addrs := testutil.FreeAddrs(t, 7)
	natsA, natsB, pageA, pageB, metricsA, raftB, dead := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], addrs[5], addrs[6]

	// Cluster A: a token.
	envA := []string{"NATS_URL=nats://" + testToken + "@" + natsA}
	r.start("serverA", nil, "server", "--listen", natsA, "--dir", filepath.Join(dir, "natsA"), "--token-file", tokenFile)
	coordA := r.start("coordinatorA", envA, "coordinator", "--data", filepath.Join(r.out, "dataA"), "--http", pageA)
	workerA := r.start("workerA", envA, "worker", "--slots", "2", "--grace", "0s", "--cache", filepath.Join(dir, "cacheA"), "--http", metricsA)
	waitLog(t, coordA, "coordinator ready")
	waitLog(t, workerA, "worker serving")
	jobA := r.job(envA, model, "a")
	r.get("http://" + pageA + "/")
	r.get("http://" + pageA + "/jobs/" + jobA)
	r.get("http://" + pageA + "/metrics")
	r.get("http://" + metricsA + "/metrics")

	// Cluster B: a user and password; a raft replica; JSON at debug.
	envB := []string{"NATS_URL=nats://alice:" + testPassword + "@" + natsB}
	logs := []string{"--log-format", "json", "--log-level", "debug"}
	r.start("serverB", nil, "server", "--listen", natsB, "--dir", filepath.Join(dir, "natsB"), "--user", "alice", "--password-file", passwordFile)
	coordB := r.start("coordinatorB", envB, append([]string{"coordinator", "--data", filepath.Join(r.out, "dataB"), "--http", pageB,
		"--id", "c1", "--raft-addr", raftB, "--peers", "c1=" + raftB, "--bootstrap"}, logs...)...)
	r.start("workerB", envB, append([]string{"worker", "--slots", "2", "--grace", "0s", "--cache", filepath.Join(dir, "cacheB")}, logs...)...)
	waitLog(t, coordB, "leading")
	jobB := r.job(envB, model, "b")
	r.get("http://" + pageB + "/jobs/" + jobB)
	r.get("http://" + pageB + "/metrics")

	// Nothing listens at dead: workers wait until stopped, clients fail.
	var unreachable []*proc
	for i, env := range [][]string{
		{"NATS_URL=nats://alice:" + testPassword + "@" + dead},
		{"NATS_URL=nats://" + testToken + "@" + dead},
	} {
		w := r.start(fmt.Sprintf("worker-unreachable%d", i), env, append([]string{"worker", "--slots", "1"}, logs[:2*i]...)...)
		unreachable = append(unreachable, w)
		waitLog(t, w, "waiting for NATS")
		terminate(w)
		if strings.Contains(w.output(), "partopt: ") { // stopped, not failed: its URL is in the waiting line only
			t.Errorf("%s: stopped while waiting for NATS, it printed an error:\n%s", w.name, w.output())
		}
		if code, out := r.cli(env, "status", "x"); code != exitBadInput {
			t.Errorf("status with nothing at %s: exit %d: %s", dead, code, out)
		}
	}
	for _, url := range []string{"nats://" + testToken + "@" + dead, "nats://alice:" + testPassword + "@" + dead} {
		code, out := r.cli(nil, "jobs", "--nats", url)
		if code != exitBadInput || !strings.Contains(out, "ps shows") {
			t.Errorf("jobs --nats URL with credentials: exit %d, want 2 and a warning: %s", code, out)
		}
	}
	for _, env := range [][]string{envA, envB} {
		r.cli(env, "worker", "--help")
	}
	if code, out := r.cli(nil, "run", model, "-o", filepath.Join(r.out, "run"), "--window", "8", "--halo", "2", "--workers", "1",
		"--listen", "127.0.0.1:0", "--user", "alice", "--password-file", passwordFile); code != 0 {
		t.Errorf("run --listen: exit %d: %s", code, out)
	}

	// What ps shows of the services.
	for _, p := range r.procs {
		if p.cmd == nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.cmd.Process.Pid))
		if err != nil {
			break // no /proc
		}
		r.save(p.name+" cmdline", cmdline)
	}
	for _, p := range r.procs {
		terminate(p)
	}

	var leaks []string
	filepath.WalkDir(r.out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(r.out, path)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, len(data)+1)
		for n := 1; sc.Scan(); n++ {
			if line := sc.Text(); strings.Contains(line, testToken) || strings.Contains(line, testPassword) {
				leaks = append(leaks, fmt.Sprintf("%s:%d: %s", name, n, line))
			}
		}
		return nil
	})
	if len(leaks) > 0 {
		t.Errorf("%d lines hold a secret:\n%s", len(leaks), strings.Join(leaks, "\n"))
	}
	// The lines are there, their secrets masked.
	for p, want := range map[*proc]string{coordA: "nats=nats://xxxxx@", unreachable[0]: "alice:xxxxx@", unreachable[1]: "nats://xxxxx@"} {
		if !strings.Contains(p.output(), want) {
			t.Errorf("%s: no %q:\n%s", p.name, want, p.output())
		}
	}
	if r.saved < 20 {
		t.Errorf("only %d outputs searched: the test searched too little", r.saved)
	}
}

// secretRun is a cluster of partopt processes whose every output lands in
// files below out: the services' logs, the clients' output, the pages fetched
// over HTTP, the fetched outputs and the services' data directories.
type secretRun struct {
	t                 *testing.T
	bin, out, secrets string
	procs             []*proc
	saved             int
}

// secret writes value into a file of its own, outside out, and returns its path.
func (r *secretRun) secret(name, value string) string {
	path := filepath.Join(r.secrets, name)
	if err := os.WriteFile(path, []byte(value+"\n"), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return path
}

// start starts partopt args as a process with env added to the environment.
func (r *secretRun) start(name string, env []string, args ...string) *proc {
	p := &proc{t: r.t, name: name, args: append([]string{r.bin}, args...), log: filepath.Join(r.out, name+".log"), env: env}
	p.start()
	r.procs = append(r.procs, p)
	r.saved++
	return p
}

// cli runs partopt args to its end with env added, its output kept.
func (r *secretRun) cli(env []string, args ...string) (int, string) {
	r.t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if e, ok := err.(*exec.ExitError); ok {
		code = e.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	r.save(strings.Join(args, " "), out)
	return code, string(out)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// save keeps data as a file of the transcript, named after what wrote it.
func (r *secretRun) save(what string, data []byte) {
	r.saved++
	what = strings.NewReplacer(testToken, "TOKEN", testPassword, "PASSWORD").Replace(what)
	name := unsafeName.ReplaceAllString(what, "_")
	path := filepath.Join(r.out, fmt.Sprintf("%03d-%.40s.out", r.saved, name))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// job submits model through the clients of env (retrying while the cluster
// starts), follows it to its end, lists the jobs and fetches the outputs into
// out; it returns the job's id.
func (r *secretRun) job(env []string, model, name string) string {
	r.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		code, out := r.cli(env, "submit", model, "--window", "8", "--halo", "2", "--job", name)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("submit: exit %d: %s", code, out)
		}
	}
	for _, args := range [][]string{{"status", "--wait", name}, {"status", "--json", name}, {"jobs"}, {"jobs", "--json"},
		{"fetch", name, "-o", filepath.Join(r.out, "fetched-"+name)}} {
		if code, out := r.cli(env, args...); code != 0 {
			r.t.Fatalf("%v: exit %d: %s", args, code, out)
		}
	}
	return name
}

// get keeps the body of url, which must answer 200.
func (r *secretRun) get(url string) {
	r.t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	r.save("GET "+url, body)
}

// waitLog waits until p's log holds s.
func waitLog(t *testing.T, p *proc, s string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.output(), s); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q in a minute:\n%s", p.name, s, p.output())
		}
	}
}

// terminate stops p as an operator does (SIGTERM) and waits for its end.
func terminate(p *proc) {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
		p.cmd = nil
	}
}
