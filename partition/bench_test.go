package partition_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/partition"
)

// BenchmarkSolveRaster is the windowed pipeline out of core on a .grid file: the
// colour segmentation of fruits.jpg tiled to 1024×1024 (K=4, λ=1, `partopt gen tiled`
// defaults), windows of 256+32, one worker; pixels/s is per core.
func BenchmarkSolveRaster(b *testing.B) {
	img, err := gen.LoadImage("../../shared/images/opencv-doc-debian/fruits.jpg")
	if err != nil {
		b.Skipf("../shared/images not present (%v)", err)
	}
	src, err := gen.Tiled(img, 1024, 1024, 4, 1, gen.TiledOptions{})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "t.grid")
	if err := gen.WriteFile(path, src, gen.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	r, err := grid.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	h := r.Header()
	raster := partition.Raster{Width: h.Width, Height: h.Height, Window: r.Window}
	b.ResetTimer()
	for range b.N {
		st := func() partition.Store { return partition.NewMemStore(h.Width, h.Height) }
		if _, err := partition.SolveRaster(context.Background(), raster, st(), st(), st(),
			partition.RasterOptions{Core: 256, Halo: 32, Workers: 1, MaxRounds: 3}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.Width*h.Height)*float64(b.N)/b.Elapsed().Seconds(), "pixels/s")
}
