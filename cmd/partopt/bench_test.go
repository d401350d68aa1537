package main

import (
	"path/filepath"
	"testing"
)

// BenchmarkRunVsSolve: the same windowed job by solve (local goroutines) and by
// run (embedded NATS, in-process workers): a 1024×1024 colour segmentation tiled
// from a real image, K=4, 256+32 windows, 2 workers. Target: run ≤ 5% slower.
func BenchmarkRunVsSolve(b *testing.B) {
	img := filepath.Join("..", "..", "..", "shared", "images", "opencv-doc-debian", "fruits.jpg")
	model := filepath.Join(b.TempDir(), "fruits.grid")
	if code, _, stderr := partopt("gen", "tiled", img, "-o", model, "--width", "1024", "--height", "1024", "--labels", "4"); code != 0 {
		b.Skipf("no model from %s: %s", img, stderr)
	}
	for _, cmd := range []string{"solve", "run"} {
		b.Run(cmd, func(b *testing.B) {
			for range b.N {
				out := filepath.Join(b.TempDir(), "out")
				if code, _, stderr := partopt(cmd, model, "-o", out, "--window", "256", "--halo", "32", "--workers", "2"); code != 0 {
					b.Fatal(stderr)
				}
			}
			b.ReportMetric(float64(1024*1024*b.N)/b.Elapsed().Seconds(), "pixels/s")
		})
	}
}
