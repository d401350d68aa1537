package partition

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/complete"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// completionRaster is a random w×h raster of k labels with random alive sets
// (each label kept with probability keep, so that some pixels are decided and
// the others fall into components of every shape), its planes and a labeling
// of alive labels.
func completionRaster(t *testing.T, seed uint64, w, h, k int, keep float64) (*model.Model, Raster, AliveLabels, [][]int, *MemStore) {
	t.Helper()
	rng := random.New(seed)
	m := random.PottsGrid(rng, w, h, k)
	r, err := RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	alive := NewMemAlive(w, h, k)
	masks := alive.newMasks(w * h)
	domains := make([][]int, w*h)
	labeling := NewMemStore(w, h)
	for i := range domains {
		for l := range k {
			if rng.Float64() < keep {
				domains[i] = append(domains[i], l)
			}
		}
		if len(domains[i]) == 0 {
			domains[i] = []int{rng.IntN(k)}
		}
		maskOf(masks, i, domains[i])
		labeling.Values[i] = int32(domains[i][rng.IntN(len(domains[i]))])
	}
	if err := alive.writeMasks(Rect{0, 0, w, h}, masks); err != nil {
		t.Fatal(err)
	}
	return m, r, alive, domains, labeling
}

func labelsOf(s *MemStore) []int {
	out := make([]int, len(s.Values))
	for i, v := range s.Values {
		out[i] = int(v)
	}
	return out
}

// TestRasterCompletionIsTheWholeModelsCompletion: completing a raster
// component by component, each on its window read from the raster, gives a
// labeling within the alive labels of the energy of the whole model's
// completion — the minimum over the alive labels — on three workers at once.
func TestRasterCompletionIsTheWholeModelsCompletion(t *testing.T) {
	for seed := range uint64(25) {
		m, r, alive, domains, labeling := completionRaster(t, seed, 9, 7, 3, 0.35)
		whole, err := complete.Complete(context.Background(), m, domains, nil, complete.DefaultBudget)
		if err != nil {
			t.Fatal(err)
		}
		res, err := CompleteRaster(context.Background(), r, alive, labeling, complete.DefaultBudget, RasterBounds{MaxUndecided: 1 << 20, MaxWindow: 1 << 20, Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		x := labelsOf(labeling)
		for i, l := range x {
			if !slices.Contains(domains[i], l) {
				t.Fatalf("seed %d: pixel %d takes label %d, alive %v", seed, i, l, domains[i])
			}
		}
		if !whole.Optimal || !res.Optimal || res.Skipped != "" || len(res.Components) != len(whole.Components) {
			t.Fatalf("seed %d: whole optimal %v (%d components), raster optimal %v (%d components) %q", seed, whole.Optimal, len(whole.Components), res.Optimal, len(res.Components), res.Skipped)
		}
		for i, s := range res.Components {
			if !slices.Equal(s.Vars, whole.Components[i].Vars) {
				t.Fatalf("seed %d: component %d is pixels %v, the whole model's %v", seed, i, s.Vars, whole.Components[i].Vars)
			}
		}
		if e := m.Energy(x); math.Abs(e-whole.Energy) > 1e-9*max(1, math.Abs(e)) {
			t.Fatalf("seed %d: energy %v, the whole model's completion %v", seed, e, whole.Energy)
		}
		// CheckRaster accepts the completion, and finds a component moved to
		// a worse alive label.
		checked, skipped, err := CheckRaster(context.Background(), r, alive, labeling, complete.DefaultBudget, RasterBounds{MaxUndecided: 1 << 20, MaxWindow: 1 << 20, Workers: 3})
		if err != nil || skipped != "" || len(checked) != len(res.Components) {
			t.Fatalf("seed %d: check: %v %q, %d of %d components", seed, err, skipped, len(checked), len(res.Components))
		}
		for _, c := range checked {
			if !c.Optimal {
				t.Fatalf("seed %d: the completed component %v fails its check: %+v", seed, c.Vars, c)
			}
		}
		for ci, s := range res.Components {
			p := s.Vars[0]
			for _, l := range domains[p] {
				y := slices.Clone(x)
				y[p] = l
				if !(m.Energy(y) > m.Energy(x)+1e-9) {
					continue
				}
				worse := &MemStore{Width: labeling.Width, Values: slices.Clone(labeling.Values)}
				worse.Values[p] = int32(l)
				checked, _, err := CheckRaster(context.Background(), r, alive, worse, complete.DefaultBudget, RasterBounds{MaxUndecided: 1 << 20, MaxWindow: 1 << 20, Workers: 3})
				if err != nil {
					t.Fatal(err)
				}
				if checked[ci].Optimal {
					t.Fatalf("seed %d: pixel %d at label %d (energy +%v) passes the check of its component", seed, p, l, m.Energy(y)-m.Energy(x))
				}
				break
			}
		}
	}
}

// TestRasterCompletionWithinItsBounds: past maxUndecided nothing is completed
// and the result says why; a component whose window is past maxWindow stays
// open, its labels untouched, and the result is not optimal.
func TestRasterCompletionWithinItsBounds(t *testing.T) {
	_, r, alive, _, labeling := completionRaster(t, 3, 12, 10, 3, 0.5)
	before := slices.Clone(labeling.Values)
	res, err := CompleteRaster(context.Background(), r, alive, labeling, complete.DefaultBudget, RasterBounds{MaxUndecided: 3, MaxWindow: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Optimal || !strings.Contains(res.Skipped, "more than 3 undecided pixels") || !slices.Equal(labeling.Values, before) {
		t.Fatalf("past maxUndecided: optimal %v, skipped %q, labeling changed %v", res.Optimal, res.Skipped, !slices.Equal(labeling.Values, before))
	}
	res, err = CompleteRaster(context.Background(), r, alive, labeling, complete.DefaultBudget, RasterBounds{MaxUndecided: 1 << 20, MaxWindow: 9})
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	for _, s := range res.Components {
		if s.Exact {
			continue
		}
		open++
		if !strings.Contains(s.Reason, "larger than 9") {
			t.Errorf("open component %v: reason %q", s.Vars, s.Reason)
		}
		for _, p := range s.Vars {
			if labeling.Values[p] != before[p] {
				t.Errorf("pixel %d of an open component changed", p)
			}
		}
	}
	if open == 0 || res.Optimal {
		t.Fatalf("no component past a 9-pixel window: %d open, optimal %v", open, res.Optimal)
	}
}
