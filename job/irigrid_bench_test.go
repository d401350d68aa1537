package job

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/internal/testutil"
)

// BenchmarkOutOfCoreElimination is pbp+iri by windows (64 + 8) of tsukuba's
// truncated-linear stereo model (16 disparities; gen.StereoTiled, the top-left
// 192×144 of the pair), a .grid file solved out of core (the in-memory bound
// lowered below it), on 2 workers: pixels a second, the persistent fraction
// (and pbp's), the labels eliminated and the peak memory of the process.
// Skipped without ../shared.
//
//	go test -run - -bench OutOfCoreElimination -benchtime 1x ./job/
func BenchmarkOutOfCoreElimination(b *testing.B) {
	dir := testutil.SharedPath("images", "middlebury-tsukuba")
	testutil.SkipWithoutShared(b, dir)
	left, err := gen.LoadImage(filepath.Join(dir, "tsukuba1.bmp"))
	if err != nil {
		b.Fatal(err)
	}
	right, err := gen.LoadImage(filepath.Join(dir, "tsukuba2.bmp"))
	if err != nil {
		b.Fatal(err)
	}
	const w, h = 192, 144
	src, err := gen.StereoTiled(left, right, w, h, 16, gen.StereoOptions{})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "stereo.grid")
	if err := gen.WriteFile(path, src, gen.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	maxInMemoryPixels = w*h - 1
	b.ResetTimer()
	for b.Loop() {
		res, err := Run(context.Background(), Spec{Model: path, Method: PBPIRI, Window: 64, Halo: 8, Workers: 2, Output: b.TempDir()}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		rep := res.Report.(*WindowsReport)
		b.ReportMetric(rep.VariablesPerSecond, "pixels/s")
		b.ReportMetric(rep.Fraction, "persistent")
		b.ReportMetric(float64(*rep.PBPPersistentVariables)/float64(rep.FreeVariables), "pbp-persistent")
		b.ReportMetric(*rep.EliminatedLabelFraction, "eliminated")
		b.ReportMetric(float64(rep.PeakRSSBytes)/(1<<20), "peak-MiB")
	}
}
