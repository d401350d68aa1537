package trws_test

import (
	"context"
	"testing"

	"github.com/partopt/partopt/trws"
)

// scripted is an Engine whose bound after iteration it is bound(it), with one
// variable never consistent and every labeling of energy 0.
type scripted struct {
	it    int
	bound func(it int) float64
}

func (e *scripted) NumVars() int { return 1 }
func (e *scripted) Iterate(bool) float64 {
	e.it++
	return e.bound(e.it)
}
func (e *scripted) Check() (consistent, primal []int32) { return []int32{-1}, []int32{0} }
func (e *scripted) Energy([]int32) float64              { return 0 }
func (e *scripted) CertifyBest([]int) (float64, bool)   { return 0, false }

// TestReachStopsABoundThatCannotGetThere: a round whose bound must get to 0
// ends at the third check when, at the rate of its last two checks, twice its
// iterations left would not take it there, and runs on when they would.
func TestReachStopsABoundThatCannotGetThere(t *testing.T) {
	cases := []struct {
		name  string
		bound func(it int) float64
		reach bool
		stop  trws.Stop
		its   int
	}{
		{"creeping", func(it int) float64 { return -1 + 1e-4*float64(it) }, true, trws.StopStall, 15},
		{"rising fast enough", func(it int) float64 { return -1 + 0.03*float64(it) }, true, trws.StopGap, 35},
		{"creeping, no reach", func(it int) float64 { return -1 + 1e-4*float64(it) }, false, trws.StopIterations, 50},
		{"reached", func(it int) float64 { return 0 }, true, trws.StopGap, 5},
	}
	for _, c := range cases {
		opt := trws.Options{MaxIterations: 50, CheckEvery: 5, GapTolerance: 1e-9, HasTarget: true, Target: -1e-9, HasReach: c.reach}
		res, err := trws.Drive(context.Background(), &scripted{bound: c.bound}, opt)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stop != c.stop || res.Iterations != c.its {
			t.Errorf("%s: stopped (%v) after %d iterations, want (%v) after %d", c.name, res.Stop, res.Iterations, c.stop, c.its)
		}
	}
}
