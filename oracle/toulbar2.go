package oracle

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
)

// FindToulbar2 returns the path of the toulbar2 executable on $PATH.
func FindToulbar2() (string, error) {
	p, err := exec.LookPath("toulbar2")
	if err != nil {
		return "", fmt.Errorf("oracle: toulbar2 not found on $PATH (install it with `apt-get install toulbar2`): %w", err)
	}
	return p, nil
}

// Toulbar2 runs the exact branch-and-bound solver toulbar2 (version 1.1.1, the Debian
// package) on a model. The zero value finds toulbar2 on $PATH, sets no time limit and
// chooses the precision itself. A Toulbar2 may be used by several goroutines at once:
// every Solve works in a temporary directory of its own.
type Toulbar2 struct {
	// Path is the toulbar2 executable; "" means FindToulbar2.
	Path string
	// Timeout, when positive, limits the run: toulbar2 gets -timer (CPU seconds,
	// rounded up to a whole second) and returns its best labeling unproven; the process
	// is killed when the wall clock passes Timeout plus a grace period of a few
	// seconds. Cancelling the context of Solve kills it at once, with an error; a
	// deadline of the context, or that kill, returns the labeling toulbar2 wrote
	// last (unproven), if it wrote one.
	Timeout time.Duration
	// Precision is toulbar2's -precision, the number of decimal digits of energy it
	// keeps (its integer costs are energies times about 10^Precision). 0 chooses the
	// largest value in [MinPrecision, MaxPrecision] whose costs cannot overflow for
	// this model (see Solve).
	Precision int
	// ExtraArgs are appended to the command line (e.g. "-A" or "-B=1", "-O=-3").
	ExtraArgs []string
}

// Result is what Toulbar2.Solve found.
type Result struct {
	// Labeling is a labeling of every variable of the model, observed ones included.
	Labeling []int
	// Energy is m.Energy(Labeling), the authority; +Inf when the model is infeasible.
	Energy float64
	// Optimal reports that toulbar2 proved optimality (it printed "Optimum:"), or
	// proved that every labeling is forbidden (Energy is then +Inf).
	Optimal bool
	// ReportedEnergy is toulbar2's "energy:" field (printed with 3 decimals and
	// computed from its rounded costs) plus the constant Solve took out of the model;
	// NaN when toulbar2 printed none or did not run.
	ReportedEnergy float64
	// Precision is the -precision toulbar2 ran with.
	Precision int
	// Tolerance bounds how much Energy may exceed the true minimum when Optimal:
	// toulbar2 minimises integer costs that differ from the energies by less than
	// 10^-Precision per factor, so Tolerance = F·10^-Precision for the F factors of
	// the reduced model it was given (at most m.NumFactors(); see Solve).
	Tolerance float64
}

