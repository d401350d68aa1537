// The pbp method of solve: persistency by pruning (package persistency), its four
// output files and its status line.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
	"github.com/spf13/cobra"
)

// pbpReport is report.json of the pbp method.
type pbpReport struct {
	Method              string         `json:"method"`
	Boundary            string         `json:"boundary"`
	Solver              string         `json:"solver"` // the relaxation: trws (pairwise) or srmp
	Model               string         `json:"model"`
	Evidence            string         `json:"evidence,omitempty"`
	Observed            int            `json:"observed"`
	Variables           int            `json:"variables"`
	FreeVariables       int            `json:"free_variables"`
	PersistentVariables int            `json:"persistent_variables"`
	PersistentFraction  float64        `json:"persistent_fraction"`
	Fraction            float64        `json:"fraction"`
	PruningIterations   int            `json:"pruning_iterations"`
	SolverIterations    int            `json:"solver_iterations"`
	LowerBound          jsonFloat      `json:"lower_bound"`
	Energy              jsonFloat      `json:"energy"`
	Gap                 jsonFloat      `json:"gap"`
	CertificateGap      jsonFloat      `json:"certificate_gap"`
	Verified            bool           `json:"verified"`
	Seconds             float64        `json:"seconds"`
	SolverSeconds       float64        `json:"solver_seconds"`
	Options             *reportOptions `json:"options,omitempty"` // the solver's
}

// runPBP is solve --method pbp.
func runPBP(cmd *cobra.Command, in *problem, f solveFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	variant, err := persistency.ParseVariant(f.boundary)
	if err != nil {
		return err // validate has checked it
	}
	solver := "trws"
	if high, _ := higherOrder(in.solved); high > 0 {
		solver = "srmp"
	}
	topt := capFor(f.trwsOptions(), solver)
	in.note(stderr)
	if err := prepareOutput(f.output); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt := persistency.Options{Variant: variant}
	status := newPBPStatus(stderr, in.solved.NumVars(), topt.MaxIterations)
	if status != nil {
		opt.Progress = status.pruned
		topt.Progress = status.solving
	}
	first := &firstBound{Relaxation: persistency.Auto{Options: topt}}
	opt.Solver = first
	res, err := persistency.Run(ctx, in.solved, opt)
	interrupted := ctx.Err() != nil // before stop, which cancels ctx
	stop()                          // a second Ctrl-C while the outputs are written ends the process
	status.clear()
	if err != nil {
		if interrupted {
			return internalError{fmt.Errorf("interrupted before the proof was complete: nothing is proven, nothing was written to %s", f.output)}
		}
		return internalError{err}
	}
	// Check the proof from the model alone before anything claims it.
	if _, err := persistency.Verify(in.solved, res); err != nil {
		return internalError{fmt.Errorf("the result failed its own verification: %w", err)}
	}

	energy := in.solved.Energy(res.Labeling) // as `partopt energy` computes it, evidence applied
	bound := res.LowerBound
	if first.ok {
		bound = first.bound
	}
	rep := pbpReport{
		Method: f.method, Boundary: variant.String(), Solver: solver, Model: in.path,
		Variables: in.m.NumVars(), FreeVariables: in.solved.NumVars(),
		PersistentVariables: len(res.Set),
		PersistentFraction:  res.Score, Fraction: res.Fraction,
		PruningIterations: res.PruningIterations, SolverIterations: res.SolverIterations,
		LowerBound: jsonFloat(bound), Energy: jsonFloat(energy),
		Gap: jsonFloat(energy - bound), CertificateGap: jsonFloat(res.CertificateGap),
		Verified: true, Seconds: res.Seconds, SolverSeconds: res.SolverSeconds,
	}
	rep.Options = &reportOptions{topt.MaxIterations, topt.GapTolerance, topt.StallIterations, topt.StallTolerance, topt.CheckEvery}
	if in.ev != nil {
		rep.Evidence, rep.Observed = in.ev.path, in.m.NumVars()-in.solved.NumVars()
	}
	ev := evidenceOf(provenLabels(in, res.Persistent))
	if err := removeStale(f.output, []string{certificateFile, persistentFile, labelsFile}); err != nil {
		return internalError{err}
	}
	// report.json comes last: when it exists, the other files are complete.
	writes := []struct {
		name  string
		write func(io.Writer) error
	}{
		{certificateFile, func(w io.Writer) error { return persistency.WriteResult(w, res) }},
		{persistentFile, func(w io.Writer) error { return uai.WriteEvidence(w, ev) }},
		{labelsFile, func(w io.Writer) error { return uai.WriteSolution(w, in.extend(res.Labeling)) }},
		{reportFile, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}},
	}
	for _, o := range writes {
		if err := writeFileAtomic(filepath.Join(f.output, o.name), o.write); err != nil {
			return internalError{err}
		}
	}
	fmt.Fprintf(stdout, "persistent %.6g variables %d/%d iterations %d energy %s bound %s gap %s\n",
		res.Score, len(res.Set), in.solved.NumVars(), res.PruningIterations,
		formatEnergy(energy), formatEnergy(bound), formatEnergy(res.CertificateGap))
	return nil
}

