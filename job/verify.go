package job

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/partopt/partopt/complete"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/persistency"
)

// Verified is what Verify proved.
type Verified struct {
	Persistent int     // persistent variables among the free ones
	Gap        float64 // the certificate's energy − bound on the final sub-problem (a whole-model run)
	// Windows and Rounds are the window proofs a windowed run's replay checked,
	// and its rounds.
	Windows, Rounds int
	// Completed says that the run's completion was re-checked (report.json
	// claims one): Optimal that labels.sol minimises the model, every
	// component of what the proofs left solved again exactly, but Trusted of
	// them, which an engine solved that this machine does not have.
	Completed  bool
	Optimal    bool
	Components int
	Trusted    int
}

// notVerified is the error of well-formed outputs that do not prove what they claim
// (an InternalError: the input was readable).
func notVerified(format string, args ...any) error {
	return Internal(fmt.Errorf("NOT verified: "+format, args...))
}

// Verify re-checks the outputs of a run in dir from the model alone. It
// checks the directory and its files first (a mistyped directory fails at
// once, the model unread) and never reads a .grid model past
// MaxInMemoryPixels whole. For a whole-model pbp or iri run it rebuilds the
// proof's final sub-problem from the model (with its evidence unless noEvid),
// checks the certificate on it, and checks that persistent.evid lists exactly
// the proven labels and the observed variables and that labels.sol takes
// them. For a windowed run it replays the window certificates
// (verifyWindowed). Unreadable, malformed or mismatched files are bad input;
// a proof that does not hold is an InternalError saying "NOT verified".
func Verify(modelPath, dir string, noEvid bool, note func(string)) (Verified, error) {
	return VerifyWith(modelPath, dir, VerifyOptions{NoEvidence: noEvid, Note: note})
}

// VerifyOptions are Verify's evidence switch and reporting.
type VerifyOptions struct {
	NoEvidence bool
	Note       func(string)
	// Progress, when set, is told how far a windowed run's replay has read
	// its window certificates (bytes of window-certificates.bin), as it goes.
	Progress func(read, total int64)
}

// VerifyWith is Verify with options.
func VerifyWith(modelPath, dir string, o VerifyOptions) (Verified, error) {
	noEvid, note := o.NoEvidence, o.Note
	windowed, err := checkVerify(modelPath, dir) // the directory before the model
	if err != nil {
		return Verified{}, err
	}
	if windowed {
		return verifyWindowed(context.Background(), modelPath, dir, noEvid, note, o.Progress)
	}
	certPath := filepath.Join(dir, CertificateFile)
	p, err := LoadProblem(modelPath, noEvid)
	if err != nil {
		return Verified{}, err
	}
	// Read every file before the check, so that bad input fails fast.
	res, err := readResultFile(certPath, p.Model)
	if err != nil {
		return Verified{}, err
	}
	if n := p.Solved.NumVars(); len(res.Persistent) != n {
		what := "variables"
		if p.Evidence != nil {
			what = "free variables (after " + p.Evidence.Path + ")"
		}
		return Verified{}, fmt.Errorf("%s: a result for %d variables, but %s has %d %s", certPath, len(res.Persistent), modelPath, n, what)
	}
	counts := p.Model.LabelCounts()
	evidPath := filepath.Join(dir, PersistentFile)
	listed, err := uai.ReadEvidenceFile(evidPath)
	if err != nil {
		return Verified{}, err
	}
	fixed, err := listed.Fixed(counts)
	if err != nil {
		return Verified{}, fmt.Errorf("%s: %w", evidPath, err)
	}
	labelsPath := filepath.Join(dir, LabelsFile)
	labels, err := readSolution(labelsPath, counts)
	if err != nil {
		return Verified{}, err
	}
	if p.Evidence != nil && note != nil {
		note(p.Evidence.Note())
	}

	chk, err := persistency.Verify(p.Solved, res)
	if err != nil {
		return Verified{}, notVerified("%s: %v", certPath, err)
	}
	persistent := res.Persistent
	if el := res.Elimination; el != nil {
		persistent = el.Persistent
		if err := checkDomains(filepath.Join(dir, DomainsFile), p, el.Alive); err != nil {
			return Verified{}, err
		}
	}
	want := p.Proven(persistent)
	if err := sameFixed(evidPath, fixed, want); err != nil {
		return Verified{}, err
	}
	if err := takes(labelsPath, labels, want); err != nil {
		return Verified{}, err
	}
	v := Verified{Persistent: persistency.Count(persistent), Gap: chk.Gap}
	alive := res.Domains(p.Solved)
	if res.Elimination != nil {
		alive = res.Elimination.Alive
	}
	if err := verifyCompletion(dir, p, alive, labels, true, &v); err != nil {
		return Verified{}, err
	}
	return v, nil
}

