package job

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/persistency"
)

// DomainsFile lists the labels alive after a label elimination (methods iri and
// pbp+iri): the number of variables on the first line, then per variable of the
// model file "k l1 … lk" — an observed variable has its evidence label alone.
const DomainsFile = "domains.txt"

// IRIReport is report.json of methods iri and pbp+iri.
type IRIReport struct {
	Method              string  `json:"method"`
	Boundary            string  `json:"boundary,omitempty"` // pbp+iri: Algorithm 1's
	Solver              string  `json:"solver"`             // the relaxation: trws (pairwise) or srmp
	Model               string  `json:"model"`
	Evidence            string  `json:"evidence,omitempty"`
	Observed            int     `json:"observed"`
	Variables           int     `json:"variables"`
	FreeVariables       int     `json:"free_variables"`
	PersistentVariables int     `json:"persistent_variables"`
	PersistentFraction  float64 `json:"persistent_fraction"`
	Fraction            float64 `json:"fraction"`
	// EliminatedLabels counts the labels of the free variables proven
	// unnecessary, EliminatedLabelFraction them over Σ(|X_v| − 1).
	EliminatedLabels        int     `json:"eliminated_labels"`
	EliminatedLabelFraction float64 `json:"eliminated_label_fraction"`
	// PBPPersistentVariables (pbp+iri of a raster or binary model, pbpFirst) are
	// Algorithm 1's, before the elimination; PBPAddedVariables (pbp+iri of
	// others) those Algorithm 1 proved after it, among those it left undecided
	// (persistency.PruneAfter).
	PBPPersistentVariables *int           `json:"pbp_persistent_variables,omitempty"`
	PBPAddedVariables      *int           `json:"pbp_added_variables,omitempty"`
	Rounds                 int            `json:"rounds"`
	Stages                 int            `json:"stages"` // test labelings searched with, each proven
	PruningIterations      int            `json:"pruning_iterations,omitempty"`
	SolverIterations       int            `json:"solver_iterations"`
	LowerBound             Float          `json:"lower_bound"`
	Energy                 Float          `json:"energy"`
	CertificateBound       Float          `json:"certificate_bound"`
	Verified               bool           `json:"verified"`
	Seconds                float64        `json:"seconds"`
	SolverSeconds          float64        `json:"solver_seconds"`
	Options                *ReportOptions `json:"options,omitempty"`
	Outputs                []string       `json:"outputs"` // the files written beside report.json
	CompletionFields
	Provenance
}

// verifyProof is persistency.Verify; tests make it fail.
var verifyProof = persistency.Verify

