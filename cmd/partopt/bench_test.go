package main

import (
	"encoding/json"
	"os"
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

// BenchmarkLabelElimination: what a user runs, "partopt solve MODEL -o DIR
// --method M" with default options (the proof re-checked, every file written),
// on the rows of ../shared/IRI.md that are files, for pbp, iri and pbp+iri. The
// reported metrics are the persistent variables and the eliminated label
// fraction; the targets are in docs/BENCHMARKS.md ("Label elimination").
func BenchmarkLabelElimination(b *testing.B) {
	models := filepath.Join("..", "..", "..", "shared", "models")
	for _, name := range []string{
		"pascal2-dechterlab/proteinfolding/pdb1jmx.uai", "pascal2-dechterlab/proteinfolding/pdb1qks.uai",
		"pascal2-dechterlab/proteinfolding/pdb1i24.uai", "uai2014-mroavi/MAP/ObjectDetection_11.uai",
		"uai2014-mroavi/MAP/ProteinFolding_19.uai", "uai2014-mroavi/MAP/Segmentation_11.uai",
	} {
		model := filepath.Join(models, name)
		if _, err := os.Stat(model); err != nil {
			b.Skipf("%s not present (%v)", model, err)
		}
		for _, method := range []string{"pbp", "iri", "pbp+iri"} {
			b.Run(filepath.Base(name)+"/"+method, func(b *testing.B) {
				var rep struct {
					Persistent int     `json:"persistent_variables"`
					Eliminated float64 `json:"eliminated_label_fraction"`
				}
				for range b.N {
					out := filepath.Join(b.TempDir(), "out")
					if code, _, stderr := partopt("solve", model, "-o", out, "--method", method); code != 0 {
						b.Fatal(stderr)
					}
					data, err := os.ReadFile(filepath.Join(out, reportFile))
					if err == nil {
						err = json.Unmarshal(data, &rep)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rep.Persistent), "persistent")
				b.ReportMetric(rep.Eliminated, "eliminated")
			})
		}
	}
}