// verifyCompletion re-checks the completion a whole-model run's report
// claims: labels.sol within the alive labels, each component of what the
// proofs left solved again (complete.Check) and its labels a minimum there,
// and optimal.sol, written exactly when the report says optimal, the same
// labeling. A component that only an absent engine can solve is counted as
// trusted, not re-checked — and only where the report names that engine.
// inSol says labels are labels.sol's (else labels.plf's: a windowed raster
// run past UAIOutputLimit pixels writes neither labels.sol nor optimal.sol).
func verifyCompletion(dir string, p *Problem, alive [][]int, labels []int, inSol bool, v *Verified) error {
	var sol []int
	if inSol {
		sol = labels
	}
	claim, err := readCompletionClaim(dir, sol)
	if err != nil || claim == nil {
		return err
	}
	checked, err := complete.Check(context.Background(), p.Solved, alive, p.Restrict(labels), claim.budget)
	if err != nil {
		return notVerified("%s: %v", LabelsFile, err)
	}
	return claim.judge(checked, v)
}

// completionClaim is what a result's report claims of its completion, and the
// budget to check it with.
type completionClaim struct {
	report  string // report.json's path
	fields  CompletionFields
	claimed bool // "optimal": true
	budget  complete.Budget
}

// readCompletionClaim reads report.json's completion (nil: none claimed) and
// checks optimal.sol against it: present exactly when the report claims an
// optimum and labels.sol is written (labels, nil when it is not), and then
// labels.sol's labeling.
func readCompletionClaim(dir string, labels []int) (*completionClaim, error) {
	c := &completionClaim{report: filepath.Join(dir, ReportFile)}
	data, err := os.ReadFile(c.report)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &c.fields); err != nil {
		return nil, fmt.Errorf("%s: %w", c.report, err)
	}
	rep := c.fields
	optimalPath := filepath.Join(dir, OptimalFile)
	_, statErr := os.Stat(optimalPath)
	c.claimed = rep.Optimal != nil && *rep.Optimal
	switch {
	case rep.Optimal == nil:
		if statErr == nil {
			return nil, notVerified("%s exists, but %s claims no completion", optimalPath, c.report)
		}
		return nil, nil
	case rep.Completion == nil:
		return nil, fmt.Errorf("%s: \"optimal\" without \"completion\"", c.report)
	case c.claimed && labels != nil && statErr != nil:
		return nil, notVerified("%s claims an optimal labeling, but %v", c.report, statErr)
	case (!c.claimed || labels == nil) && statErr == nil:
		return nil, notVerified("%s exists, but %s does not claim an optimal labeling of labels.sol", optimalPath, c.report)
	}
	if statErr == nil {
		opt, err := uai.ReadSolutionFile(optimalPath, len(labels))
		if err != nil {
			return nil, err
		}
		if !slices.Equal(opt, labels) {
			return nil, notVerified("%s is not the labeling of %s", optimalPath, LabelsFile)
		}
	}
	// The run's budget; toulbar2 where installed, unless the run was told to
	// run no engine.
	budget := Completion{States: rep.Completion.Budget.States, Table: rep.Completion.Budget.Table,
		Engine: time.Duration(rep.Completion.Budget.EngineSeconds * float64(time.Second))}
	if rep.Completion.Budget.Engine == engineOff {
		budget.Engine = -1
	}
	if err := budget.validate(); err != nil {
		return nil, fmt.Errorf("%s: the completion's budget: %w", c.report, err)
	}
	c.budget, _ = budget.budget()
	return c, nil
}

// judge records the components checked in v; a claimed optimum that one of
// them contradicts, or that no method here could re-check and the report
// names no engine for, is NOT verified.
func (c *completionClaim) judge(checked []complete.Checked, v *Verified) error {
	engineUsed := c.fields.Completion.Methods[toulbar2{}.Name()] > 0
	v.Completed, v.Components, v.Optimal = true, len(checked), true
	for _, k := range checked {
		switch {
		case k.Method == complete.Open && c.claimed:
			if !engineUsed {
				return notVerified("a component of %d variables (variable %d) cannot be solved again within the budget, and %s names no engine that solved it", len(k.Vars), k.Vars[0], c.report)
			}
			v.Trusted++
		case k.Method == complete.Open:
			v.Optimal = false
		case !k.Optimal && c.claimed:
			return notVerified("the completed labeling is not a minimum on the component of variable %d: energy %v, solved again %v (%s)", k.Vars[0], k.Energy, k.Minimum, k.Method)
		case !k.Optimal:
			v.Optimal = false
		}
	}
	return nil
}