// solveIRI is method iri (label elimination alone) or pbp+iri (label
// elimination, then Algorithm 1 on what it leaves undecided, its additions
// proven as one more stage: persistency.PruneAfter; on a raster or binary model
// Algorithm 1 first, then label elimination on what it leaves: pbpFirst), on
// the whole model; the proof is re-checked from the model before anything is
// written.
func (r *runner) solveIRI(ctx context.Context, p *Problem) (*Result, error) {
	s := r.spec
	solver, topt, err := r.begin(p)
	if err != nil {
		return nil, err
	}
	n := p.Solved.NumVars()
	res := &persistency.Result{Variant: s.Boundary, Persistent: make([]int, n)}
	for v := range res.Persistent {
		res.Persistent[v] = -1
	}
	progress := Progress{Method: s.Method, Variables: n, MaxIterations: topt.MaxIterations}
	eo := topt
	if s.Solver.MaxIterations == 0 {
		eo.MaxIterations = 0 // the elimination's own caps (persistency.Eliminate)
	}
	eopt := persistency.EliminateOptions{Solver: persistency.Auto{Options: eo}}
	if r.opt.Progress != nil {
		eopt.Progress = func(q persistency.EliminateProgress) {
			progress.Pruning, progress.Eliminate = nil, &q
			r.opt.Progress(progress)
		}
	}
	first := s.Method == PBPIRI && pbpFirst(p.Solved)
	var el *persistency.Elimination
	switch {
	case first:
		opt := persistency.Options{Variant: s.Boundary, Solver: persistency.Auto{Options: eo}, KeepDual: true} // one proof, written once
		if r.opt.Progress != nil {
			opt.Progress = func(q persistency.Progress) { progress.Pruning = &q; r.opt.Progress(progress) }
		}
		if res, err = persistency.PruneFirst(ctx, p.Solved, eopt, opt); err == nil {
			el = res.Elimination
		}
	case s.Method == PBPIRI:
		el, err = persistency.PruneAfter(ctx, p.Solved, eopt, persistency.Options{Variant: s.Boundary, Solver: persistency.Auto{Options: eo}})
	default:
		el, err = persistency.Eliminate(ctx, p.Solved, eopt)
	}
	if err != nil {
		return nil, r.proofFailed(ctx, err)
	}
	res.Elimination = el
	if !first {
		res.Labeling, res.Energy, res.LowerBound = el.Test, el.Energy, el.LowerBound
	}
	// Check the proof from the model alone before anything claims it: on a
	// goroutine of its own while the labeling is completed and the outputs are
	// staged (seg2.LG's 10⁶ variables: 0.6 s of one core), nothing committed
	// before it passes.
	verified := make(chan error, 1)
	var chk persistency.CheckResult
	go func() {
		var err error
		if chk, err = verifyProof(p.Solved, res); err != nil {
			err = fmt.Errorf("the result failed its own verification: %w", err)
		}
		verified <- err
	}()

	score, frac := persistency.Score(p.Solved, el.Persistent)
	eliminated, labels := eliminatedOf(p.Solved, el.Alive)
	done, err := r.completeWhole(ctx, p, el.Alive, el.Test)
	if err != nil {
		if verr := <-verified; verr != nil {
			return nil, Internal(verr)
		}
		return nil, err
	}
	energy := p.Solved.Energy(done.labeling)
	bound := res.LowerBound
	o := reportOptions(topt)
	rep := &IRIReport{
		Method: string(s.Method), Solver: solver, Model: r.modelName(), Provenance: r.provenance(nil),
		Variables: p.Model.NumVars(), FreeVariables: n,
		PersistentVariables: persistency.Count(el.Persistent), PersistentFraction: score, Fraction: frac,
		EliminatedLabels: eliminated, EliminatedLabelFraction: fraction(int64(eliminated), int64(labels)),
		Rounds: el.Rounds, Stages: len(el.Earlier) + 1, PruningIterations: res.PruningIterations, SolverIterations: res.SolverIterations + el.SolverIterations,
		LowerBound: Float(bound), Energy: Float(energy),
		Verified: true, Seconds: res.Seconds + el.Seconds, SolverSeconds: res.SolverSeconds + el.SolverSeconds, Options: &o,
		CompletionFields: done.fields,
	}
	switch {
	case first:
		pbp := len(res.Set)
		rep.Boundary, rep.PBPPersistentVariables = s.Boundary.String(), &pbp
	case s.Method == PBPIRI:
		rep.Boundary, rep.PBPAddedVariables = s.Boundary.String(), &el.Pruned
	}
	if p.Evidence != nil {
		rep.Evidence, rep.Observed = p.Evidence.Path, p.observed()
	}
	x, domains := p.Extend(done.labeling), p.domains(el.Alive)
	files := append([]output{{name: CertificateFile, write: func(w io.Writer) error { return persistency.WriteResult(w, res) }}},
		uaiOutputs(x, evidenceOf(p.Proven(el.Persistent)))...)
	files = append(files, done.files...)
	files = append(files, output{name: DomainsFile, write: func(w io.Writer) error { return writeDomains(w, domains) }})
	files = append(files, aliveRasterOutputs(p.Model, x, domains, s.PNGMax)...)
	rep.Outputs = names(files)
	if err := writeOutputsWhen(s.Output, files, func() (any, error) {
		if err := <-verified; err != nil {
			return nil, err
		}
		rep.CertificateBound = Float(chk.Bound)
		return rep, nil
	}); err != nil {
		return nil, Internal(err)
	}
	return &Result{Report: rep, Summary: fmt.Sprintf("persistent %.6g variables %d/%d eliminated %d/%d labels (%.4g) rounds %d energy %s%s",
		score, rep.PersistentVariables, n, eliminated, labels, rep.EliminatedLabelFraction, el.Rounds, FormatEnergy(energy), done.summary)}, nil
}

// eliminatedOf counts the labels of m's variables that alive no longer holds, and
// Σ(|X_v| − 1), the most that can be eliminated.
func eliminatedOf(m *model.Model, alive [][]int) (eliminated, labels int) {
	for v := range m.NumVars() {
		eliminated += m.NumLabels(v) - len(alive[v])
		labels += m.NumLabels(v) - 1
	}
	return eliminated, labels
}

// domains are the alive labels over the file's variables: the solved model's
// alive labels, and an observed variable's evidence label alone.
func (p *Problem) domains(alive [][]int) [][]int {
	if p.Evidence == nil {
		return alive
	}
	out := make([][]int, p.Model.NumVars())
	for v, l := range p.Evidence.Fixed {
		if l >= 0 {
			out[v] = []int{l}
		}
	}
	for i, v := range p.Cond.Vars {
		out[v] = alive[i]
	}
	return out
}

