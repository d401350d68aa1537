package persistency_test

import (
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// TestSettlingNearTheChangesProvesWhatWholeSolvesProve: Algorithm 1 with its
// pruning iterations settled near what they changed (the default) proves
// the labels that re-solving every whole sub-problem proves (FullSolves, the
// paper's way) — never fewer, and the same ones but where the relaxation has
// several optima — its result verifies from the model alone, and most
// iterations do settle — on the tiny soundness families and on grids and
// graphs large enough for the changes to stay local.
func TestSettlingNearTheChangesProvesWhatWholeSolvesProve(t *testing.T) {
	type source struct {
		name string
		gen  func(seed uint64) *model.Model
	}
	var sources []source
	for _, fam := range soundnessFamilies {
		if fam.pairwise {
			sources = append(sources, source{fam.name, func(seed uint64) *model.Model { return fam.gen(random.New(seed)) }})
		}
	}
	sources = append(sources,
		source{"Denoising40x40", func(seed uint64) *model.Model {
			return random.PottsDenoising(random.New(seed), 40, 40, 4, 1.2, 3, 1)
		}},
		source{"ParametricGrid30x30", func(seed uint64) *model.Model { return random.ParametricGrid(random.New(seed), 30, 30, 5) }},
		source{"PottsGrid30x30", func(seed uint64) *model.Model { return random.PottsGrid(random.New(seed), 30, 30, 3) }},
		source{"SparsePairwise60", func(seed uint64) *model.Model { return random.DensePairwise(random.New(seed), 60, 4, 0.05) }},
	)
	seeds := uint64(40)
	if testing.Short() {
		seeds = 10
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			settled, prunings, proven, differ, runs := 0, 0, 0, 0, 0
			for seed := range seeds {
				m := src.gen(7000 + seed)
				for _, v := range variants {
					got, err := persistency.Run(testCtx, m, persistency.Options{Variant: v})
					must(t, err)
					want, err := persistency.Run(testCtx, m, persistency.Options{Variant: v, FullSolves: true})
					must(t, err)
					if g, w := persistency.Count(got.Persistent), persistency.Count(want.Persistent); g < w {
						t.Fatalf("seed %d %v: settled %d persistent, whole solves %d", seed, v, g, w)
					}
					if !slices.Equal(got.Persistent, want.Persistent) {
						differ++ // where the relaxation has several optima
					}
					if _, err := persistency.Verify(m, got); err != nil {
						t.Fatalf("seed %d %v: %v", seed, v, err)
					}
					if want.Settled != 0 {
						t.Fatalf("seed %d %v: FullSolves settled %d iterations", seed, v, want.Settled)
					}
					runs++
					settled, prunings, proven = settled+got.Settled, prunings+got.PruningIterations, proven+persistency.Count(got.Persistent)
				}
			}
			t.Logf("%d of %d pruning iterations settled, %d labels proven, %d of %d runs proved other labels", settled, prunings, proven, differ, runs)
			if differ > runs/20 {
				t.Errorf("%d of %d runs proved other labels than whole solves", differ, runs)
			}
			if settled < prunings/2 || proven == 0 {
				t.Errorf("%d of %d pruning iterations settled, %d labels proven: the comparison shows little", settled, prunings, proven)
			}
		})
	}
}
