package persistency_test

import (
	"fmt"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// TestPruneAfterProvesAtLeastAlgorithm1: the default's order — label
// elimination, then Algorithm 1 on what it leaves undecided, its additions
// proven as one more stage — proves every label Algorithm 1 alone proves and
// every variable the elimination alone proves, on random models of several
// families (where the elimination alone misses labels of Algorithm 1's, the
// stage adds them); VerifyElimination accepts every outcome, and on models
// small enough to enumerate its labels are persistent.
func TestPruneAfterProvesAtLeastAlgorithm1(t *testing.T) {
	fewerGCs(t)
	families := []struct {
		name string
		gen  func(seed uint64) *model.Model
		tiny bool
	}{
		{"potts grid", func(s uint64) *model.Model { return random.PottsGrid(random.New(s), 8, 8, 4) }, false},
		{"dense 20×5", func(s uint64) *model.Model { return random.DensePairwise(random.New(s), 20, 5, 0.3) }, false},
		{"dense 30×6", func(s uint64) *model.Model { return random.DensePairwise(random.New(s+100), 30, 6, 0.2) }, false},
		{"dense 10×4", func(s uint64) *model.Model { return random.DensePairwise(random.New(s+200), 10, 4, 0.5) }, true},
		{"denoising", func(s uint64) *model.Model { return random.PottsDenoising(random.New(s), 12, 12, 5, 0.8, 4, 1.3) }, false},
		{"higher order", func(s uint64) *model.Model { return random.HigherOrder(random.New(s), 14, 3, 3, 20) }, false},
	}
	added := 0
	for _, f := range families {
		for s := range uint64(60) {
			m := f.gen(s)
			iri, err := persistency.Eliminate(testCtx, m, persistency.EliminateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, el := pruneAfterAgainstAlgorithm1(t, m, fmt.Sprintf("%s %d", f.name, s))
			if a, b := persistency.Count(el.Persistent), persistency.Count(iri.Persistent); a < b {
				t.Errorf("%s %d: %d persistent, the elimination alone %d", f.name, s, a, b)
			}
			added += el.Pruned
			if f.tiny {
				_, minE := minEnergy(t, m)
				if ok, e := isPersistent(t, m, el.Persistent, minE); !ok {
					t.Errorf("%s %d: min E with the persistent labels fixed is %v > %v", f.name, s, e, minE)
				}
			}
		}
	}
	if added == 0 {
		t.Error("Algorithm 1 added nothing after any elimination: the stage was not tested")
	}
	t.Logf("Algorithm 1 added %d variables after the elimination", added)
}

// TestPruneAfterProvesAtLeastAlgorithm1OnSharedModels: the same on the real
// models of ../shared's oracle table, the pairwise ones of at most 5,000
// variables (proteins, segmentations, object detection, grids, WCSP): every
// label Algorithm 1 alone proves, and VerifyElimination accepts the outcome.
func TestPruneAfterProvesAtLeastAlgorithm1OnSharedModels(t *testing.T) {
	checked := 0
	for _, row := range testutil.ReadOracle(t, sharedModels) {
		m := readShared(t, row.Path)
		if !isPairwise(m) || m.NumVars() > 5000 {
			continue
		}
		checked++
		pbp, el := pruneAfterAgainstAlgorithm1(t, m, row.Path)
		t.Logf("%s: Algorithm 1 %d, PruneAfter %d persistent (%d added after the elimination)", row.Path, persistency.Count(pbp.Persistent), persistency.Count(el.Persistent), el.Pruned)
	}
	if checked < 8 {
		t.Errorf("only %d shared models checked", checked)
	}
}

// pruneAfterAgainstAlgorithm1 runs Algorithm 1 and PruneAfter on m (what
// names it in errors), checks PruneAfter's outcome with VerifyElimination and
// that it proves every label Algorithm 1 proves, and returns both.
func pruneAfterAgainstAlgorithm1(t *testing.T, m *model.Model, what string) (*persistency.Result, *persistency.Elimination) {
	t.Helper()
	pbp, err := persistency.Run(testCtx, m, persistency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	el, err := persistency.PruneAfter(testCtx, m, persistency.EliminateOptions{}, persistency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := persistency.VerifyElimination(m, el); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	missed := 0
	for v, l := range pbp.Persistent {
		if l >= 0 && el.Persistent[v] != l {
			missed++
		}
	}
	if missed > 0 {
		t.Errorf("%s: %d of Algorithm 1's %d persistent labels not proven", what, missed, persistency.Count(pbp.Persistent))
	}
	return pbp, el
}
