package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// clusterHosts are the scenario's host names and their loopback addresses
// (each replica its own, for the same raft port).
const clusterHosts = "127.0.0.1 localhost nats c1\n127.0.0.2 c2\n127.0.0.3 c3\n"

// clusterPrelude starts the scenario's shell: wait_for retries a command for
// up to a minute (printing its last output), stop ends the services started.
const clusterPrelude = `set -e
pids=
trap 'kill $pids 2>/dev/null || true' EXIT
wait_for() {
	i=0
	until out=$("$@" 2>&1); do
		i=$((i+1))
		if [ $i -ge 300 ]; then echo "gave up waiting for $*: $out" >&2; return 1; fi
		sleep 0.2
	done
	printf '%s\n' "$out"
}
stop() {
	kill $pids 2>/dev/null || true
	for p in $pids; do wait $p 2>/dev/null || true; done
	pids=
}
`

// serviceLine matches an example line that starts a service (a NATS server, a
// coordinator, a worker), after any variable assignments: it runs in the
// background, its output in server.log, coordinator.log or worker.log.
var serviceLine = regexp.MustCompile(`^([A-Z_]+=\S+ )*partopt (server|coordinator|worker) `)

// netnsHelper is the environment variable that makes the test binary the
// scenario's first process in its own network and mount namespaces.
const netnsHelper = "PARTOPT_TEST_NETNS_SCRIPT"

func TestMain(m *testing.M) {
	if script := os.Getenv(netnsHelper); script != "" {
		if err := enterClusterHost(); err != nil {
			fmt.Fprintln(os.Stderr, "cluster scenario:", err)
			os.Exit(3)
		}
		err := syscall.Exec("/bin/sh", []string{"sh", script}, slices.DeleteFunc(os.Environ(), func(e string) bool {
			return strings.HasPrefix(e, netnsHelper+"=")
		}))
		fmt.Fprintln(os.Stderr, "cluster scenario:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// enterClusterHost makes this process's fresh namespaces the hosts the
// examples name: loopback up (its usual ports free, whatever holds them
// outside), nats, c1, c2 and c3 in /etc/hosts, and empty /var/lib, /srv and
// /run, seen by this process and its children only.
func enterClusterHost() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	hosts := filepath.Join(os.Getenv("PARTOPT_TEST_HOSTS_DIR"), "hosts")
	if err := unix.Mount(hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("/etc/hosts: %w", err)
	}
	for _, dir := range []string{"/var/lib", "/srv", "/run"} {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// TestClusterHelpExamplesRunAsWritten: every example of the cluster's
// commands runs as written — a NATS server, coordinators, workers, jobs
// submitted, watched, fetched, cancelled and deleted — on the hosts and paths
// the examples name, made for the test in network and mount namespaces of its
// own (root only; skipped with a message elsewhere). A job on three
// coordinator replicas behind a token gives the single coordinator's outputs
// byte for byte, and so does run with a port of its own.
func TestClusterHelpExamplesRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster: not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, for network and mount namespaces where the examples' hosts and paths exist")
	}
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("jq, which an example pipes into, is not installed")
		}
		t.Skip("no jq, which an example pipes into")
	}
	bin := buildBinary(t, t.TempDir())
	dir := t.TempDir()
	writeExampleInputs(t, dir)
	hostsDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts"), []byte(clusterHosts), 0o644); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString(clusterPrelude)
	for _, line := range clusterScenario {
		fmt.Fprintf(&script, "echo %s\n", shellQuote("+ "+line))
		switch {
		case strings.HasPrefix(line, "setup: "):
			script.WriteString(strings.TrimPrefix(line, "setup: ") + "\n")
		case serviceLine.MatchString(line):
			fmt.Fprintf(&script, "%s > %s.log 2>&1 & pids=\"$pids $!\"\n", line, serviceLine.FindStringSubmatch(line)[2])
		default:
			script.WriteString(line + "\n")
		}
	}
	scriptPath := filepath.Join(dir, "scenario.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), netnsHelper+"="+scriptPath, "PARTOPT_TEST_HOSTS_DIR="+hostsDir,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, v := range []string{"NATS_URL", "NATS_TOKEN", "NATS_CONTEXT", "NATS_CREDS", "PARTOPT_NAMESPACE"} {
		cmd.Env = append(cmd.Env, v+"=")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // services the shell left behind
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("the scenario's transcript:\n%s", out)
	case errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL):
		t.Skipf("no network and mount namespaces here (%v): the cluster's examples are not run", err)
	case errors.As(err, &exit) && exit.ExitCode() == 3 && strings.HasPrefix(string(out), "cluster scenario:"):
		t.Skipf("the namespaces cannot be made the examples' hosts here: %s", out)
	default:
		t.Errorf("the scenario failed: %v\n%s", err, out)
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", filepath.Base(l), tail(data, 40))
		}
	}
}

// tail is the last n lines of data.
func tail(data []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
