// Progress on stderr: one \r-updated status line on a terminal; off a terminal
// (a log, a pipe), the same text as a log event ("progress", in --log-format)
// every logEvery, the first after logEvery, so that a long run is never
// silent and a short one adds nothing.
//
// Dependency: golang.org/x/term, the Go project's terminal package (maintained with
// the standard library; its only dependency is golang.org/x/sys). It tells whether
// stderr is a terminal, and how wide. A progress-bar library would add
// dependencies and draw a bar towards --max-iterations, which TRW-S rarely reaches
// (it stops on gap, agreement or stall), so the bar would mislead.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// logEvery spaces the progress events when stderr is not a terminal.
const logEvery = 30 * time.Second

// statusLine shows the solver's progress on one terminal line, rewritten in place at
// most every `every`.
type statusLine struct {
	w       io.Writer
	width   int // terminal columns; the line is cut to width − 1
	maxIter int
	every   time.Duration
	now     func() time.Time
	last    time.Time
	shown   bool
	log     *slog.Logger // not a terminal: events, nothing to clear
}

// newStatusLine returns the status line of cmd's stderr: on a terminal, else
// log events (logEvery apart).
func newStatusLine(cmd *cobra.Command, maxIter int) *statusLine {
	stderr := cmd.ErrOrStderr()
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		now := time.Now
		return &statusLine{w: stderr, maxIter: maxIter, every: logEvery, now: now, last: now(), shown: true, log: logger(cmd, slog.LevelInfo)}
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width < 20 {
		width = 80
	}
	return &statusLine{w: stderr, width: width, maxIter: maxIter, every: 100 * time.Millisecond, now: time.Now}
}

// update shows a solver's progress.
func (s *statusLine) update(p trws.Progress) {
	s.show(func() string { return progressText(p, s.maxIter) })
}

// show writes the line that text returns, unless a line was shown less than s.every
// ago (text is then not called).
func (s *statusLine) show(text func() string) {
	t := s.now()
	if s.shown && t.Sub(s.last) < s.every {
		return
	}
	s.last, s.shown = t, true
	line := text()
	if s.log != nil {
		s.log.Info("progress", "status", line)
		return
	}
	if len(line) > s.width-1 {
		line = line[:s.width-1]
	}
	fmt.Fprintf(s.w, "\r%s\x1b[K", line)
}

// clear erases the status line, if any was shown.
func (s *statusLine) clear() {
	if s != nil && s.shown && s.log == nil {
		fmt.Fprint(s.w, "\r\x1b[K")
	}
}

// progressText is the status line's text (ASCII, so that cutting it by bytes is safe).
func progressText(p trws.Progress, maxIter int) string {
	frac := 1.0
	if p.Variables > 0 {
		frac = float64(p.Agreeing) / float64(p.Variables)
	}
	return fmt.Sprintf("iter %d/%d  bound %.9g  energy %s  gap %.3g  agreeing %.1f%%",
		p.Iteration, maxIter, p.LowerBound, shortEnergy(p.Energy), p.Energy-p.LowerBound, math.Floor(frac*1000)/10)
}

func shortEnergy(e float64) string {
	if math.IsInf(e, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%.9g", e)
}

// pbpProgressText is the line of a pbp run: the last pruning iteration (|A| and
// its bound), if any, and the relaxation solve under way, if any.
func pbpProgressText(outer persistency.Progress, pruning bool, inner trws.Progress, solving bool, n, maxIter int) string {
	line := "initial relaxation"
	if pruning {
		frac := 1.0
		if n > 0 {
			frac = float64(outer.SetSize) / float64(n)
		}
		bound := "-" // an iteration that dropped hopeless nodes solves nothing
		if !math.IsNaN(outer.Bound) {
			bound = fmt.Sprintf("%.9g", outer.Bound)
		}
		line = fmt.Sprintf("iter %d  |A| %d/%d (%.1f%%)  bound %s", outer.Iteration, outer.SetSize, n, math.Floor(frac*1000)/10, bound)
	}
	if solving {
		line += fmt.Sprintf("  | trws %d/%d bound %.9g", inner.Iteration, maxIter, inner.LowerBound)
	}
	return line
}

// windowProgressText is a windowed run's line: the round, windows merged (and
// those solved, waiting for an earlier one to merge), the persistent fraction
// so far and the round's ETA from its pace — its windows merged over elapsed
// time, less those a resumed run merges from its earlier results, which are
// no pace ("resuming" while it replays them).
func windowProgressText(p partition.RasterProgress, n int64, elapsed time.Duration) string {
	eta := "ETA -"
	fresh := p.WindowsDone - p.Reused
	switch {
	case p.Resuming:
		eta = "resuming"
	case fresh > 0 && p.WindowsDone < p.Windows:
		left := time.Duration(float64(elapsed) / float64(fresh) * float64(p.Windows-p.WindowsDone))
		eta = "ETA " + left.Round(time.Second).String()
	}
	waiting := ""
	if p.Waiting > 0 {
		waiting = fmt.Sprintf(" +%d solved", p.Waiting)
	}
	return fmt.Sprintf("round %d  windows %d/%d (%.1f%%)%s  persistent %.1f%%  %s",
		p.Round+1, p.WindowsDone, p.Windows, 100*fraction(int64(p.WindowsDone), int64(p.Windows)), waiting,
		math.Floor(1000*fraction(p.Persistent, n))/10, eta)
}

func fraction(k, n int64) float64 {
	if n == 0 {
		return 1
	}
	return float64(k) / float64(n)
}

// progressView renders a job's progress on stderr.
type progressView struct {
	line       *statusLine
	roundStart time.Time // when the previous round's last window was merged, or a resume's replay ended
	last       time.Time
	round      int
}

// newProgress returns the progress display of a job on cmd's stderr.
func newProgress(cmd *cobra.Command) *progressView {
	line := newStatusLine(cmd, 0)
	now := line.now()
	return &progressView{line: line, roundStart: now, last: now}
}

// options sets opt.Progress to v's display.
func (v *progressView) options(opt job.Options) job.Options {
	if v != nil {
		opt.Progress = v.update
	}
	return opt
}

// update is job.Options.Progress.
func (v *progressView) update(p job.Progress) {
	v.line.maxIter = p.MaxIterations
	switch {
	case p.Windows != nil:
		now := v.line.now()
		switch {
		case p.Windows.Resuming: // the pace counts from the end of the replay
			v.round, v.roundStart = p.Windows.Round, now
		case p.Windows.Round != v.round:
			v.round, v.roundStart = p.Windows.Round, v.last
		}
		v.last = now
		w := *p.Windows
		v.line.show(func() string { return windowProgressText(w, int64(p.Variables), now.Sub(v.roundStart)) })
	case p.Eliminate != nil:
		e := *p.Eliminate
		v.line.show(func() string {
			return fmt.Sprintf("eliminating labels: round %d  movable %d  bound %.6g", e.Round, e.Movable, e.Bound)
		})
	case p.Method == job.PBP || p.Pruning != nil:
		var outer persistency.Progress
		var inner trws.Progress
		if p.Pruning != nil {
			outer = *p.Pruning
		}
		if p.Solve != nil {
			inner = *p.Solve
		}
		v.line.show(func() string {
			return pbpProgressText(outer, p.Pruning != nil, inner, p.Solve != nil, p.Variables, p.MaxIterations)
		})
	case p.Solve != nil:
		v.line.update(*p.Solve)
	}
}

// clear erases the status line.
func (v *progressView) clear() {
	if v != nil {
		v.line.clear()
	}
}
