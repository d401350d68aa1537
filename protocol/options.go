package protocol

import (
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// Persistency returns the options every worker solves the job's windows with: the
// boundary variant and persistency.Auto with the spec's options, so that all workers,
// and a local solve, compute the same. Options that are all zero are the defaults;
// MaxIterations 0 is each solver's own cap (1500 for TRW-S, 10000 for SRMP).
func (s JobSpec) Persistency() persistency.Options {
	v, err := persistency.ParseVariant(s.Variant)
	if err != nil {
		v = persistency.Invariant // Validate refuses other values
	}
	o := trws.DefaultOptions()
	o.MaxIterations = 0
	if t := s.TRWS; t.MaxIterations > 0 || t.CheckEvery > 0 {
		o.MaxIterations, o.GapTolerance, o.StallIterations, o.StallTolerance = t.MaxIterations, t.GapTolerance, t.StallIterations, t.StallTolerance
		if t.CheckEvery > 0 {
			o.CheckEvery = t.CheckEvery
		}
	}
	return persistency.Options{Variant: v, Solver: persistency.Auto{Options: o}}
}
