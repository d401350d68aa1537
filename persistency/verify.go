package persistency

import (
	"fmt"
	"slices"

	"github.com/partopt/partopt/model"
)

// Verify re-checks a result against the model from scratch: it rebuilds the final
// sub-problem Ê_{A*,x*} from the model, the persistent labels and the boundary
// variant, and checks the certificate on it; then, when the result carries a label
// elimination that started from those persistent labels, it checks the
// elimination (VerifyElimination, its prior domains rebuilt from the persistent
// labels, never read from the result). It returns the check's outcome and an
// error when anything does not hold; only then are the labels proven.
func Verify(m *model.Model, res *Result) (CheckResult, error) {
	chk, err := verifyPersistent(m, res)
	if err != nil || res.Elimination == nil {
		return chk, err
	}
	el := *res.Elimination
	el.Prior = res.Domains(m)
	return VerifyElimination(m, &el)
}

// Domains are the labels the persistent labels leave alive — the persistent label
// alone, every label elsewhere — or nil when none is persistent: the prior domains
// of an elimination run after Algorithm 1.
func (res *Result) Domains(m *model.Model) [][]int {
	if !slices.ContainsFunc(res.Persistent, func(l int) bool { return l >= 0 }) {
		return nil
	}
	alive := func(v, l int) int { // how many labels v keeps
		if l >= 0 {
			return 1
		}
		return m.NumLabels(v)
	}
	size := 0
	for v, l := range res.Persistent {
		size += alive(v, l)
	}
	d, all := make([][]int, m.NumVars()), make([]int, size) // the lists one after the other
	for v, l := range res.Persistent {
		k := alive(v, l)
		d[v], all = all[:k:k], all[k:]
		if l >= 0 {
			d[v][0] = l
			continue
		}
		for i := range d[v] {
			d[v][i] = i
		}
	}
	return d
}

// allLabels is 0, …, k−1.
func allLabels(k int) []int {
	ls := make([]int, k)
	for l := range ls {
		ls[l] = l
	}
	return ls
}

// verifyPersistent is Verify of the persistent labels of Algorithm 1.
func verifyPersistent(m *model.Model, res *Result) (CheckResult, error) {
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