// sameFixed checks that the labels listed in the evidence file path (fixed, −1
// none) are want, what the proofs prove or the evidence observes.
func sameFixed(path string, fixed, want []int) error {
	for v, l := range want {
		switch got := fixed[v]; {
		case got == l:
		case got < 0:
			return notVerified("%s lacks variable %d, which the proof or the evidence fixes to %d", path, v, l)
		case l < 0:
			return notVerified("%s fixes variable %d to %d, which is neither proven persistent nor observed", path, v, got)
		default:
			return notVerified("%s gives variable %d label %d, the proof or the evidence %d", path, v, got, l)
		}
	}
	return nil
}

// takes checks that the labeling in path takes the labels of want (−1: any).
func takes(path string, labels, want []int) error {
	for v, l := range want {
		if l >= 0 && labels[v] != l {
			return notVerified("%s gives variable %d label %d, the proof or the evidence %d", path, v, labels[v], l)
		}
	}
	return nil
}

// readSolution reads a labeling of variables with label counts counts.
func readSolution(path string, counts []int32) ([]int, error) {
	labels, err := uai.ReadSolutionFile(path, len(counts))
	if err != nil {
		return nil, err
	}
	for v, l := range labels {
		if l < 0 || l >= int(counts[v]) {
			return nil, fmt.Errorf("%s: variable %d: label %d out of range [0,%d)", path, v, l, counts[v])
		}
	}
	return labels, nil
}

// checkDomains checks that the domains file lists the alive labels (and the
// evidence): a malformed file is bad input, a different one NOT verified.
func checkDomains(path string, p *Problem, alive [][]int) error {
	listed, err := ReadDomains(path, p.Model)
	if err != nil {
		return err
	}
	for v, ls := range p.domains(alive) {
		if !slices.Equal(ls, listed[v]) {
			return notVerified("%s gives variable %d the labels %v, the proof %v", path, v, listed[v], ls)
		}
	}
	return nil
}

// readResultFile reads a result file of a result of m (persistency.ResultBudget
// bounds what it may make the reader allocate); errors name it.
func readResultFile(path string, m *model.Model) (*persistency.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (partopt solve --method pbp writes it)", err)
	}
	defer f.Close()
	res, err := persistency.ReadResultFor(f, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// Energy is the energy of the labeling in the file labeling (a UAI solution
// file, or a labels.plf raster, read by bands for a .grid model beyond memory)
// of the model at modelPath, with MODEL.evid applied unless noEvid (as toulbar2 does:
// a labeling that contradicts the evidence has energy +Inf); note, when set, is
// told that the evidence was applied and where a labeling contradicts it. The
// labeling file is checked before the model is read (it exists, starts as a
// labeling; a raster's header, against a .grid model's), and a solution file
// of a .grid model past MaxInMemoryPixels is refused (the model would be read
// whole).
func Energy(modelPath, labeling string, noEvid bool, note func(string)) (float64, error) {
	if note == nil {
		note = func(string) {}
	}
	raster, err := checkLabeling(labeling)
	if err != nil {
		return 0, err
	}
	h, isGrid, err := modelHeader(modelPath)
	if err != nil {
		return 0, err
	}
	if isGrid {
		if err := checkEnergyModel(modelPath, h, labeling, raster); err != nil {
			return 0, err
		}
		if raster != nil && pixels(h) > maxInMemoryPixels {
			return gridEnergy(modelPath, labeling, noEvid, note) // beyond memory: by bands
		}
	}
	m, err := modelfile.Read(modelPath)
	if err != nil {
		return 0, err
	}
	var x []int
	if isLabelRaster(labeling) {
		x, err = readRaster(labeling, m.NumVars())
	} else {
		x, err = uai.ReadSolutionFile(labeling, m.NumVars())
	}
	if err != nil {
		return 0, err
	}
	if err := m.CheckLabeling(x); err != nil {
		return 0, fmt.Errorf("%s: %w", labeling, err)
	}
	ev, err := LoadEvidence(modelPath, m, noEvid)
	if err != nil || ev == nil {
		return m.Energy(x), err
	}
	e, conflict, err := ev.Energy(m, x)
	if err != nil {
		return 0, err
	}
	if math.IsInf(e, 1) && conflict >= 0 {
		note(fmt.Sprintf("the labeling gives variable %d label %d, the evidence %d: energy +Inf", conflict, x[conflict], ev.Fixed[conflict]))
	}
	note(ev.Note())
	return e, nil
}
