package trws_test

import (
	"math"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/trws"
)

// TestDraftPolishesIntoTheCertificate: a draft checked on the model its
// solver was built on is the solver's certificate number for number — the
// same polish from the same float32 messages — on every kind of pairwise
// term, +Inf entries included, converged or not: storing the draft loses no
// proof.
func TestDraftPolishesIntoTheCertificate(t *testing.T) {
	models := map[string]*model.Model{
		"potts K=4":       random.PottsGrid(random.New(71), 14, 11, 4),
		"parametric K=16": random.ParametricGrid(random.New(72), 12, 10, 16),
		"denoising K=8":   random.PottsDenoising(random.New(73), 16, 12, 8, 0.8, 4, 1.5),
	}
	for seed := uint64(0); seed < 20; seed++ {
		rng := random.New(600 + seed)
		n := 5 + rng.IntN(6)
		models["mixed "+string(rune('a'+seed))] = mixedPairwise(rng, n, 4, randomEdges(rng, n, 0.5), seed%2 == 0)
	}
	for name, m := range models {
		for _, its := range []int{3, 200} {
			s, r := solve(t, m, trws.Options{MaxIterations: its, GapTolerance: 0})
			want := s.Certificate(r.Labeling)
			d := s.Draft(r.Labeling)
			got, err := d.Certificate(m)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(got.Messages) != len(want.Messages) || len(d.Messages) != len(want.Messages) {
				t.Fatalf("%s: %d polished entries from a draft of %d, want %d", name, len(got.Messages), len(d.Messages), len(want.Messages))
			}
			for i := range want.Messages {
				if math.Float64bits(got.Messages[i]) != math.Float64bits(want.Messages[i]) {
					t.Fatalf("%s after %d iterations: entry %d polished from the draft %v, the solver's %v", name, its, i, got.Messages[i], want.Messages[i])
				}
			}
			a, errA := want.Check(m)
			b, errB := d.Check(m)
			if errA != nil || errB != nil || a != b {
				t.Fatalf("%s: certificate %+v %v, draft %+v %v", name, a, errA, b, errB)
			}
		}
	}
}

// TestDraftBoundIsValidForAnyMessages: whatever a draft's messages — random,
// huge, ±Inf, NaN — its check never bounds above the optimum, never certifies
// a labeling that is not optimal and never panics: a forged draft proves
// nothing.
func TestDraftBoundIsValidForAnyMessages(t *testing.T) {
	checked := 0
	special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32}
	for seed := uint64(0); seed < 200; seed++ {
		rng := random.New(700 + seed)
		n := 5 + rng.IntN(3)
		m := mixedPairwise(rng, n, 3, randomEdges(rng, n, 0.6), seed%2 == 0)
		opt := optimum(t, m)
		s, r := solve(t, m, trws.Options{MaxIterations: 1 + rng.IntN(3), GapTolerance: 0})
		d := s.Draft(r.Labeling)
		for i := range d.Messages {
			if seed%2 == 0 && rng.IntN(8) == 0 {
				d.Messages[i] = special[rng.IntN(len(special))]
			} else {
				d.Messages[i] = float32(rng.NormFloat64() * 10)
			}
		}
		v, err := d.Check(m)
		if err != nil {
			if seed%2 == 1 {
				t.Fatalf("seed %d: a draft of finite messages refused: %v", seed, err)
			}
			continue // refused: a non-finite polished message
		}
		checked++
		if v.Bound > opt+1e-9*math.Max(1, math.Abs(opt)) {
			t.Fatalf("seed %d: a random draft's bound %v exceeds the optimum %v", seed, v.Bound, opt)
		}
		if v.Certified && m.Energy(d.Labeling) > opt+1e-9*math.Max(1, math.Abs(opt)) {
			t.Fatalf("seed %d: a labeling of energy %v certified, the optimum is %v", seed, m.Energy(d.Labeling), opt)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d of 200 drafts gave a bound: the test checks too little", checked)
	}
}

// TestDraftRejectsMismatches: a draft of the wrong length, or with a labeling
// that is not one of the model, is an error, not a verdict.
func TestDraftRejectsMismatches(t *testing.T) {
	m := random.PottsGrid(random.New(74), 6, 5, 3)
	s, r := solve(t, m, trws.DefaultOptions())
	d := s.Draft(r.Labeling)
	for name, bad := range map[string]*trws.Draft{
		"a message short":  {Labeling: d.Labeling, Messages: d.Messages[:len(d.Messages)-1]},
		"a message extra":  {Labeling: d.Labeling, Messages: append(append([]float32(nil), d.Messages...), 0)},
		"no messages":      {Labeling: d.Labeling},
		"a label too many": {Labeling: append(append([]int(nil), d.Labeling...), 0), Messages: d.Messages},
		"a label too high": {Labeling: append([]int{3}, d.Labeling[1:]...), Messages: d.Messages},
	} {
		if v, err := bad.Check(m); err == nil {
			t.Errorf("%s: checked as %+v, want an error", name, v)
		}
	}
	if v, err := d.Check(m); err != nil || !v.Certified && r.Agreement {
		t.Errorf("the draft itself: %+v %v", v, err)
	}
}
