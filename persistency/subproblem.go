package persistency

import (
	"math"
	"slices"

	"github.com/partopt/partopt/model"
)

// Subproblem is Ê_{A,y}: the factors of the model inside A plus one boundary potential
// per factor that leaves A, over the variables of A (ascending, numbered 0..|A|−1).
type Subproblem struct {
	Model *model.Model
	// Vars lists A: Vars[i] is the model variable of sub-problem variable i.
	Vars []int
	// Boundary[i] says whether Vars[i] is a boundary node (in a factor leaving A).
	Boundary []bool
	// Hopeless lists sub-problem variables of boundary factors whose potential is −Inf
	// at some labeling other than y's or +Inf at y's: y can never satisfy the
	// criterion there.
	Hopeless []int
}

// BuildSubproblem builds Ê_{A,y} for the model m, the node set A (ascending model
// variables) and the test labeling y (a labeling of m; only its values on A are read).
// The construction is deterministic: Verify rebuilds the same model.
func BuildSubproblem(m *model.Model, A []int, y []int, v Variant) (*Subproblem, error) {
	if everyVariable(m, A) {
		// No factor leaves A: Ê_{A,y} is m without its constant, what the
		// induced builder would copy factor by factor, in the same order.
		return &Subproblem{Model: m.WithoutOffset(), Vars: slices.Clone(A), Boundary: make([]bool, len(A))}, nil
	}
	return buildSubproblem(m, A, y, v)
}

// everyVariable says whether A is 0, 1, …, n−1: every variable of m.
func everyVariable(m *model.Model, A []int) bool {
	if len(A) != m.NumVars() {
		return false
	}
	for i, v := range A {
		if v != i {
			return false
		}
	}
	return true
}

// buildSubproblem is BuildSubproblem by the induced builder.
func buildSubproblem(m *model.Model, A []int, y []int, v Variant) (*Subproblem, error) {
	ind, b, err := m.InducedBuilder(A) // the factors inside A, with m's functions
	if err != nil {
		return nil, err
	}
	sp := &Subproblem{Vars: ind.Vars, Boundary: make([]bool, len(A))}
	local := make([]int32, m.NumVars()) // model variable → its index in A, or −1
	for v := range local {
		local[v] = -1
	}
	for i, v := range A {
		local[v] = int32(i)
	}
	labels := make([]int, len(A))
	for i, v := range A {
		labels[i] = m.NumLabels(v)
	}
	hopeless := make([]bool, len(A))
	var in, yIn, inVars []int
	for _, f := range ind.Boundary {
		in, yIn, inVars = in[:0], yIn[:0], inVars[:0]
		for p, u := range m.FactorVars(f) {
			if i := int(local[u]); i >= 0 {
				in, yIn, inVars = append(in, p), append(yIn, y[u]), append(inVars, i)
				sp.Boundary[i] = true
			}
		}
		tab := BoundaryPotential(m.FactorFunction(f), in, yIn, v)
		// −Inf (invariant) encourages leaving y without bound; +Inf at y itself
		// (original, y forbidden with some outside labeling) makes Ê(y) infinite:
		// either way y can never meet the criterion on these nodes.
		yIdx := 0
		for j, i := range inVars {
			yIdx = yIdx*labels[i] + yIn[j]
		}
		if hasNegInf(tab) || math.IsInf(tab[yIdx], 1) {
			for _, i := range inVars {
				hopeless[i] = true
			}
			continue
		}
		if err := b.AddTable(inVars, tab); err != nil {
			return nil, err
		}
	}
	for i := range A {
		if hopeless[i] {
			sp.Hopeless = append(sp.Hopeless, i)
		}
	}
	if sp.Model, err = b.Build(); err != nil {
		return nil, err
	}
	return sp, nil
}

func hasNegInf(t []float64) bool {
	for _, x := range t {
		if math.IsInf(x, -1) {
			return true
		}
	}
	return false
}
