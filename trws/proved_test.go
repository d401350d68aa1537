package trws

import (
	"context"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// TestAProvedDraftIsItsCheck: once a solve's CertifyBest has certified a
// labeling, Proved gives the draft of the same labeling and messages on the
// same model exactly the verdict Draft.Check computes, without polishing it
// again; and it refuses (ok false) every draft it did not certify: another
// labeling, one message bit changed, another model value however equal, the
// solver's problem changed since, a Local with a killed node.
func TestAProvedDraftIsItsCheck(t *testing.T) {
	proved := 0
	for name, m := range map[string]*model.Model{
		"K=8 ties":        tiedPottsGrid(41, 12, 10, 8),
		"K=4 ties":        tiedPottsGrid(42, 9, 7, 4),
		"potts K=4":       random.PottsGrid(random.New(43), 12, 9, 4),
		"parametric K=16": random.ParametricGrid(random.New(44), 10, 8, 16),
	} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Solve(context.Background(), Options{MaxIterations: 300})
		if err != nil {
			t.Fatal(err)
		}
		x := r.Labeling
		if _, ok := (engine{s}).CertifyBest(x); !ok {
			if _, ok := s.Proved(s.Draft(x), m); ok {
				t.Fatalf("%s: a draft proved that CertifyBest did not certify", name)
			}
			continue
		}
		proved++
		d := s.Draft(x)
		want, err := d.Check(m)
		if err != nil || !want.Certified {
			t.Fatalf("%s: CertifyBest certified a draft its check refuses: %+v %v", name, want, err)
		}
		if got, ok := s.Proved(d, m); !ok || got != want {
			t.Fatalf("%s: Proved %+v %v, the check %+v", name, got, ok, want)
		}
		loc, err := s.NewLocal(x)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := loc.Proved(loc.Draft(x), m); !ok || got != want {
			t.Fatalf("%s: the Local's Proved %+v %v, the check %+v", name, got, ok, want)
		}

		other := s.Draft(x)
		other.Labeling[0] = (other.Labeling[0] + 1) % int(m.LabelCounts()[0])
		flipped := s.Draft(x)
		flipped.Messages[len(flipped.Messages)/2] += 1e-3
		twin, err := m.Induced(allVars(m.NumVars()))
		if err != nil {
			t.Fatal(err)
		}
		for what, c := range map[string]struct {
			d *Draft
			m *model.Model
		}{"another labeling": {other, m}, "a changed message": {flipped, m}, "an equal model": {d, twin.Model}} {
			if _, ok := s.Proved(c.d, c.m); ok {
				t.Errorf("%s: %s proved", name, what)
			}
		}
		loc.Kill([]int{0})
		if _, ok := loc.Proved(loc.Draft(x[1:]), m); ok {
			t.Errorf("%s: a Local with a killed node proved", name)
		}
		again, _ := New(m)
		if _, err := again.Solve(context.Background(), Options{MaxIterations: 300}); err != nil {
			t.Fatal(err)
		}
		if _, ok := (engine{again}).CertifyBest(x); !ok {
			t.Fatalf("%s: the same solve again did not certify", name)
		}
		if err := again.AddUnary(0, make([]float64, m.LabelCounts()[0])); err != nil {
			t.Fatal(err)
		}
		if _, ok := again.Proved(again.Draft(x), m); ok {
			t.Errorf("%s: proved after the solver's problem changed", name)
		}
	}
	if proved < 2 {
		t.Fatalf("CertifyBest certified %d models, want the tied ones at least", proved)
	}
}

func allVars(n int) []int {
	vs := make([]int, n)
	for v := range vs {
		vs[v] = v
	}
	return vs
}

// TestThePolisherIsNewsGraph: what a draft's check builds to polish it
// (newPolisher) is New's graph exactly — unary terms, penalty, edges and their
// functions, adjacency — on grids of every uniform kind, mixed label counts and
// forbidden states.
func TestThePolisherIsNewsGraph(t *testing.T) {
	models := map[string]*model.Model{
		"potts":      random.PottsGrid(random.New(51), 13, 9, 4),
		"parametric": random.ParametricGrid(random.New(52), 11, 8, 6),
		"dense":      random.DensePairwise(random.New(53), 40, 5, 0.2),
		"ties":       tiedPottsGrid(54, 10, 7, 3),
	}
	for name, m := range models {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		p, err := newPolisher(m, 1)
		if err != nil {
			t.Fatal(err)
		}
		same := s.n == p.n && s.mk == p.mk && s.big == p.big && s.offset == p.offset &&
			slices.Equal(s.labels, p.labels) && slices.Equal(s.uoff, p.uoff) && slices.Equal(s.u64, p.u64) &&
			slices.Equal(s.tail, p.tail) && slices.Equal(s.head, p.head) && slices.Equal(s.swap, p.swap) && slices.Equal(s.fn, p.fn) &&
			slices.Equal(s.astart, p.astart) && slices.Equal(s.nbwd, p.nbwd) && slices.Equal(s.aedge, p.aedge)
		if !same {
			t.Fatalf("%s: the polisher's graph differs from New's", name)
		}
	}
}

// TestADraftChecksTheSameOnTheSolvesCores: CheckDraft polishes a draft its
// solver did not certify on the cores of its last Solve, in strips on a grid
// (newPolisher finds the grid), and gets Draft.Check's verdict and
// certificate bit for bit — on Potts, stereo and two-label grids.
func TestADraftChecksTheSameOnTheSolvesCores(t *testing.T) {
	for name, m := range map[string]*model.Model{
		"potts":  random.PottsGrid(random.New(61), 80, 70, 4),
		"binary": random.PottsGrid(random.New(62), 90, 60, 2),
		"glass":  random.FrustratedGrid(random.New(63), 75, 75),
	} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Solve(context.Background(), Options{MaxIterations: 8, Threads: 2, NoCertify: true})
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := newPolisher(m, 2); p.rowWidth == 0 || p.strips() != 2 {
			t.Fatalf("%s: the polisher runs in %d strips (row width %d)", name, p.strips(), p.rowWidth)
		}
		d := s.Draft(r.Labeling)
		got, err := s.CheckDraft(d, m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := d.Check(m)
		if err != nil || got != want {
			t.Errorf("%s: CheckDraft %+v, Check %+v (%v)", name, got, want, err)
		}
		c2, err2 := d.certificate(m, 2)
		c1, err1 := d.Certificate(m)
		if err1 != nil || err2 != nil || !c2.Equal(c1) {
			t.Errorf("%s: the polish in strips differs from the whole one (%v, %v)", name, err1, err2)
		}
	}
}
