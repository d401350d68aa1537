package partition_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
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

// BenchmarkRasterWindowCheck: what a coordinator spends re-checking a worker's
// raster window (CheckRasterWindow: the window problem rebuilt, the proof's
// certificate checked) against what the worker spent solving it (SolveWindow),
// on a 160×160 window (128+16) of an 8-label Potts model.
func BenchmarkRasterWindowCheck(b *testing.B) {
	const w, h = 160, 160
	m := random.PottsDenoising(random.New(12), w, h, 8, 0.9, 4, 1.3)
	r, err := partition.RasterOf(m, w, h)
	if err != nil {
		b.Fatal(err)
	}
	fixed := partition.NewMemStore(w, h)
	win := partition.RasterWindows(w, h, w, 0, 0)[0]
	opt := persistency.Options{Solver: persistency.Auto{}}
	var res *partition.WindowResult
	b.Run("solve", func(b *testing.B) {
		for range b.N {
			if res, err = partition.SolveWindow(context.Background(), r, win, fixed, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		for range b.N {
			if err := partition.CheckRasterWindow(r, win, fixed, res.Persistent, partition.ProofValue(res.Proof)); err != nil {
				b.Fatal(err)
			}
		}
		data, err := persistency.EncodeResult(res.Proof) // what travels with the result
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(data)), "proof-bytes")
	})
}
