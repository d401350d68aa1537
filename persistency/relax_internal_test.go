package persistency

import (
	"fmt"
	"testing"

	"github.com/partopt/partopt/trws"
)

// TestStalledFirstKeepsTheCallersCapAndOptions: the loose first solve applies
// only where the caller left the cap to the solver, and changes nothing but
// TRW-S's cap and stall rule (Algorithm 1 still certifies and settles; SRMP
// keeps its options, as in the elimination's first solve).
func TestStalledFirstKeepsTheCallersCapAndOptions(t *testing.T) {
	def := trws.DefaultOptions()
	uncapped := def
	uncapped.MaxIterations = 0
	capped := def
	capped.MaxIterations = 300
	for _, c := range []struct {
		name string
		in   Relaxation
		set  bool
	}{
		{"auto, no cap", Auto{uncapped}, true},
		{"auto, zero options", Auto{}, true},
		{"trws, no cap", TRWS{uncapped}, true},
		{"auto, the caller's cap", Auto{capped}, false},
		{"trws, the caller's cap", TRWS{capped}, false},
		{"srmp", SRMP{}, false},
	} {
		r, set := stalledFirst(c.in, 500, 10, 1e-5)
		if set != c.set {
			t.Errorf("%s: set %v, want %v", c.name, set, c.set)
			continue
		}
		if !set {
			if fmt.Sprintf("%#v", r) != fmt.Sprintf("%#v", c.in) {
				t.Errorf("%s: changed to %+v", c.name, r)
			}
			continue
		}
		var o trws.Options
		switch r := r.(type) {
		case cappedAuto: // higher-order models keep SRMP as the caller gave it
			o = r.t.Options
			if a := c.in.(Auto); fmt.Sprintf("%#v", r.s) != fmt.Sprintf("%#v", SRMP(a)) {
				t.Errorf("%s: SRMP changed to %+v", c.name, r.s)
			}
		case TRWS:
			o = r.Options
		default:
			t.Fatalf("%s: %T", c.name, r)
		}
		want := def
		want.MaxIterations, want.StallIterations, want.StallTolerance = 500, 10, 1e-5
		if o.MaxIterations != want.MaxIterations || o.StallIterations != want.StallIterations || o.StallTolerance != want.StallTolerance ||
			o.GapTolerance != want.GapTolerance || o.CheckEvery != want.CheckEvery || o.SettleBelow != want.SettleBelow || o.NoCertify || o.HasTarget {
			t.Errorf("%s: %+v", c.name, o)
		}
	}
}

// TestRoundsStallLoosely: a round of label elimination (capped) ends where its
// bound stalls by the first solve's loose rule, not TRW-S's default 100
// iterations, whatever stall rule the caller gave; its cap and the search's
// own certification stay.
func TestRoundsStallLoosely(t *testing.T) {
	own := trws.DefaultOptions()
	own.StallIterations, own.StallTolerance = 300, 1e-9
	for _, in := range []Relaxation{Auto{}, TRWS{}, TRWS{own}, Auto{own}} {
		var o trws.Options
		switch r := capped(in, 50).(type) {
		case TRWS:
			o = r.Options
		case cappedAuto:
			o = r.t.Options
			if r.s.Options.StallIterations != 10 {
				t.Errorf("%#v: SRMP's rounds stall after %d iterations", in, r.s.Options.StallIterations)
			}
		default:
			t.Fatalf("%#v: %T", in, r)
		}
		if o.MaxIterations != 50 || o.StallIterations != 10 || o.StallTolerance != 1e-5 || !o.NoCertify || o.SettleBelow != 0 {
			t.Errorf("%#v: rounds with %+v", in, o)
		}
	}
}
