package job

import (
	"context"
	"fmt"
	"io"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/srmp"
	"github.com/partopt/partopt/trws"
)

// LPReport is report.json of methods trws and srmp.
type LPReport struct {
	Method           string        `json:"method"`
	Model            string        `json:"model"`
	Evidence         string        `json:"evidence,omitempty"`
	Observed         int           `json:"observed"`
	Variables        int           `json:"variables"`
	FreeVariables    int           `json:"free_variables"`
	LowerBound       Float         `json:"lower_bound"`
	Energy           Float         `json:"energy"`
	Gap              Float         `json:"gap"`
	Agreeing         int           `json:"agreeing"`
	AgreeingFraction float64       `json:"agreeing_fraction"`
	Agreement        bool          `json:"agreement"`
	Iterations       int           `json:"iterations"`
	Stop             string        `json:"stop"`
	Seconds          float64       `json:"seconds"`
	Options          ReportOptions `json:"options"`
	Outputs          []string      `json:"outputs"` // the files written beside report.json
	Provenance
}

// ReportOptions are the solver options of a report.
type ReportOptions struct {
	MaxIterations   int     `json:"max_iterations"`
	GapTolerance    float64 `json:"gap_tolerance"`
	StallIterations int     `json:"stall_iterations"`
	StallTolerance  float64 `json:"stall_tolerance"`
	CheckEvery      int     `json:"check_every"`
	// SettleBelow: the fraction of disagreeing variables at or below which TRW-S
	// settles them near where they are (trws.Options.SettleBelow).
	SettleBelow float64 `json:"settle_below"`
}

func reportOptions(o trws.Options) ReportOptions {
	return ReportOptions{o.MaxIterations, o.GapTolerance, o.StallIterations, o.StallTolerance, o.CheckEvery, o.SettleBelow}
}

// PBPReport is report.json of a whole pbp run.
type PBPReport struct {
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
	LowerBound          Float          `json:"lower_bound"`
	Energy              Float          `json:"energy"`
	Gap                 Float          `json:"gap"`
	CertificateGap      Float          `json:"certificate_gap"`
	Verified            bool           `json:"verified"`
	Seconds             float64        `json:"seconds"`
	SolverSeconds       float64        `json:"solver_seconds"`
	Options             *ReportOptions `json:"options,omitempty"` // the solver's
	Outputs             []string       `json:"outputs"`           // the files written beside report.json
	CompletionFields
	Provenance
}

// lpSolver is what methods trws and srmp run: trws.Solver or srmp.Solver.
type lpSolver interface {
	Solve(ctx context.Context, opt trws.Options) (trws.Result, error)
	Bound() (float64, error)
}

// checkPairwise refuses models with factors of order > 2, which TRW-S cannot solve.
func checkPairwise(m *model.Model, name string) error {
	if high, top := HigherOrder(m); high > 0 {
		return fmt.Errorf("%s: the trws method needs a pairwise model (factors of order ≤ 2), but %d factors have order > 2 (up to %d); --method srmp solves any order", name, high, top)
	}
	return nil
}

// solveLP is method trws (pairwise models) or srmp (any order). Canceled, it
// writes the outputs of the work done.
func (r *runner) solveLP(ctx context.Context, p *Problem) (*Result, error) {
	s := r.spec
	if s.Method == TRWS {
		if err := checkPairwise(p.Solved, p.Path); err != nil {
			return nil, err
		}
	}
	r.noteEvidence(p.Evidence)
	if err := PrepareOutput(s.Output); err != nil {
		return nil, err
	}
	var solver lpSolver
	var err error
	if s.Method == TRWS {
		solver, err = trws.New(p.Solved)
	} else {
		solver, err = srmp.New(p.Solved)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Path, err)
	}
	opt := s.solverFor(string(s.Method))
	progress := Progress{Method: s.Method, Variables: p.Solved.NumVars(), MaxIterations: opt.MaxIterations}
	if r.opt.Progress != nil {
		opt.Progress = func(t trws.Progress) { progress.Solve = &t; r.opt.Progress(progress) }
	}
	res, err := solver.Solve(ctx, opt)
	if err != nil && ctx.Err() == nil {
		return nil, Internal(err)
	}
	// A bound valid up to float64 rounding (Result.LowerBound sums float32 values).
	bound := res.LowerBound
	if res.Iterations > 0 {
		if bound, err = solver.Bound(); err != nil {
			return nil, Internal(err)
		}
	}
	// The energy as `partopt energy` computes it: with evidence, on the conditioned
	// model, whose offset holds the observed factors (and so does the bound's).
	energy := p.Solved.Energy(res.Labeling)
	opt.Progress = nil
	rep := &LPReport{
		Method: string(s.Method), Model: r.modelName(), Provenance: r.provenance(nil),
		Variables: p.Model.NumVars(), FreeVariables: p.Solved.NumVars(),
		LowerBound: Float(bound), Energy: Float(energy), Gap: Float(energy - bound),
		Agreeing: res.Agreeing, AgreeingFraction: 1, Agreement: res.Agreement,
		Iterations: res.Iterations, Stop: res.Stop.String(), Seconds: res.Seconds,
		Options: reportOptions(opt),
	}
	if p.Evidence != nil {
		rep.Evidence, rep.Observed = p.Evidence.Path, p.observed()
	}
	if n := p.Solved.NumVars(); n > 0 {
		rep.AgreeingFraction = float64(res.Agreeing) / float64(n)
	}
	files := []output{labelsOutput(p.Extend(res.Labeling))}
	rep.Outputs = names(files)
	if err := writeOutputs(s.Output, files, rep); err != nil {
		return nil, Internal(err)
	}
	out := &Result{Report: rep, Canceled: res.Stop == trws.StopCanceled,
		Summary: fmt.Sprintf("energy %s bound %s gap %s agreeing %.6g iterations %d stop %s",
			FormatEnergy(energy), FormatEnergy(bound), FormatEnergy(float64(rep.Gap)),
			rep.AgreeingFraction, res.Iterations, rep.Stop)}
	if out.Canceled {
		r.note(fmt.Sprintf("interrupted after %d iterations (stop canceled); wrote the best labeling found to %s", res.Iterations, s.Output))
	}
	return out, nil
}

