package job

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/partopt/partopt/complete"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// OptimalFile is the completed labeling when it is proven optimal (a UAI MPE
// solution, as LabelsFile, which then holds the same labeling).
const OptimalFile = "optimal.sol"

// Completion is how a job completes what persistency leaves (package
// complete): its zero value completes with complete.DefaultBudget and toulbar2
// where it is installed.
type Completion struct {
	// Off skips the completion (--complete=false).
	Off bool
	// States and Table are complete.Budget's (0: the default's); Engine is
	// toulbar2's time limit a component (0: DefaultEngineTime), and a negative
	// Engine runs no engine.
	States, Table float64
	Engine        time.Duration
}

// DefaultEngineTime is how long toulbar2 may work on one component; it works
// engineRuns times that in all (on components in parallel, one a core).
const (
	DefaultEngineTime = 10 * time.Second
	engineRuns        = 4
)

// ParseCompletion reads --complete-budget: comma-separated states=N (enumerate
// components of at most N labelings), table=N (dynamic programming with
// tables of at most N entries) and engine=DURATION (toulbar2's time a
// component; "off" runs none), e.g. "states=1e6,table=1e7,engine=5m".
func ParseCompletion(s string) (Completion, error) {
	var c Completion
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			return c, fmt.Errorf("%q: want key=value (states, table, engine)", part)
		}
		switch key {
		case "states", "table":
			n, err := strconv.ParseFloat(value, 64)
			if err != nil || !(n >= 1) || math.IsInf(n, 1) {
				return c, fmt.Errorf("%s=%s: want a number ≥ 1", key, value)
			}
			if key == "states" {
				c.States = n
			} else {
				c.Table = n
			}
		case "engine":
			if value == "off" {
				c.Engine = -1
				continue
			}
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("engine=%s: want a duration such as 30s or 5m, or off", value)
			}
			c.Engine = d
		default:
			return c, fmt.Errorf("%q: unknown limit %q (states, table, engine)", part, key)
		}
	}
	return c, c.validate()
}

// The largest budget a completion takes (and verify re-runs from a report):
// 2^40 labelings enumerated, tables of 2^32 entries (48 GB with their
// argmins), a day of toulbar2 a component.
const (
	maxStates     = protocol.MaxCompletionStates
	maxTable      = protocol.MaxCompletionTable
	maxEngineTime = protocol.MaxCompletionSeconds * time.Second
)

// wire is c as a job's protocol.Completion (nil: off).
func (c Completion) wire() *protocol.Completion {
	if c.Off {
		return nil
	}
	return &protocol.Completion{States: c.States, Table: c.Table, EngineSeconds: c.Engine.Seconds()}
}

// completionFromWire is a job's completion (nil: off).
func completionFromWire(w *protocol.Completion) Completion {
	if w == nil {
		return Completion{Off: true}
	}
	c := Completion{States: w.States, Table: w.Table, Engine: time.Duration(w.EngineSeconds * float64(time.Second))}
	if w.EngineSeconds < 0 {
		c.Engine = -1
	}
	return c
}

// validate checks c against the largest budget.
func (c Completion) validate() error {
	switch {
	case c.States > maxStates || c.States < 0 || math.IsNaN(c.States):
		return fmt.Errorf("states=%g: want at most %d", c.States, int64(maxStates))
	case c.Table > maxTable || c.Table < 0 || math.IsNaN(c.Table):
		return fmt.Errorf("table=%g: want at most %d", c.Table, int64(maxTable))
	case c.Engine > maxEngineTime:
		return fmt.Errorf("engine=%v: want at most %v", c.Engine, maxEngineTime)
	}
	return nil
}

// budget is c as a complete.Budget, with toulbar2 as its engine where it is
// installed (engine names it, or says why there is none).
func (c Completion) budget() (b complete.Budget, engine string) {
	b = complete.DefaultBudget
	if c.States > 0 {
		b.States = c.States
	}
	if c.Table > 0 {
		b.Table = c.Table
	}
	if c.Engine < 0 {
		return b, engineOff
	}
	path, err := oracle.FindToulbar2()
	if err != nil {
		return b, "none (toulbar2 is not installed)"
	}
	b.Engine, b.EngineDeadline = toulbar2{oracle.Toulbar2{Path: path, Timeout: c.engineTime()}}, time.Now().Add(engineRuns*c.engineTime())
	return b, "toulbar2"
}

