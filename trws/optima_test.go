package trws_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/trws"
)

var sharedModels = testutil.SharedPath("models")

// TestBoundsOnBenchmarkModelsNeverExceedTheOptimum: on every pairwise instance of
// ../shared/models (evidence applied), the exact bound is at most the oracle's energy
// (proven optimum or best known), and a full agreement is that optimum, certified.
func TestBoundsOnBenchmarkModelsNeverExceedTheOptimum(t *testing.T) {
	testutil.SkipWithoutShared(t, sharedModels)
	checked := 0
	for _, row := range testutil.ReadOracle(t, sharedModels) {
		best, proven := row.Energy, row.Proven
		path := filepath.Join(sharedModels, row.Path)
		m, err := uai.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := uai.EvidencePathFor(path); ok {
			e, err := uai.ReadEvidenceFile(ev)
			if err != nil {
				t.Fatal(err)
			}
			fixed, err := e.Fixed(m.LabelCounts())
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.Condition(fixed)
			if err != nil {
				t.Fatal(err)
			}
			m = c.Model
		}
		s, err := trws.New(m)
		if err != nil {
			continue // higher order: not this solver's
		}
		t.Run(row.Path, func(t *testing.T) {
			o := trws.DefaultOptions()
			o.MaxIterations = 300
			r, err := s.Solve(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			lb, err := s.Bound()
			if err != nil {
				t.Fatal(err)
			}
			// The oracle prints three decimals.
			if lb > best+5e-4 {
				t.Errorf("bound %.6f exceeds the oracle's %v", lb, best)
			}
			if r.Energy < best-5e-4 && proven {
				t.Errorf("energy %.6f below the proven optimum %v", r.Energy, best)
			}
			if r.Agreement {
				if e := m.Energy(r.Consistent); math.Abs(e-best) > 5e-4 {
					t.Errorf("full agreement at energy %.6f, oracle %v", e, best)
				}
				mm, err := s.Model()
				if err != nil {
					t.Fatal(err)
				}
				if v, err := s.Certificate(r.Consistent).Check(mm); err != nil || !v.Certified {
					t.Errorf("certificate: %+v %v", v, err)
				}
			}
			t.Logf("bound %.4f energy %.4f oracle %v agreeing %d/%d stop %v", lb, r.Energy, row.Energy, r.Agreeing, m.NumVars(), r.Stop)
		})
		checked++
	}
	if checked < 15 {
		t.Errorf("only %d pairwise benchmark models checked", checked)
	}
}

// TestBoundsNeverExceedToulbar2Optima: on random models too large for brute force
// (Potts grids and dense mixed models with forbidden states), the exact bound is at
// most toulbar2's proven optimum.
func TestBoundsNeverExceedToulbar2Optima(t *testing.T) {
	path, err := oracle.FindToulbar2()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("toulbar2 not installed: %v", err)
	}
	tb := oracle.Toulbar2{Path: path}
	for seed := uint64(0); seed < 40; seed++ {
		rng := random.New(3000 + seed)
		var m *model.Model
		if seed%2 == 0 {
			m = random.PottsGrid(rng, 6, 6, 4)
		} else {
			m = mixedPairwise(rng, 16, 4, randomEdges(rng, 16, 0.25), true)
		}
		opt, err := tb.Solve(context.Background(), m, uai.Evidence{})
		if err != nil {
			t.Fatal(err)
		}
		if !opt.Optimal {
			t.Fatalf("seed %d: toulbar2 found no proven optimum", seed)
		}
		s, r := solve(t, m, trws.DefaultOptions())
		lb, err := s.Bound()
		if err != nil {
			t.Fatal(err)
		}
		tol := opt.Tolerance + 1e-9*math.Max(1, math.Abs(opt.Energy))
		if lb > opt.Energy+tol {
			t.Errorf("seed %d: bound %v exceeds toulbar2's optimum %v", seed, lb, opt.Energy)
		}
		if r.Agreement && math.Abs(m.Energy(r.Consistent)-opt.Energy) > tol {
			t.Errorf("seed %d: full agreement at %v, toulbar2 optimum %v", seed, m.Energy(r.Consistent), opt.Energy)
		}
	}
}
