package oracle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
)

// runResult is what one toulbar2 process produced.
type runResult struct {
	labeling   []int   // the labeling written, when found
	found      bool    // a labeling was written
	optimum    bool    // "Optimum:" printed
	noSolution bool    // "No solution" printed
	timedOut   bool    // "Time limit expired" printed
	stopped    bool    // killed at a deadline: labeling is the last one it wrote
	energy     float64 // last "energy:" field, NaN if none
	tail       string  // the end of the output, for error messages
}

// run writes m to dir and runs toulbar2 on it.
func (t Toulbar2) run(ctx context.Context, path, dir string, m *model.Model, prec int) (runResult, error) {
	modelPath, err := writeModel(dir, m)
	if err != nil {
		return runResult{}, err
	}
	solPath := filepath.Join(dir, "solution.txt")
	os.Remove(solPath) // from an earlier run in dir
	args := []string{modelPath}
	args = append(args, "-w="+solPath, "-precision="+strconv.Itoa(prec))
	if t.Timeout > 0 {
		secs := int64(math.Ceil(t.Timeout.Seconds()))
		args = append(args, "-timer="+strconv.FormatInt(max(secs, 1), 10))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout+killGrace(t.Timeout))
		defer cancel()
	}
	args = append(args, t.ExtraArgs...)

	out := &tailBuffer{max: 1 << 20}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	r := parseOutput(out.buf)
	if err != nil {
		// Killed at a deadline (the caller's, or Timeout's grace on a loaded
		// machine): the labeling -w wrote last is its best, unproven; its
		// printed energy may lag the file, so none is kept.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if x, ok := lastSolution(solPath, m.NumVars()); ok {
				r.labeling, r.found, r.optimum, r.stopped, r.energy = x, true, false, true, math.NaN()
				return r, nil
			}
		}
		if ctx.Err() != nil {
			return r, fmt.Errorf("oracle: toulbar2 %s: %w (%v)\n%s", filepath.Base(modelPath), ctx.Err(), err, r.tail)
		}
		return r, fmt.Errorf("oracle: toulbar2 %s: %w\n%s", strings.Join(args, " "), err, r.tail)
	}
	if data, err := os.ReadFile(solPath); err == nil && (len(bytes.TrimSpace(data)) > 0 || m.NumVars() == 0 && r.optimum) {
		x, err := uai.ReadSolution(bytes.NewReader(data), "toulbar2 solution", m.NumVars())
		if err != nil {
			return r, fmt.Errorf("oracle: %w\n%s", err, r.tail)
		}
		r.labeling, r.found = x, true
		if x == nil {
			r.labeling = []int{}
		}
	}
	return r, nil
}

// lastSolution is the labeling of n variables in toulbar2's solution file at
// path, when it holds a whole one (a process killed while writing leaves a
// part).
func lastSolution(path string, n int) ([]int, bool) {
	data, err := os.ReadFile(path)
	if err != nil || n == 0 {
		return nil, false
	}
	x, err := uai.ReadSolution(bytes.NewReader(data), "toulbar2 solution", n)
	return x, err == nil && len(x) == n
}

// killGrace is how long past Timeout the process may run before it is killed: -timer
// counts CPU seconds, which a loaded machine gives at a fraction of the wall
// clock's pace (a third with a few other processes per core: the kill is for a
// hung process, not a slow one), and toulbar2 needs a moment to write its labeling.
func killGrace(timeout time.Duration) time.Duration {
	return 5*time.Second + 2*timeout
}

// parseOutput reads toulbar2's verdict from its output: the last "energy:" field and
// whether it printed "Optimum:", "No solution" or "Time limit expired".
func parseOutput(out []byte) runResult {
	r := runResult{energy: math.NaN(), tail: tail(out, 20)}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Optimum:"):
			r.optimum = true
		case strings.HasPrefix(line, "No solution"):
			r.noSolution = true
		case strings.HasPrefix(line, "Time limit expired"):
			r.timedOut = true
		}
		if i := strings.Index(line, " energy: "); i >= 0 && (strings.HasPrefix(line, "Optimum:") || strings.HasPrefix(line, "New solution:")) {
			f := strings.Fields(line[i+len(" energy: "):])
			if len(f) > 0 {
				if e, err := strconv.ParseFloat(f[0], 64); err == nil {
					r.energy = e
				}
			}
		}
	}
	return r
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	s := strings.TrimRight(string(out), "\n")
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		i = strings.LastIndexByte(s[:i], '\n')
		if i < 0 {
			i = 0
		}
	}
	return "toulbar2 output (end):\n" + strings.TrimLeft(s[i:], "\n")
}

// tailBuffer keeps the last max bytes (at least) written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}