// engineTime is the engine's time limit a component.
func (c Completion) engineTime() time.Duration {
	if c.Engine > 0 {
		return c.Engine
	}
	return DefaultEngineTime
}

// engineOff is CompletionBudget.Engine of a run told to run no engine.
const engineOff = "none (engine=off)"

// toulbar2 is complete.Engine by the toulbar2 program (package oracle).
type toulbar2 struct{ t oracle.Toulbar2 }

func (toulbar2) Name() string { return "toulbar2" }

func (e toulbar2) Solve(ctx context.Context, m *model.Model) ([]int, bool, error) {
	t := e.t
	t.ExtraArgs = toulbar2Args(m)
	r, err := t.Solve(ctx, m, uai.Evidence{})
	return r.Labeling, r.Optimal, err
}

// btdWidth is the widest component toulbar2 searches along a tree
// decomposition (-B=1, min-fill's order -O=-3) rather than its default
// depth-first search. Measured (toulbar2 1.1.1, a CPU limit of 40 s):
// testdata/404.wcsp (width 19) proven in 0.03 s by it, 26.7 s by default; the
// pascal2 grid networks 50-20-5 and 75-26-5 (width 24 and 27) proven in 24 s
// and 25 s by it, neither by the default search, which finds their optima
// unproven; a frustrated grid of width 46 (Grids_26) proven by neither.
const btdWidth = 32

// toulbar2Args are toulbar2's options for the component m: a tree
// decomposition search where m is narrow (width ≤ btdWidth).
func toulbar2Args(m *model.Model) []string {
	if complete.Width(m) <= btdWidth {
		return []string{"-B=1", "-O=-3"}
	}
	return nil
}

// CompletionReport is report.json's "completion": what the completion found
// left, how it solved it, and what stays open.
type CompletionReport struct {
	// Undecided are the variables with more than one alive label, in
	// Components connected parts.
	Undecided  int `json:"undecided_variables"`
	Components int `json:"components"`
	// LargestVariables and LargestStates: the largest component's variables,
	// and the most labelings (alive labels only) of any component.
	LargestVariables int   `json:"largest_variables"`
	LargestStates    Float `json:"largest_states"`
	// Methods counts the components solved by each method (enumeration,
	// dynamic-programming, toulbar2, open).
	Methods map[string]int `json:"methods"`
	// Open lists the components no method finished, with why; Skipped says
	// why nothing was completed (a raster's undecided pixels past the bound).
	Open    []OpenComponent `json:"open,omitempty"`
	Skipped string          `json:"skipped,omitempty"`
	// Budget is what the completion was allowed.
	Budget  CompletionBudget `json:"budget"`
	Seconds float64          `json:"seconds"`
}

// OpenComponent is a component the completion did not solve exactly.
type OpenComponent struct {
	FirstVariable int    `json:"first_variable"` // of the model file
	Variables     int    `json:"variables"`
	States        Float  `json:"states"`
	Reason        string `json:"reason"`
}

// CompletionBudget is report.json's record of the completion's limits.
type CompletionBudget struct {
	States float64 `json:"states"`
	Table  float64 `json:"table"`
	Engine string  `json:"engine"`
	// EngineSeconds is the engine's time limit a component.
	EngineSeconds float64 `json:"engine_seconds,omitempty"`
}

// completeLabeling completes the labeling of m (the solved model: free
// variables) whose alive labels are proven: a minimum over alive wherever the
// budget allows, from start; vars maps m's variables to the file's (nil: the
// same) for the report.
func completeLabeling(ctx context.Context, c Completion, m *model.Model, alive [][]int, start []int, vars []int) (*complete.Result, *CompletionReport, error) {
	b, engine := c.budget()
	res, err := complete.Complete(ctx, m, alive, start, b)
	if err != nil {
		return nil, nil, err
	}
	return res, c.report(res.Components, b, engine, vars, res.Seconds), nil
}

// report is the CompletionReport of the components solved within b (engine
// its name), vars mapping their variables to the file's (nil: the same).
func (c Completion) report(solved []complete.Solved, b complete.Budget, engine string, vars []int, seconds float64) *CompletionReport {
	rep := &CompletionReport{Components: len(solved), Methods: map[string]int{}, Seconds: seconds,
		Budget: CompletionBudget{States: b.States, Table: b.Table, Engine: engine}}
	if b.Engine != nil {
		rep.Budget.EngineSeconds = c.engineTime().Seconds()
	}
	for _, s := range solved {
		rep.Undecided += len(s.Vars)
		rep.LargestVariables = max(rep.LargestVariables, len(s.Vars))
		rep.LargestStates = Float(max(float64(rep.LargestStates), s.States))
		rep.Methods[s.Method]++
		if !s.Exact {
			first := s.Vars[0]
			if vars != nil {
				first = vars[first]
			}
			rep.Open = append(rep.Open, OpenComponent{FirstVariable: first, Variables: len(s.Vars), States: Float(s.States), Reason: s.Reason})
		}
	}
	return rep
}

