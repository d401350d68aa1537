package oracle

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
)

// MinPrecision and MaxPrecision bound the automatic choice of Toulbar2.Precision. More
// than 12 digits buys nothing: float64 energies of a few hundred, and the exp/log
// round trip of the probability format, are only exact to about 10^-14.
const (
	MinPrecision = 3
	MaxPrecision = 12
)

// costBudget bounds S·10^precision (see AutoPrecision), toulbar2's upper bound in
// cost units. toulbar2 1.1.1 failed in our runs from about 10^17 on (2.6·10^16 still
// worked), reporting feasible models as infeasible; 10^14 leaves a margin of 100.
const costBudget = 1e14

// AutoPrecision is the precision Solve uses when Toulbar2.Precision is 0: the largest
// p in [MinPrecision, MaxPrecision] with S·10^p ≤ 10^14, where S is the sum over the
// factors of m of the spread (maximum minus minimum) of their finite energies.
func AutoPrecision(m *model.Model) int {
	s := 0.0
	for f := range m.NumFactors() {
		s += spread(m.FactorFunction(f))
	}
	p := MaxPrecision
	for p > MinPrecision && s*math.Pow10(p) > costBudget {
		p--
	}
	return p
}

// spread is the maximum minus the minimum of the finite values of fn (0 if none).
func spread(fn *model.Function) float64 {
	switch fn.Kind {
	case model.Potts:
		return fn.W
	case model.TruncatedLinear, model.TruncatedQuadratic:
		// W·min(d, T) for the distances d the shape allows.
		d := float64(max(fn.Shape[0], fn.Shape[1]) - 1)
		if fn.Kind == model.TruncatedQuadratic {
			d *= d
		}
		return fn.W * math.Min(d, fn.T)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range fn.Table {
		if !math.IsInf(v, 1) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > hi {
		return 0
	}
	return hi - lo
}

// forToulbar2 returns m without its offset (the model's constant, which the caller
// adds back) and with the variables of every factor in ascending order, or m itself
// when it already is so. toulbar2 1.1.1 mishandles factors that list shared variables
// in different orders (see Solve), and uai.Write spends an order-0 factor on every 300
// of the offset in the probability format.
func forToulbar2(m *model.Model) (*model.Model, error) {
	ready := m.Offset() == 0
	for f := 0; ready && f < m.NumFactors(); f++ {
		ready = slices.IsSorted(m.FactorVars(f))
	}
	if ready {
		return m, nil
	}
	labels := make([]int, m.NumVars())
	for v := range labels {
		labels[v] = m.NumLabels(v)
	}
	b := model.NewBuilder(labels)
	var vars, perm, x, y []int
	var t []float64
	for f := range m.NumFactors() {
		fv, fn := m.FactorVars(f), m.FactorFunction(f)
		vars = vars[:0]
		for _, v := range fv {
			vars = append(vars, int(v))
		}
		if slices.IsSorted(fv) {
			id, err := b.AddFunction(*fn) // identical functions stay shared
			if err != nil {
				return nil, err
			}
			if err := b.AddFactor(id, vars...); err != nil {
				return nil, err
			}
			continue
		}
		// perm[d] is the argument of fn that the d-th smallest variable fills.
		perm = perm[:0]
		for d := range fv {
			perm = append(perm, d)
		}
		slices.SortFunc(perm, func(a, b int) int { return int(fv[a]) - int(fv[b]) })
		for d, a := range perm {
			vars[d] = int(fv[a])
		}
		// Enumerate the sorted arguments y, last fastest; x is y in fn's order.
		x, y = slices.Grow(x[:0], len(fv))[:len(fv)], slices.Grow(y[:0], len(fv))[:len(fv)]
		clear(y)
		t = t[:0]
		for {
			for d, a := range perm {
				x[a] = y[d]
			}
			t = append(t, fn.Value(x))
			d := len(y) - 1
			for ; d >= 0; d-- {
				if y[d]++; y[d] < fn.Shape[perm[d]] {
					break
				}
				y[d] = 0
			}
			if d < 0 {
				break
			}
		}
		if err := b.AddTable(vars, t); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// constraintsOf returns the model with the forbidden states of m and no costs: every
// finite energy becomes 0.
func constraintsOf(m *model.Model) (*model.Model, error) {
	labels := make([]int, m.NumVars())
	for v := range labels {
		labels[v] = m.NumLabels(v)
	}
	b := model.NewBuilder(labels)
	if math.IsInf(m.Offset(), 1) {
		if err := b.AddConstant(math.Inf(1)); err != nil {
			return nil, err
		}
	}
	var vars []int
	var t []float64
	for f := range m.NumFactors() {
		fn := m.FactorFunction(f)
		if fn.Kind != model.Explicit {
			continue // parametric functions are finite
		}
		t = t[:0]
		hard := false
		for _, v := range fn.Table {
			if math.IsInf(v, 1) {
				hard = true
				t = append(t, v)
			} else {
				t = append(t, 0)
			}
		}
		if !hard {
			continue
		}
		vars = vars[:0]
		for _, v := range m.FactorVars(f) {
			vars = append(vars, int(v))
		}
		if err := b.AddTable(vars, t); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// writeModel writes m to dir in the UAI probability format, or in the LG format when
// its energies cannot be written as probabilities (see Solve), and returns the path.
func writeModel(dir string, m *model.Model) (string, error) {
	var buf bytes.Buffer
	name := "model.uai"
	if err := uai.Write(&buf, m, uai.UAI); err != nil {
		buf.Reset()
		if err := uai.Write(&buf, m, uai.LG); err != nil {
			return "", fmt.Errorf("oracle: toulbar2: %w", err)
		}
		// Write renders +Inf energies as the token -Inf, which toulbar2 cannot parse.
		buf = *bytes.NewBuffer(bytes.ReplaceAll(buf.Bytes(), []byte("-Inf"), []byte("-1e300")))
		name = "model.LG"
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		return "", fmt.Errorf("oracle: toulbar2: %w", err)
	}
	return p, nil
}
