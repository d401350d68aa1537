package protocol_test

import (
	"testing"

	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/trws"
)

// TestJobSpecPersistencyOptions: a spec without solver options gets the defaults, with
// each solver's own cap (MaxIterations 0); given options and the variant are passed
// through, a zero cap too.
func TestJobSpecPersistencyOptions(t *testing.T) {
	def := protocol.JobSpec{Variant: protocol.VariantInvariant}.Persistency()
	d, want := def.Solver.(persistency.Auto).Options, trws.DefaultOptions()
	if def.Variant != persistency.Invariant || d.MaxIterations != 0 || d.GapTolerance != want.GapTolerance ||
		d.StallIterations != want.StallIterations || d.CheckEvery != want.CheckEvery {
		t.Errorf("defaults: %+v", def)
	}
	o := protocol.JobSpec{Variant: protocol.VariantOriginal, TRWS: protocol.TRWSOptions{MaxIterations: 7, GapTolerance: 0.5, StallIterations: 3, StallTolerance: 0.1, CheckEvery: 2}}.Persistency()
	got := o.Solver.(persistency.Auto).Options
	if o.Variant != persistency.Original || got.MaxIterations != 7 || got.GapTolerance != 0.5 || got.StallIterations != 3 || got.StallTolerance != 0.1 || got.CheckEvery != 2 {
		t.Errorf("given: %v %+v", o.Variant, got)
	}
	z := protocol.JobSpec{TRWS: protocol.TRWSOptions{GapTolerance: 0.25, StallIterations: 9, CheckEvery: 3}}.Persistency()
	if got := z.Solver.(persistency.Auto).Options; got.MaxIterations != 0 || got.GapTolerance != 0.25 || got.StallIterations != 9 || got.CheckEvery != 3 {
		t.Errorf("zero cap: %+v", got)
	}
}