// completionSummary is the summary line's part on the completion.
func completionSummary(optimal bool, rep *CompletionReport) string {
	switch {
	case rep.Skipped != "":
		return fmt.Sprintf(" not proven optimal (not completed: %s)", rep.Skipped)
	case optimal && rep.Components == 0:
		return " optimal (every variable persistent)"
	case optimal:
		return fmt.Sprintf(" optimal (%d variables left in %d components, completed)", rep.Undecided, rep.Components)
	}
	return fmt.Sprintf(" not proven optimal (%d of %d components open)", len(rep.Open), rep.Components)
}

// rasterBounds are the bounds of a raster's completion (partition.CompleteRaster)
// on workers goroutines: the undecided pixels it holds (12 bytes each) and a
// component's window (a worker's).
func rasterBounds(workers int) partition.RasterBounds {
	return partition.RasterBounds{MaxUndecided: 1 << 24, MaxWindow: 1 << 22, Workers: workers}
}

// completeRaster completes a raster run's labeling (labeling, a label file
// of alive labels) from its alive planes, and returns the report's fields
// and the summary line's part; nothing when the completion is off.
func (r *runner) completeRaster(ctx context.Context, raster partition.Raster, alive partition.AliveLabels, labeling partition.Store) (CompletionFields, string, error) {
	c := r.spec.Complete
	if c.Off {
		return CompletionFields{}, "", nil
	}
	t0 := time.Now()
	b, engine := c.budget()
	res, err := partition.CompleteRaster(ctx, raster, alive, labeling, b, rasterBounds(r.spec.Workers))
	if err != nil {
		if ctx.Err() != nil {
			return CompletionFields{}, "", Internal(fmt.Errorf("interrupted: %w", ctx.Err()))
		}
		return CompletionFields{}, "", Internal(fmt.Errorf("completing the labeling: %w", err))
	}
	rep := c.report(res.Components, b, engine, nil, time.Since(t0).Seconds())
	rep.Skipped = res.Skipped
	optimal := res.Optimal && res.Skipped == ""
	return CompletionFields{Optimal: &optimal, Completion: rep}, completionSummary(optimal, rep), nil
}

// CompletionFields are the completion's part of a whole-model report.
type CompletionFields struct {
	// Optimal: labels.sol minimises the model (every component of what the
	// proofs left was solved exactly); absent when the completion did not run.
	Optimal    *bool             `json:"optimal,omitempty"`
	Completion *CompletionReport `json:"completion,omitempty"`
}

// completion is a whole-model run's completion: the labeling the run writes
// (the test labeling start itself when the completion is off), the report's
// fields, the outputs it adds and the summary line's part.
type completion struct {
	labeling []int
	fields   CompletionFields
	files    []output
	summary  string
}

// completeWhole completes a whole-model run of p from its proven alive labels
// (over p.Solved) and the labeling start.
func (r *runner) completeWhole(ctx context.Context, p *Problem, alive [][]int, start []int) (completion, error) {
	if r.spec.Complete.Off {
		return completion{labeling: start}, nil
	}
	var vars []int
	if p.Cond != nil {
		vars = p.Cond.Vars
	}
	res, rep, err := completeLabeling(ctx, r.spec.Complete, p.Solved, alive, start, vars)
	if err != nil {
		if ctx.Err() != nil {
			return completion{}, Internal(fmt.Errorf("interrupted: %w", ctx.Err()))
		}
		return completion{}, Internal(fmt.Errorf("completing the labeling: %w", err))
	}
	c := completion{labeling: res.Labeling, fields: CompletionFields{Optimal: &res.Optimal, Completion: rep}, summary: completionSummary(res.Optimal, rep)}
	if res.Optimal {
		x := p.Extend(res.Labeling)
		c.files = []output{{name: OptimalFile, write: func(w io.Writer) error { return uai.WriteSolution(w, x) }}}
	}
	return c, nil
}
