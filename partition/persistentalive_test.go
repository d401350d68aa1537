package partition_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/partopt/partopt/complete"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
)

// TestPersistentAliveIsInitAlive: the read-only planes a persistency map
// proves hold, plane by plane, the masks InitAlive writes from that map —
// for label counts within one plane, at a plane's edge and over three planes.
func TestPersistentAliveIsInitAlive(t *testing.T) {
	const w, h = 13, 7
	for _, k := range []int{2, 5, 32, 33, 70} {
		rng := random.New(uint64(k))
		pers := partition.NewMemStore(w, h)
		for i := range pers.Values {
			if rng.Float64() < 0.6 {
				pers.Values[i] = int32(rng.IntN(k) + 1)
			}
		}
		want := partition.NewMemAlive(w, h, k)
		if _, err := partition.InitAlive(want, w, h, pers); err != nil {
			t.Fatal(err)
		}
		got := partition.PersistentAlive(pers, k)
		if len(got.Planes) != len(want.Planes) || got.Labels != k {
			t.Fatalf("k %d: %d planes of %d labels, want %d", k, len(got.Planes), got.Labels, len(want.Planes))
		}
		for p := range want.Planes {
			g, wv := make([]int32, 6*4), make([]int32, 6*4)
			if err := got.Planes[p].ReadRect(5, 2, 6, 4, g); err != nil {
				t.Fatal(err)
			}
			if err := want.Planes[p].ReadRect(5, 2, 6, 4, wv); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g, wv) {
				t.Fatalf("k %d plane %d: masks %x, InitAlive's %x", k, p, g, wv)
			}
		}
		if err := got.Planes[0].WriteRect(0, 0, 1, 1, []int32{1}); err == nil {
			t.Errorf("k %d: a write to the planes of a persistency map succeeded", k)
		}
		pers.Values[3] = int32(k + 1) // label k of k: out of range
		if err := got.Planes[len(got.Planes)-1].ReadRect(0, 0, w, 1, make([]int32, w)); err == nil {
			t.Errorf("k %d: a persistent label %d of %d read without an error", k, k, k)
		}
	}
}

// TestWindowedPBPCompletedIsOptimal: what pbp's windows leave undecided,
// every label alive (PersistentAlive), completed component by component on
// the raster, gives a minimum of the whole model: persistent labels agree
// with an optimum, so the optimum over the rest is the model's.
func TestWindowedPBPCompletedIsOptimal(t *testing.T) {
	for seed := range uint64(6) {
		const w, h, k = 12, 9, 3
		m := random.PottsDenoising(random.New(seed), w, h, k, 0.9, 3, 1.4)
		r := rasterOf(t, m, w, h)
		pers, lab := partition.NewMemStore(w, h), partition.NewMemStore(w, h)
		res, err := partition.SolveRaster(context.Background(), r, pers, lab, partition.NewMemStore(w, h),
			partition.RasterOptions{Core: 5, Halo: 2, MaxRounds: 2, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res.Persistent == w*h {
			t.Logf("seed %d: pbp proves every pixel", seed)
		}
		done, err := partition.CompleteRaster(context.Background(), r, partition.PersistentAlive(pers, k), lab, complete.DefaultBudget, partition.RasterBounds{MaxUndecided: 1 << 20, MaxWindow: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		best, err := complete.Complete(context.Background(), m, nil, nil, complete.DefaultBudget)
		if err != nil || !best.Optimal {
			t.Fatalf("seed %d: the whole model's minimum: %v %+v", seed, err, best)
		}
		x := make([]int, w*h)
		for i, l := range lab.Values {
			x[i] = int(l)
			if p := pers.Values[i]; p != 0 && int(p-1) != x[i] {
				t.Fatalf("seed %d: pixel %d persistent with %d, completed to %d", seed, i, p-1, x[i])
			}
		}
		if e := m.Energy(x); !done.Optimal || math.Abs(e-best.Energy) > 1e-9*math.Max(1, math.Abs(e)) {
			t.Fatalf("seed %d: completed optimal %v energy %v, the model's minimum %v (%d persistent)", seed, done.Optimal, e, best.Energy, res.Persistent)
		}
	}
}
