package partition_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// BenchmarkSolveRaster is the windowed pipeline out of core on a .grid file: the
// colour segmentation of fruits.jpg tiled to 1024×1024 (K=4, λ=1, `partopt gen tiled`
// defaults), windows of 256+32, one worker; pixels/s is per core.
func BenchmarkSolveRaster(b *testing.B) {
	fruits := testutil.SharedPath("images", "opencv-doc-debian", "fruits.jpg")
	testutil.SkipWithoutShared(b, fruits)
	img, err := gen.LoadImage(fruits)
	if err != nil {
		b.Fatal(err)
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

// BenchmarkWindowAgainstOneSolve: the throughput issue's per-window target. A
// 512+32 window inside the colour segmentation of fruits.jpg tiled to 1100×1100
// (`gen tiled` defaults) at K = 2, 4 and 8: "window" is its full default solve
// (SolveWindow: reading the window's model, Algorithm 1's pruning iterations
// and the certificate), "relaxed" reading the same window's model and one TRW-S
// solve of it to the default stopping rules. The target is window ≤ 1.5 × relaxed; pixels/s is per
// core, over the window's nodes.
func BenchmarkWindowAgainstOneSolve(b *testing.B) {
	fruits := testutil.SharedPath("images", "opencv-doc-debian", "fruits.jpg")
	testutil.SkipWithoutShared(b, fruits)
	img, err := gen.LoadImage(fruits)
	if err != nil {
		b.Fatal(err)
	}
	const side = 1100
	for _, k := range []int{2, 4, 8} {
		src, err := gen.Tiled(img, side, side, k, 1, gen.TiledOptions{})
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
		raster := partition.Raster{Width: side, Height: side, Window: r.Window}
		var win partition.RasterWindow // the first window away from the raster's edge
		for _, w := range partition.RasterWindows(side, side, 512, 32, 0) {
			if w.Nodes.X0 > 0 && w.Nodes.Y0 > 0 {
				win = w
				break
			}
		}
		n := win.Nodes.Pixels()
		b.Run(fmt.Sprintf("K=%d/window", k), func(b *testing.B) {
			var res *partition.WindowResult
			for range b.N {
				if res, err = partition.SolveWindow(context.Background(), raster, win, partition.NewMemStore(side, side), persistency.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pixels/s")
			b.ReportMetric(float64(res.PruningIterations), "pruning-iterations")
			b.ReportMetric(float64(res.SolverIterations), "trws-iterations")
		})
		// One relaxed solve of the window (read from the file, as the window
		// is): with the default options, which settle the last disagreements,
		// and iterated whole until agreement (SettleBelow 0), the issue's
		// "one converged TRW-S solve".
		whole := trws.DefaultOptions()
		whole.SettleBelow = 0
		for _, c := range []struct {
			name string
			opt  trws.Options
		}{{"relaxed", trws.DefaultOptions()}, {"relaxed-whole", whole}} {
			b.Run(fmt.Sprintf("K=%d/%s", k, c.name), func(b *testing.B) {
				nd := win.Nodes
				var res trws.Result
				for range b.N {
					m, err := r.Window(nd.X0, nd.Y0, nd.W, nd.H)
					if err != nil {
						b.Fatal(err)
					}
					s, err := trws.New(m)
					if err != nil {
						b.Fatal(err)
					}
					if res, err = s.Solve(context.Background(), c.opt); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pixels/s")
				b.ReportMetric(float64(res.Iterations), "trws-iterations")
			})
		}
		r.Close()
	}
}
