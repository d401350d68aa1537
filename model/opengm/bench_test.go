package opengm

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkReadGrid1M reads a 1000×1000 Potts grid with 4 labels in OpenGM's layout
// (10^6 variables, 10^6 explicit unary functions, one Potts function, 2,998,000
// factors; chunked gzip+shuffle datasets, 4 MB), written by
// testdata/make_fixtures.py --grid with Debian's h5py (skipped without it):
//
//	go test ./model/opengm -run '^$' -bench ReadGrid1M -benchtime 3x
//
// It reports the live heap after loading and a GC per factor, like model/uai's
// BenchmarkReadPottsGrid.
func BenchmarkReadGrid1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "grid.h5")
	gen := exec.Command("/usr/bin/python3", "make_fixtures.py", "--grid", "1000", "1000", "4", path)
	gen.Dir = "testdata"
	if out, err := gen.CombinedOutput(); err != nil {
		b.Skipf("cannot write the model (needs /usr/bin/python3 with h5py): %v\n%s", err, out)
	}
	b.ResetTimer()
	for range b.N {
		m, err := ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/float64(m.NumFactors()), "heap-B/factor")
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(m.MemoryBytes())/float64(m.NumFactors()), "model-B/factor")
		b.StartTimer()
	}
}
