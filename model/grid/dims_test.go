package grid_test

import (
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/random"
)

// TestDimsRecognisesRasterGrids: 4-connected W×H grids are recognised with their
// size, whatever their functions; other structures are not.
func TestDimsRecognisesRasterGrids(t *testing.T) {
	chain := func(n int, edges [][]int) *model.Model {
		labels := make([]int, n)
		for i := range labels {
			labels[i] = 2
		}
		b := model.NewBuilder(labels)
		for _, e := range edges {
			t3 := make([]float64, 1<<len(e))
			t3[1] = 1
			if err := b.AddTable(e, t3); err != nil {
				t.Fatal(err)
			}
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name string
		m    *model.Model
		w, h int
		ok   bool
	}{
		{"potts 7x5", random.PottsGrid(random.New(1), 7, 5, 3), 7, 5, true},
		{"frustrated 4x9", random.FrustratedGrid(random.New(2), 4, 9), 4, 9, true},
		{"denoise 16x3", random.PottsDenoising(random.New(3), 16, 3, 2, 1, 4, 1), 16, 3, true},
		{"one row", chain(4, [][]int{{0, 1}, {1, 2}, {2, 3}}), 4, 1, true},
		{"columns only", chain(9, [][]int{{0, 3}, {3, 6}, {1, 4}, {4, 7}, {2, 5}, {5, 8}}), 3, 3, true},
		{"wrapping row edge", chain(6, [][]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}}), 0, 0, false},
		{"two widths", chain(9, [][]int{{0, 3}, {1, 5}}), 0, 0, false},
		{"width not dividing", chain(7, [][]int{{0, 3}}), 0, 0, false},
		{"no edges", chain(3, nil), 0, 0, false},
		{"higher order", chain(4, [][]int{{0, 1}, {1, 2, 3}}), 0, 0, false},
	}
	for _, c := range cases {
		w, h, ok := grid.Dims(c.m)
		if ok != c.ok || (ok && (w != c.w || h != c.h)) {
			t.Errorf("%s: got %d×%d %v, want %d×%d %v", c.name, w, h, ok, c.w, c.h, c.ok)
		}
	}
}
