package persistency

import (
	"fmt"

	"github.com/partopt/partopt/model"
)

// Verify re-checks a result against the model from scratch: it rebuilds the final
// sub-problem Ê_{A*,x*} from the model, the persistent labels and the boundary
// variant, and checks the certificate on it. It returns the check's outcome and an
// error when anything does not hold; only then are the persistent labels proven.
func Verify(m *model.Model, res *Result) (CheckResult, error) {
	if len(res.Persistent) != m.NumVars() {
		return CheckResult{}, fmt.Errorf("persistency: result has %d variables, the model %d", len(res.Persistent), m.NumVars())
	}
	var A []int
	x := make([]int, m.NumVars())
	for v, l := range res.Persistent {
		if l < -1 || l >= m.NumLabels(v) {
			return CheckResult{}, fmt.Errorf("persistency: variable %d: label %d out of range", v, l)
		}
		if l >= 0 {
			A = append(A, v)
			x[v] = l
		}
	}
	if len(A) == 0 {
		return CheckResult{Certified: true}, nil
	}
	sp, err := BuildSubproblem(m, A, x, res.Variant)
	if err != nil {
		return CheckResult{}, err
	}
	if len(sp.Hopeless) > 0 {
		return CheckResult{}, fmt.Errorf("persistency: a boundary potential rules out the labeling at variable %d", A[sp.Hopeless[0]])
	}
	if res.Certificate == nil {
		return CheckResult{}, fmt.Errorf("persistency: %d persistent labels and no certificate", len(A))
	}
	for i, v := range A {
		if i >= len(res.Certificate.Labeling) || res.Certificate.Labeling[i] != x[v] {
			return CheckResult{}, fmt.Errorf("persistency: the certificate's labeling differs from the persistent labels at variable %d", v)
		}
	}
	if len(res.Certificate.Labeling) != len(A) {
		return CheckResult{}, fmt.Errorf("persistency: the certificate covers %d variables, the persistent set %d", len(res.Certificate.Labeling), len(A))
	}
	chk, err := res.Certificate.Check(sp.Model)
	if err != nil {
		return chk, err
	}
	if !chk.Certified {
		return chk, fmt.Errorf("persistency: certificate gap %g: not proven", chk.Gap)
	}
	return chk, nil
}
