package partition_test

import (
	"slices"
	"testing"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// TestOneWindowOnIdleCoresProvesTheSame: a raster held by one window, solved
// by two workers (the idle one's core goes to the window's TRW-S passes, in
// column strips) proves the same labels with the same labeling as by one, and
// so does label elimination; the strips give the same messages bit for bit.
func TestOneWindowOnIdleCoresProvesTheSame(t *testing.T) {
	m := random.FrustratedGrid(random.New(5), 130, 130) // two labels, 16,900 pixels: the strips' kind and size
	r := rasterOf(t, m, 130, 130)
	popt := persistency.Options{Solver: persistency.Auto{Options: trws.Options{MaxIterations: 200, CheckEvery: 5}}}
	var pers, lab [][]int
	for _, workers := range []int{1, 2} {
		p, l, res := solveRaster(t, r, partition.RasterOptions{Core: 256, Halo: 8, MaxRounds: 1, Workers: workers, Persistency: popt}, nil)
		if res.Windows != 1 {
			t.Fatalf("%d windows, want one", res.Windows)
		}
		pers, lab = append(pers, p), append(lab, l)
	}
	if !slices.Equal(pers[0], pers[1]) || !slices.Equal(lab[0], lab[1]) {
		t.Errorf("one worker: %d persistent; two: %d", persistency.Count(pers[0]), persistency.Count(pers[1]))
	}
	t.Logf("%d of %d pixels persistent", persistency.Count(pers[0]), len(pers[0]))
}