// solvePBP is method pbp on the whole model: Algorithm 1, its proof re-checked
// from the model before anything is written.
func (r *runner) solvePBP(ctx context.Context, p *Problem) (*Result, error) {
	s := r.spec
	solver, topt, err := r.begin(p)
	if err != nil {
		return nil, err
	}
	opt := persistency.Options{Variant: s.Boundary, KeepDual: true} // one proof, written once
	progress := Progress{Method: PBP, Variables: p.Solved.NumVars(), MaxIterations: topt.MaxIterations}
	if r.opt.Progress != nil {
		opt.Progress = func(q persistency.Progress) {
			progress.Pruning, progress.Solve = &q, nil
			r.opt.Progress(progress)
		}
		topt.Progress = func(t trws.Progress) { progress.Solve = &t; r.opt.Progress(progress) }
	}
	first := &firstBound{Relaxation: persistency.Auto{Options: topt}}
	opt.Solver = first
	res, err := persistency.Run(ctx, p.Solved, opt)
	if err != nil {
		return nil, r.proofFailed(ctx, err)
	}
	// Check the proof from the model alone before anything claims it.
	if _, err := persistency.Verify(p.Solved, res); err != nil {
		return nil, Internal(fmt.Errorf("the result failed its own verification: %w", err))
	}

	done, err := r.completeWhole(ctx, p, res.Domains(p.Solved), res.Labeling)
	if err != nil {
		return nil, err
	}
	energy := p.Solved.Energy(done.labeling) // as `partopt energy` computes it, evidence applied
	bound := res.LowerBound
	if first.ok {
		bound = first.bound
	}
	topt.Progress = nil
	rep := &PBPReport{
		Method: string(PBP), Boundary: s.Boundary.String(), Solver: solver, Model: r.modelName(), Provenance: r.provenance(nil),
		Variables: p.Model.NumVars(), FreeVariables: p.Solved.NumVars(),
		PersistentVariables: len(res.Set),
		PersistentFraction:  res.Score, Fraction: res.Fraction,
		PruningIterations: res.PruningIterations, SolverIterations: res.SolverIterations,
		LowerBound: Float(bound), Energy: Float(energy),
		Gap: Float(energy - bound), CertificateGap: Float(res.CertificateGap),
		Verified: true, Seconds: res.Seconds, SolverSeconds: res.SolverSeconds,
		CompletionFields: done.fields,
	}
	o := reportOptions(topt)
	rep.Options = &o
	if p.Evidence != nil {
		rep.Evidence, rep.Observed = p.Evidence.Path, p.observed()
	}
	files := append([]output{{name: CertificateFile, write: func(w io.Writer) error { return persistency.WriteResult(w, res) }}},
		uaiOutputs(p.Extend(done.labeling), evidenceOf(p.Proven(res.Persistent)))...)
	files = append(files, done.files...)
	rep.Outputs = names(files)
	if err := writeOutputs(s.Output, files, rep); err != nil {
		return nil, Internal(err)
	}
	return &Result{Report: rep, Summary: fmt.Sprintf("persistent %.6g variables %d/%d iterations %d energy %s bound %s gap %s%s",
		res.Score, len(res.Set), p.Solved.NumVars(), res.PruningIterations,
		FormatEnergy(energy), FormatEnergy(bound), FormatEnergy(res.CertificateGap), done.summary)}, nil
}

// begin starts a whole-model proof: the relaxation solver for p's order (trws for
// pairwise models, srmp otherwise) and its options, the evidence note, and the
// output directory checked before any solve.
func (r *runner) begin(p *Problem) (solver string, opt trws.Options, err error) {
	solver = string(TRWS)
	if high, _ := HigherOrder(p.Solved); high > 0 {
		solver = string(SRMP)
	}
	r.noteEvidence(p.Evidence)
	opt = r.spec.solverFor(solver)
	// One model, no windows: the workers' cores go to its TRW-S passes (the
	// same messages on any number).
	opt.Threads = r.spec.Workers
	return solver, opt, PrepareOutput(r.spec.Output)
}

// proofFailed is the error of a whole-model proof that failed: interrupted (then
// nothing is proven and nothing written) or internal.
func (r *runner) proofFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return Internal(fmt.Errorf("interrupted before the proof was complete: nothing is proven, nothing was written to %s", r.spec.Output))
	}
	return Internal(err)
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
