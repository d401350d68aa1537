package srmp

import (
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// Certificate is a dual solution of the LP relaxation of a model of any order with a
// labeling, in a form that Check verifies from the model alone. Messages holds, for
// every factor of order ≥ 2 in model factor order, one message per argument (into
// the argument's variable, K values each, in argument order).
type Certificate struct {
	Labeling []int
	Messages []float64
}

// Certificate returns a certificate for the labeling x of the solver's model from the
// current messages (valid at any time; tight after Solve has converged).
func (s *Solver) Certificate(x []int) *Certificate {
	return &Certificate{Labeling: append([]int(nil), x...), Messages: append([]float64(nil), s.msg...)}
}

// Bound returns the lower bound of the current messages on the minimum energy of the
// solver's model, as Check computes it (exact up to float64 rounding).
func (s *Solver) Bound() (float64, error) {
	x := make([]int, s.n)
	v, err := s.Certificate(x).Check(s.m)
	return v.Bound, err
}

// Check recomputes, in float64 and from m alone, the energy of the labeling and the
// bound of the certificate's reparametrisation,
//
//	offset + Σ_f min_{x_f} [θ_f(x_f) − Σ_{v∈f} m_{f→v}(x_v)] + Σ_v min_l [θ_v(l) + Σ_{f∋v} m_{f→v}(l)],
//
// with θ_v the sum of v's unary factors and +Inf entries as they are. The bound is
// valid for every message value (it is the dual of the local polytope relaxation),
// so a wrong solver can only fail the check. The labeling is certified optimal when
// its energy is finite and Energy − Bound ≤ trws.GapTolerance·max(1, |Energy|). Check
// costs O(Σ_f |table_f|).
func (c *Certificate) Check(m *model.Model) (trws.Verdict, error) {
	n := m.NumVars()
	if err := m.CheckLabeling(c.Labeling); err != nil {
		return trws.Verdict{}, fmt.Errorf("srmp: certificate: %w", err)
	}
	off := make([]int, n+1)
	maxOrder, maxK := 1, 1
	for v := 0; v < n; v++ {
		off[v+1] = off[v] + m.NumLabels(v)
		maxK = max(maxK, m.NumLabels(v))
	}
	D := make([]float64, off[n])
	pos := 0
	for f := 0; f < m.NumFactors(); f++ {
		vars, fn := m.FactorVars(f), m.FactorFunction(f)
		if len(vars) == 1 {
			for l, t := range fn.Table {
				D[off[vars[0]]+l] += t
			}
			continue
		}
		if size := enumSize(fn.Shape); size > model.MaxTableSize {
			return trws.Verdict{}, fmt.Errorf("%w: factor %d has %v entries", ErrTooLarge, f, size)
		}
		maxOrder = max(maxOrder, len(vars))
		for _, v := range vars {
			k := m.NumLabels(int(v))
			if pos+k > len(c.Messages) {
				return trws.Verdict{}, fmt.Errorf("srmp: certificate: too few messages (%d) for the model's factors", len(c.Messages))
			}
			for l, x := range c.Messages[pos : pos+k] {
				if math.IsInf(x, 0) || math.IsNaN(x) {
					return trws.Verdict{}, fmt.Errorf("srmp: certificate: factor %d has a non-finite message", f)
				}
				D[off[v]+l] += x
			}
			pos += k
		}
	}
	if pos != len(c.Messages) {
		return trws.Verdict{}, fmt.Errorf("srmp: certificate has %d message entries, the model's factors need %d", len(c.Messages), pos)
	}
	bound := m.Offset()
	sc := newScanner(maxOrder, maxK)
	sub := make([][]float64, maxOrder)
	out := make([]float64, 1)
	pos = 0
	for f := 0; f < m.NumFactors(); f++ {
		vars, fn := m.FactorVars(f), m.FactorFunction(f)
		if len(vars) == 1 {
			continue
		}
		for p, v := range vars {
			k := m.NumLabels(int(v))
			sub[p] = c.Messages[pos : pos+k]
			pos += k
		}
		sc.scan(fn, math.Inf(1), sub[:len(vars)], nil, -1, out)
		bound += out[0]
	}
	for v := 0; v < n; v++ {
		bound += minOf(D[off[v]:off[v+1]])
	}
	e := m.Energy(c.Labeling)
	verdict := trws.Verdict{Energy: e, Bound: bound, Gap: e - bound}
	verdict.Certified = !math.IsInf(e, 1) && verdict.Gap <= trws.GapTolerance*math.Max(1, math.Abs(e))
	return verdict, nil
}