// firstBound is a Relaxation that recomputes the lower bound of its first solve (the
// whole model) in float64 from the dual certificate, as the trws method's report does:
// Result.LowerBound is TRW-S's float32 sum, which may exceed the minimum by ~1e-7
// relative. The certificate's messages are polished copies, so the solver's state and
// its warm start are unchanged; the cost is one float64 iteration and O(Σ_e K²).
type firstBound struct {
	persistency.Relaxation
	calls int
	bound float64
	ok    bool
}

// Solve implements persistency.Relaxation.
func (f *firstBound) Solve(ctx context.Context, p *model.Model, from *persistency.Warm) (*persistency.Outcome, error) {
	out, err := f.Relaxation.Solve(ctx, p, from)
	if f.calls++; err != nil || f.calls > 1 || out.Certify == nil {
		return out, err
	}
	if c, cerr := out.Certify(out.Labeling); cerr == nil && (c.Dual != nil || c.Factor != nil) {
		if v, cerr := c.Check(p); cerr == nil {
			f.bound, f.ok = v.Bound, true
		}
	}
	return out, nil
}

// provenLabels returns, per variable of the file's model, the label that the result
// proves persistent or the evidence observes, and −1 elsewhere: persistent.evid.
func provenLabels(in *problem, persistent []int) []int {
	fixed := make([]int, in.m.NumVars())
	for v := range fixed {
		fixed[v] = -1
	}
	if in.ev != nil {
		copy(fixed, in.ev.fixed)
	}
	for i, l := range persistent {
		if l >= 0 {
			fixed[in.parentVar(i)] = l
		}
	}
	return fixed
}

// evidenceOf lists the labels of fixed (−1: free) as UAI evidence.
func evidenceOf(fixed []int) uai.Evidence {
	var ev uai.Evidence
	for v, l := range fixed {
		if l >= 0 {
			ev.Vars, ev.Labels = append(ev.Vars, v), append(ev.Labels, l)
		}
	}
	return ev
}

// higherOrder counts the factors of order > 2 and returns the largest order among them.
func higherOrder(m *model.Model) (count, top int) {
	for f := 0; f < m.NumFactors(); f++ {
		if k := len(m.FactorVars(f)); k > 2 {
			count, top = count+1, max(top, k)
		}
	}
	return count, top
}

// pbpStatus is the status line of a pbp run: the last pruning iteration (|A| and its
// bound) and the progress of the TRW-S solve under way.
type pbpStatus struct {
	line    *statusLine
	n       int
	maxIter int
	outer   persistency.Progress
	pruning bool // outer holds a pruning iteration
	inner   trws.Progress
	busy    bool // inner holds the solve under way
}

// newPBPStatus returns the status line of a pbp run on stderr when it is a terminal,
// else nil.
func newPBPStatus(stderr io.Writer, n, maxIter int) *pbpStatus {
	line := newStatusLine(stderr, maxIter)
	if line == nil {
		return nil
	}
	return &pbpStatus{line: line, n: n, maxIter: maxIter}
}

// pruned is persistency's Progress callback.
func (s *pbpStatus) pruned(p persistency.Progress) {
	s.outer, s.pruning, s.busy = p, true, false
	s.line.show(s.text)
}

// solving is TRW-S's Progress callback.
func (s *pbpStatus) solving(p trws.Progress) {
	s.inner, s.busy = p, true
	s.line.show(s.text)
}

func (s *pbpStatus) clear() {
	if s != nil {
		s.line.clear()
	}
}

// text is the status line (ASCII, see progressText).
func (s *pbpStatus) text() string {
	return pbpProgressText(s.outer, s.pruning, s.inner, s.busy, s.n, s.maxIter)
}

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