// writeDomains writes domains in the format of DomainsFile.
func writeDomains(w io.Writer, domains [][]int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, len(domains))
	buf := make([]byte, 0, 64)
	for _, ls := range domains {
		buf = strconv.AppendInt(buf[:0], int64(len(ls)), 10)
		for _, l := range ls {
			buf = strconv.AppendInt(append(buf, ' '), int64(l), 10)
		}
		bw.Write(append(buf, '\n'))
	}
	return bw.Flush()
}

// ReadDomains reads a DomainsFile for the model m: one line per variable, its
// alive labels strictly ascending and within its label count. Errors name the
// file and the line; memory grows with the file, never with a count it claims.
func ReadDomains(path string, m *model.Model) ([][]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	line := 0
	next := func() ([]string, bool) {
		for sc.Scan() {
			line++
			if fields := strings.Fields(sc.Text()); len(fields) > 0 {
				return fields, true
			}
		}
		return nil, false
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: line %d: %s", path, line, fmt.Sprintf(format, args...))
	}
	head, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, fmt.Errorf("%s: empty file", path)
	}
	if n, err := strconv.Atoi(head[0]); err != nil || len(head) != 1 || n != m.NumVars() {
		return nil, bad("%q: want the number of variables, %d", strings.Join(head, " "), m.NumVars())
	}
	out := make([][]int, 0, min(m.NumVars(), 1<<16))
	for v := range m.NumVars() {
		fields, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return nil, fmt.Errorf("%s: %d variables listed, want %d", path, v, m.NumVars())
		}
		k, err := strconv.Atoi(fields[0])
		if err != nil || k < 1 || k != len(fields)-1 {
			return nil, bad("variable %d: %q: want a count k ≥ 1 and k labels", v, strings.Join(fields, " "))
		}
		ls := make([]int, k)
		for i, f := range fields[1:] {
			l, err := strconv.Atoi(f)
			if err != nil || l < 0 || l >= m.NumLabels(v) || (i > 0 && l <= ls[i-1]) {
				return nil, bad("variable %d: label %q: want ascending labels below %d", v, f, m.NumLabels(v))
			}
			ls[i] = l
		}
		out = append(out, ls)
	}
	if _, more := next(); more {
		return nil, bad("more lines than the %d variables", m.NumVars())
	}
	return out, sc.Err()
}

// Reduce writes the reduced problem of a label elimination's outputs in dir: the
// model at modelPath with every label that DomainsFile does not list forbidden
// (its evidence included), as UAI (.uai, optionally .gz: a forbidden label has
// probability 0). Any solver then finds on out an optimum of the model with its
// evidence. LG cannot hold the −inf of a forbidden label and is refused. out is
// written through a temporary file, so a failed run leaves nothing.
func Reduce(modelPath, dir, out string) (*model.Model, error) {
	if f, _ := uai.FormatOf(out); f != uai.UAI {
		return nil, fmt.Errorf("%s: the reduced problem is written as .uai (optionally .gz): LG cannot hold the −inf of a forbidden label", out)
	}
	if err := CheckReduce(modelPath, dir, out); err != nil {
		return nil, err
	}
	m, err := modelfile.Read(modelPath)
	if err != nil {
		return nil, err
	}
	domains, err := ReadDomains(filepath.Join(dir, DomainsFile), m)
	if err != nil {
		return nil, err
	}
	r, err := m.Restrict(domains)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(filepath.Dir(out), ".partopt-reduce-"+filepath.Base(out))
	if err := uai.WriteFile(tmp, r); err != nil {
		os.Remove(tmp)
		return nil, Internal(err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return nil, Internal(err)
	}
	return r, nil
}

// pbpFirst says whether pbp+iri runs Algorithm 1 before label elimination on
// m: on a raster (a 4-connected grid: segmentation, stereo) or a model whose
// variables have at most two labels, where Algorithm 1 proves about
// everything and label elimination by itself is slow; label elimination first
// elsewhere (proteins, object detection: dense irregular graphs). Measured
// (BENCHMARKS, 2026-11-27 night), whole models: a 400² 16-disparity stereo
// raster 8.6 s and 100% with Algorithm 1 first, 77 s and 97.7% with the
// elimination first; a 1024² binary segmentation 6.6 s against 52 s; pdb1qks
// 0.32 s with the elimination first against 0.85 s.
func pbpFirst(m *model.Model) bool {
	if _, _, ok := grid.Dims(m); ok {
		return true
	}
	for v := range m.NumVars() {
		if m.NumLabels(v) > 2 {
			return false
		}
	}
	return true
}
