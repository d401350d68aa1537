package protocol

import (
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// Persistency returns the options every worker solves the job's windows with: the
// boundary variant and TRW-S with the spec's options (trws.DefaultOptions where
// MaxIterations is 0), so that all workers, and a local solve, compute the same.
func (s JobSpec) Persistency() persistency.Options {
	v, err := persistency.ParseVariant(s.Variant)
	if err != nil {
		v = persistency.Invariant // Validate refuses other values
	}
	o := trws.DefaultOptions()
	if t := s.TRWS; t.MaxIterations > 0 {
		o.MaxIterations, o.GapTolerance, o.StallIterations, o.StallTolerance = t.MaxIterations, t.GapTolerance, t.StallIterations, t.StallTolerance
		if t.CheckEvery > 0 {
			o.CheckEvery = t.CheckEvery
		}
	}
	return persistency.Options{Variant: v, Solver: persistency.Auto{Options: o}}
}