// Solve runs toulbar2 on m with the observations ev (which may be empty) and returns
// its best labeling of m. It hands toulbar2 a reduced copy of m, written to a
// temporary directory that is removed afterwards. What follows are the behaviours of
// toulbar2 1.1.1, found by experiment, that shape it; tests cover each workaround.
//
// Reduction: Solve fixes the observed variables and every variable with one label
// (label 0) with m.Condition, sorts the variables of every factor ascending (permuting
// its table), takes out the constant (which the probability format can only carry in
// order-0 factors of ±700 each) and gives toulbar2 the result, with no evidence file.
// toulbar2 1.1.1 crashes (SIGSEGV) when a factor of order 2 on a 1-label variable forbids a label of
// a variable that is also in a factor of order 4 or more; and it returns a wrong
// optimum, with a wrong energy, when a factor of order 2 lists two variables of a
// factor of order 3 in the opposite order (order-3 factor on (a, b, c) and order-2
// factor on (b, a)). toulbar2's own evidence handling works — it writes every
// variable, observed ones at their observed labels — but reads "1 v l", a single
// observation in the UAI 2014 form, as the UAI 2010 form (sample count 1) and ignores
// it; conditioning avoids both the quirk and a second code path.
//
// Format: the UAI probability format, the native one, with forbidden states as
// probability 0, which toulbar2 turns into hard constraints. The .LG format would
// keep energies exactly, but toulbar2 cannot read the "-Inf" that marks a forbidden
// state there: the read fails and every later entry of the file becomes 0, silently.
// Only a model with a factor whose finite energies span more than 700 (exp underflows)
// goes to .LG, with forbidden entries written as −1e300, which toulbar2 caps to a hard
// cost.
//
// Precision: toulbar2 turns energies into integer costs at 10^-Precision (per factor,
// relative to the factor's minimum), so its optimum may exceed the true one by up to
// Result.Tolerance. With Precision 0, Solve takes the largest precision, at most
// MaxPrecision, for which S·10^Precision ≤ 10^14, S being the sum over factors of the
// spread of their finite energies (see AutoPrecision). toulbar2 1.1.1 fails from about
// S·10^Precision ≈ 10^17 on: it takes costs for forbidden and reports feasible models
// as having no solution; from precision 17 on it refuses to start.
//
// Infeasibility: toulbar2 prints "No solution" and writes no labeling. Solve then runs
// it again on the model's constraints alone (every finite energy 0, so no cost can
// overflow); if that run finds no solution either, every labeling is forbidden and
// Solve returns Energy +Inf, Optimal true and, as BruteForce does, the all-zero
// labeling (observed variables at their labels). Otherwise the first answer came from
// overflowing costs and Solve returns an error. When the factors on fixed variables
// alone forbid every labeling, Solve returns the same without running toulbar2.
//
// Solve checks toulbar2's answer: the labeling must be valid and of finite energy, and
// toulbar2's "energy:" must match m.Energy within its rounding, which catches a model
// read differently from how it was written. A time limit that expires after a labeling
// was found gives Optimal false; one that expires before, or any other run without a
// labeling, is an error carrying the tail of toulbar2's output.
func (t Toulbar2) Solve(ctx context.Context, m *model.Model, ev uai.Evidence) (Result, error) {
	fixed, err := ev.Fixed(m.LabelCounts())
	if err != nil {
		return Result{}, fmt.Errorf("oracle: toulbar2: %w", err)
	}
	path := t.Path
	if path == "" {
		if path, err = FindToulbar2(); err != nil {
			return Result{}, err
		}
	}
	// Fix the observed and the 1-label variables.
	pinned := slices.Clone(fixed)
	for v, l := range pinned {
		if l < 0 && m.NumLabels(v) == 1 {
			pinned[v] = 0
		}
	}
	c, err := m.Condition(pinned)
	if err != nil {
		return Result{}, fmt.Errorf("oracle: toulbar2: %w", err)
	}
	res := Result{Labeling: make([]int, m.NumVars()), ReportedEnergy: math.NaN()}
	for v, l := range pinned {
		res.Labeling[v] = max(l, 0)
	}
	offset := c.Model.Offset()
	if math.IsInf(offset, 1) {
		// Factors on fixed variables alone forbid every labeling.
		res.Energy, res.Optimal = offset, true
		return res, nil
	}
	sub, err := forToulbar2(c.Model)
	if err != nil {
		return Result{}, fmt.Errorf("oracle: toulbar2: %w", err)
	}
	prec := t.Precision
	if prec <= 0 {
		prec = AutoPrecision(sub)
	}
	dir, err := os.MkdirTemp("", "partopt-toulbar2-")
	if err != nil {
		return Result{}, fmt.Errorf("oracle: toulbar2: %w", err)
	}
	defer os.RemoveAll(dir)

	run, err := t.run(ctx, path, dir, sub, prec)
	if err != nil {
		return Result{}, err
	}
	res.ReportedEnergy = run.energy + offset
	res.Precision = prec
	res.Tolerance = float64(sub.NumFactors()) * math.Pow10(-prec)
	switch {
	case run.found:
		res.Optimal = run.optimum
	case run.noSolution:
		// Confirm with costs that cannot overflow.
		hard, err := constraintsOf(sub)
		if err != nil {
			return Result{}, fmt.Errorf("oracle: toulbar2: %w", err)
		}
		check, err := t.run(ctx, path, dir, hard, prec)
		if err != nil {
			return Result{}, err
		}
		if check.stopped {
			return Result{}, fmt.Errorf("oracle: toulbar2 found no solution and was stopped before it confirmed that the model has none\n%s", run.tail)
		}
		if !check.noSolution {
			return Result{}, fmt.Errorf("oracle: toulbar2 -precision=%d found no solution, but the model without its finite energies has one: its costs overflowed, pass a lower Toulbar2.Precision\n%s", prec, run.tail)
		}
		res.Energy, res.Optimal = math.Inf(1), true
		return res, nil
	case run.timedOut:
		return Result{}, fmt.Errorf("oracle: toulbar2 found no labeling within %v\n%s", t.Timeout, run.tail)
	default:
		return Result{}, fmt.Errorf("oracle: toulbar2 wrote no labeling and reported neither an optimum nor infeasibility\n%s", run.tail)
	}

	if err := sub.CheckLabeling(run.labeling); err != nil {
		return Result{}, fmt.Errorf("oracle: toulbar2 returned an invalid labeling: %w\n%s", err, run.tail)
	}
	for i, v := range c.Vars {
		res.Labeling[v] = run.labeling[i]
	}
	res.Energy = m.Energy(res.Labeling)
	if math.IsInf(res.Energy, 1) {
		return Result{}, fmt.Errorf("oracle: toulbar2 returned a labeling of energy +Inf (a forbidden state)\n%s", run.tail)
	}
	// The reported energy is rounded to 3 decimals and computed from rounded costs; a
	// larger difference means the model was not read as written. (A run stopped at a
	// deadline keeps no reported energy: it may lag the labeling written last.)
	if d := math.Abs(res.ReportedEnergy - res.Energy); !run.stopped && !(d <= 1e-3+2*res.Tolerance+1e-9*math.Abs(res.Energy)) {
		return Result{}, fmt.Errorf("oracle: toulbar2 reports energy %v for its labeling, whose energy is %v: the model was not read as written\n%s", res.ReportedEnergy, res.Energy, run.tail)
	}
	return res, nil
}
