package grid_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
)

// A 4×3 Potts grid with 2 labels is streamed row by row, then one 2×2 window is read
// with the edges that leave it.
func Example() {
	dir, _ := os.MkdirTemp("", "grid")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "img.grid")

	w, err := grid.Create(path, grid.Header{Width: 4, Height: 3, Labels: 2, Kind: model.Potts, Mode: grid.Shared, W: 0.5,
		TileWidth: 2, TileHeight: 2})
	if err != nil {
		panic(err)
	}
	for y := range 3 {
		row := make([]float32, 4*2)
		row[1] = float32(y) // pixel (0,y): label 1 costs y
		row[7] = float32(math.Inf(1))
		if err := w.WriteRows(row, nil); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	r, err := grid.Open(path)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	win, err := r.ReadWindow(1, 1, 2, 2)
	if err != nil {
		panic(err)
	}
	fmt.Println(win.Model.NumVars(), "variables,", win.Model.NumFactors(), "factors,", len(win.Crossing), "crossing edges")
	fmt.Println("E(0,1,1,0) =", win.Model.Energy([]int{0, 1, 1, 0}))
	// Output:
	// 4 variables, 8 factors, 6 crossing edges
	// E(0,1,1,0) = 2
}
