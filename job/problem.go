package job

import (
	"bytes"
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/uai"
)

// IsGridFile says whether path names a tiled grid model (solved by windows, out
// of core).
func IsGridFile(path string) bool { return modelfile.IsGrid(path) }

// Evidence is MODEL.evid, read and checked against the model: the one place jobs
// load evidence, so that every command conditions on it the same way.
type Evidence struct {
	Path     string
	Observed int   // observations in the file
	Fixed    []int // per variable its observed label, or −1 (model.Condition's argument)
}

// LoadEvidence reads MODEL.evid for m, or returns nil when there is none or noEvid
// is set. Errors name the evidence file.
func LoadEvidence(modelPath string, m *model.Model, noEvid bool) (*Evidence, error) {
	path, ok := uai.EvidencePathFor(modelPath)
	if !ok || noEvid {
		return nil, nil
	}
	ev, err := uai.ReadEvidenceFile(path)
	if err != nil {
		return nil, err
	}
	return checkEvidence(path, ev, m)
}

// checkEvidence checks the evidence ev, read from path, against m.
func checkEvidence(path string, ev uai.Evidence, m *model.Model) (*Evidence, error) {
	fixed, err := ev.Fixed(m.LabelCounts())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Evidence{Path: path, Observed: ev.Len(), Fixed: fixed}, nil
}

// Note is the message that tells the user the evidence was applied.
func (ev *Evidence) Note() string {
	return fmt.Sprintf("applied evidence %s (%d observed variables); --no-evid ignores it", ev.Path, ev.Observed)
}

// condition conditions m on the evidence, as toulbar2 does.
func (ev *Evidence) condition(m *model.Model) (*model.Conditioned, error) {
	c, err := m.Condition(ev.Fixed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ev.Path, err)
	}
	return c, nil
}

// Energy is the energy of the labeling x of m with the evidence applied: the
// energy of x on the free variables of the conditioned model, or +Inf with the
// first variable where x contradicts the evidence (conflict ≥ 0).
func (ev *Evidence) Energy(m *model.Model, x []int) (e float64, conflict int, err error) {
	for v, l := range ev.Fixed {
		if l >= 0 && x[v] != l {
			return math.Inf(1), v, nil
		}
	}
	c, err := ev.condition(m)
	if err != nil {
		return 0, -1, err
	}
	return c.Model.Energy(restrict(x, c.Vars)), -1, nil
}

// restrict returns x on the variables vars (a labeling of a conditioned model).
func restrict(x []int, vars []int) []int {
	y := make([]int, len(vars))
	for i, v := range vars {
		y[i] = x[v]
	}
	return y
}

// Problem is a model as a job solves it: read, and conditioned on its evidence.
type Problem struct {
	Path     string
	Model    *model.Model       // the model of the file
	Evidence *Evidence          // nil without evidence
	Cond     *model.Conditioned // nil without evidence
	Solved   *model.Model       // Cond.Model, or Model
}

// LoadProblem reads the model and its evidence (unless noEvid) and conditions on it.
func LoadProblem(modelPath string, noEvid bool) (*Problem, error) {
	m, err := modelfile.Read(modelPath)
	if err != nil {
		return nil, err
	}
	ev, err := LoadEvidence(modelPath, m, noEvid)
	if err != nil {
		return nil, err
	}
	return newProblem(modelPath, m, ev)
}

// Condition is the problem of the model m, read from the file path, conditioned
// on evidence, the content of its evidence file (nil: none): what a worker of a
// graph job solves, given the job's model and evidence as bytes.
func Condition(path string, m *model.Model, evidence []byte) (*Problem, error) {
	var ev *Evidence
	if evidence != nil {
		evPath := path + ".evid"
		read, err := uai.ReadEvidence(bytes.NewReader(evidence), evPath)
		if err != nil {
			return nil, err
		}
		if ev, err = checkEvidence(evPath, read, m); err != nil {
			return nil, err
		}
	}
	return newProblem(path, m, ev)
}

func newProblem(path string, m *model.Model, ev *Evidence) (*Problem, error) {
	p := &Problem{Path: path, Model: m, Evidence: ev, Solved: m}
	if ev != nil {
		var err error
		if p.Cond, err = ev.condition(m); err != nil {
			return nil, err
		}
		p.Solved = p.Cond.Model
	}
	return p, nil
}

// Extend returns the labeling of the file's model that is y on the solved model's
// variables and the evidence label on the observed ones.
func (p *Problem) Extend(y []int) []int {
	if p.Evidence == nil {
		return y
	}
	x := make([]int, len(p.Evidence.Fixed))
	copy(x, p.Evidence.Fixed)
	for i, v := range p.Cond.Vars {
		x[v] = y[i]
	}
	return x
}

// Restrict returns x (over the file's variables) on the solved model's variables.
func (p *Problem) Restrict(x []int) []int {
	if p.Cond == nil {
		return x
	}
	return restrict(x, p.Cond.Vars)
}

// Proven returns, per variable of the file's model, the label that persistent
// (over the solved model, −1 unproven) proves or the evidence observes, and −1
// elsewhere: the content of persistent.evid.
func (p *Problem) Proven(persistent []int) []int {
	fixed := make([]int, p.Model.NumVars())
	for v := range fixed {
		fixed[v] = -1
	}
	if p.Evidence != nil {
		copy(fixed, p.Evidence.Fixed)
	}
	for i, l := range persistent {
		if l < 0 {
			continue
		}
		v := i
		if p.Cond != nil {
			v = p.Cond.Vars[i]
		}
		fixed[v] = l
	}
	return fixed
}

// observed is the number of observed variables.
func (p *Problem) observed() int { return p.Model.NumVars() - p.Solved.NumVars() }

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

// HigherOrder counts the factors of order > 2 and returns the largest order among them.
func HigherOrder(m *model.Model) (count, top int) {
	for f := 0; f < m.NumFactors(); f++ {
		if k := len(m.FactorVars(f)); k > 2 {
			count, top = count+1, max(top, k)
		}
	}
	return count, top
}

// rasterDims recognises a model whose factors form a 4-connected W×H raster.
func rasterDims(m *model.Model) (w, h int, ok bool) { return grid.Dims(m) }

// gridHeader reads the header of a .grid file.
func gridHeader(path string) (grid.Header, error) {
	r, err := grid.Open(path)
	if err != nil {
		return grid.Header{}, err
	}
	defer r.Close()
	return r.Header(), nil
}
