package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
)

// TestRunResumesFromItsStateAfterKills: "partopt run --state DIR" killed with
// SIGKILL in its pbp stage, started again and killed in its label
// elimination, then started again, writes the outputs of an uninterrupted
// windowed solve byte for byte; each restart says it resumes, and the state is
// gone once the outputs are written, as are the killed runs' stages in the
// output directory. While a run holds the state another is
// refused, and a run of other options is refused the state of another.
func TestRunResumesFromItsStateAfterKills(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	model := filepath.Join(dir, "tiled.grid")
	const side = 192
	if code, _, stderr := partopt("gen", "tiled", filepath.Join(genTestdata, "blocks.png"), "-o", model,
		"--width", fmt.Sprint(side), "--height", fmt.Sprint(side), "--labels", "4", "--lambda", "3"); code != 0 {
		t.Fatal(stderr)
	}
	args := []string{"--window", "16", "--halo", "4", "--workers", "2"}
	want := solveWindowed(t, model, side*side, side, side, args...)
	if p := want.report.PBPPersistentVariables; p == nil || *p == side*side {
		t.Fatalf("pbp proves %v of %d pixels: the run has no elimination stage to kill", p, side*side)
	}
	out, state := filepath.Join(dir, "out"), filepath.Join(dir, "state")
	addr := testutil.FreeAddrs(t, 1)[0]
	start := func(extra ...string) (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(bin, append(append([]string{"run", model, "-o", out, "--state", state, "--http", addr}, args...), extra...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr
	}
	// killIn kills the run with SIGKILL once windows of the stage's job
	// (run-0: pbp, run-1: label elimination) were merged by this process.
	killIn := func(cmd *exec.Cmd, job string) {
		t.Helper()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		merged := -1
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("the run ended (%v) before windows of %s were merged: the test kills nothing", err, job)
			default:
			}
			text := metricsText(addr)
			if !strings.Contains(text, `job_id="`+job+`"`) {
				continue
			}
			n := counterValue(text, "partopt_windows_merged_total")
			if merged < 0 {
				merged = n // the stage began: its own merges come next
			} else if n > merged {
				cmd.Process.Kill()
				<-exited
				return
			}
		}
		t.Fatalf("no window of %s merged in time", job)
	}

	first, _ := start()
	killIn(first, "run-0")
	if _, err := os.Stat(filepath.Join(state, "nats")); err != nil {
		t.Fatalf("the killed run left no state: %v", err)
	}
	second, stderr := start()
	for deadline := time.Now().Add(time.Minute); metricsText(addr) == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // it holds the state once it serves its page
			t.Fatalf("the second run serves no page: %s", stderr)
		}
	}
	// Another run on the state the second holds is refused.
	if code, _, busy := partopt(append([]string{"run", model, "-o", filepath.Join(dir, "other"), "--state", state}, args...)...); code == 0 || !strings.Contains(busy, "in use") {
		t.Errorf("a second run on a state in use: exit %d, %q", code, busy)
	}
	killIn(second, "run-1")
	if !strings.Contains(stderr.String(), "resuming the run stored in "+state) {
		t.Errorf("the second run does not say it resumes: %s", stderr)
	}
	// A run of other options does not take the state for its own.
	if code, _, other := partopt("run", model, "-o", filepath.Join(dir, "other"), "--state", state, "--window", "24", "--halo", "4"); code == 0 ||
		!strings.Contains(other, "another job") {
		t.Errorf("a run of another window on the state: exit %d, %q", code, other)
	}
	last, stderr := start()
	if err := last.Wait(); err != nil {
		t.Fatalf("the resumed run: %v: %s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "resuming the run stored in "+state) {
		t.Errorf("the last run does not say it resumes: %s", stderr)
	}
	sameOutputs(t, want.dir, out)
	// The killed runs' stages (their partial outputs) are gone too.
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".partopt-run-") {
			t.Errorf("a killed run's stage left in the output directory: %s", e.Name())
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the state after the outputs were written: %v, want it removed", err)
	}
}

// metricsText is the /metrics page at addr, or "" while it does not answer.
func metricsText(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

// counterValue is the value of the unlabelled series name in a metrics page.
func counterValue(text, name string) int {
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return int(v)
}
