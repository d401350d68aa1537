package grid_test

import (
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
)

// BenchmarkWrite streams a 1024×1024 grid, K = 4, per-edge weights; MB/s of file.
func BenchmarkWrite(b *testing.B) {
	const side, k = 1024, 4
	hd := grid.Header{Width: side, Height: side, Labels: k, Kind: model.Potts, Mode: grid.PerEdge, TileWidth: 256, TileHeight: 256}
	unary := make([]float32, 64*side*k)
	weights := make([]float32, 64*side*2)
	for i := range unary {
		unary[i] = float32(i%11) * 0.1
	}
	b.SetBytes(side * side * (k + 2) * 4)
	for b.Loop() {
		w, err := grid.NewWriter(&seeker{}, hd)
		if err != nil {
			b.Fatal(err)
		}
		for y := 0; y < side; y += 64 {
			if err := w.WriteRows(unary, weights); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWindow reads 256×256 windows (with crossing edges) of a 2048×2048 grid,
// K = 4, per-edge weights, 128×128 tiles, at positions not aligned to tiles; MB/s of
// window data (unaries and weights of the window's pixels).
func BenchmarkWindow(b *testing.B) {
	const side, k, win = 2048, 4, 256
	hd := grid.Header{Width: side, Height: side, Labels: k, Connectivity: 4, Kind: model.TruncatedLinear, T: 3, Mode: grid.PerEdge}
	path := filepath.Join(b.TempDir(), "b.grid")
	genGrid(hd, 1, 0.01).write(b, path)
	r, err := grid.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(win * win * (k + 2) * 4)
	i := 0
	for b.Loop() {
		x, y := (i*389)%(side-win), (i*701)%(side-win)
		if _, err := r.ReadWindow(x, y, win, win); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
