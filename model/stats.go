package model

import "math"

// Stats summarises a model for people: sizes, orders, function kinds and memory.
type Stats struct {
	Vars, Factors, Functions int
	MinLabels, MaxLabels     int
	// OneLabel counts variables with a single label.
	OneLabel int
	// FactorsByOrder[k] is the number of factors of order k.
	FactorsByOrder map[int]int
	// FactorsByKind counts factors per function kind.
	FactorsByKind map[Kind]int
	// ForbiddenEntries counts +Inf entries over the distinct explicit tables.
	ForbiddenEntries int
	// LogLabelSpace is Σ_v ln|X_v|, the denominator of the paper's persistency score.
	LogLabelSpace float64
	Offset        float64
	MemoryBytes   int64
}

// Stats computes the summary of m in one pass over variables, factors and functions.
func (m *Model) Stats() Stats {
	s := Stats{
		Vars: m.NumVars(), Factors: m.NumFactors(), Functions: m.NumFunctions(),
		FactorsByOrder: map[int]int{}, FactorsByKind: map[Kind]int{},
		Offset: m.offset, MemoryBytes: m.MemoryBytes(),
	}
	for i, k := range m.labels {
		if i == 0 || int(k) < s.MinLabels {
			s.MinLabels = int(k)
		}
		s.MaxLabels = max(s.MaxLabels, int(k))
		if k == 1 {
			s.OneLabel++
		}
		s.LogLabelSpace += math.Log(float64(k))
	}
	for f := range m.facFunc {
		s.FactorsByOrder[m.facStart[f+1]-m.facStart[f]]++
		s.FactorsByKind[m.FactorFunction(f).Kind]++
	}
	for i := 0; i < m.funcs.len(); i++ {
		for _, v := range m.funcs.at(i).Table {
			if math.IsInf(v, 1) {
				s.ForbiddenEntries++
			}
		}
	}
	return s
}
