package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
)

// BenchmarkRunVsSolve: the same windowed job by solve (local goroutines) and by
// run (embedded NATS, in-process workers): a 1024×1024 colour segmentation tiled
// from a real image, K=4, 256+32 windows, 2 workers. Target: run ≤ 5% slower.
func BenchmarkRunVsSolve(b *testing.B) {
	img := testutil.SharedPath("images", "opencv-doc-debian", "fruits.jpg")
	testutil.SkipWithoutShared(b, img)
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

// BenchmarkWindowCertificates: what keeping and re-checking a windowed job's
// proofs costs a user, on the job of BenchmarkRunVsSolve with method pbp:
// "solve --window" (each window's proof re-checked and written to
// window-certificates.bin), "run" (the same over the embedded cluster, every
// proof re-checked by the coordinator before its merge) and "verify" of the
// result (every window replayed from the model). Reported: pixels per second
// and the certificates' bytes per pixel.
func BenchmarkWindowCertificates(b *testing.B) {
	img := testutil.SharedPath("images", "opencv-doc-debian", "fruits.jpg")
	testutil.SkipWithoutShared(b, img)
	model := filepath.Join(b.TempDir(), "fruits.grid")
	if code, _, stderr := partopt("gen", "tiled", img, "-o", model, "--width", "1024", "--height", "1024", "--labels", "4"); code != 0 {
		b.Skipf("no model from %s: %s", img, stderr)
	}
	args := []string{"--method", "pbp", "--window", "256", "--halo", "32", "--workers", "2"}
	solved := filepath.Join(b.TempDir(), "solved")
	if code, _, stderr := partopt(append([]string{"solve", model, "-o", solved}, args...)...); code != 0 {
		b.Fatal(stderr)
	}
	for _, cmd := range []string{"solve", "run", "verify"} {
		b.Run(cmd, func(b *testing.B) {
			for range b.N {
				argv := []string{"verify", model, solved}
				if cmd != "verify" {
					argv = append([]string{cmd, model, "-o", filepath.Join(b.TempDir(), "out")}, args...)
				}
				if code, _, stderr := partopt(argv...); code != 0 {
					b.Fatal(stderr)
				}
			}
			b.ReportMetric(float64(1024*1024*b.N)/b.Elapsed().Seconds(), "pixels/s")
			if info, err := os.Stat(filepath.Join(solved, "window-certificates.bin")); cmd == "verify" && err == nil {
				b.ReportMetric(float64(info.Size())/(1024*1024), "cert-B/pixel")
			}
		})
	}
}

// BenchmarkLabelElimination: what a user runs, "partopt solve MODEL -o DIR
// --method M" with default options (the proof re-checked, every file written),
// on the rows of ../shared/IRI.md that are files, for pbp, iri and pbp+iri. The
// reported metrics are the persistent variables, the eliminated label fraction
// and the method's own seconds (report.json's "seconds": without reading the model,
// the check and the outputs, which ns/op includes); the targets are in
// docs/BENCHMARKS.md ("Label elimination").
func BenchmarkLabelElimination(b *testing.B) {
	models := testutil.SharedPath("models")
	for _, name := range []string{
		"pascal2-dechterlab/proteinfolding/pdb1jmx.uai", "pascal2-dechterlab/proteinfolding/pdb1qks.uai",
		"pascal2-dechterlab/proteinfolding/pdb1i24.uai", "uai2014-mroavi/MAP/ObjectDetection_11.uai",
		"uai2014-mroavi/MAP/ProteinFolding_19.uai", "uai2014-mroavi/MAP/Segmentation_11.uai",
		"uai2014-mroavi/MAP/Segmentation_12.uai", "uai2014-mroavi/MAP/Segmentation_13.uai",
		"uai2014-mroavi/MAP/Segmentation_14.uai", "uai2014-mroavi/MAP/ProteinFolding_15.uai",
		"pascal2-dechterlab/segmentation/1_28_s.binary.uai", "pascal2-dechterlab/segmentation/2_2_s.binary.uai",
		// and the speed issue's other rows (scripts/vs-part-opt.sh)
		"uai2014-mroavi/MAP/Grids_18.uai", "uai2014-mroavi/MAP/Grids_26.uai", "uai2014-mroavi/MAP/Grids_28.uai",
		"toulbar2/grid10x10.f10.uai", "toulbar2/GEOM40_3.wcsp.uai", "uai2014-mroavi/MAP/wcsp_15.uai",
	} {
		model := filepath.Join(models, name)
		testutil.SkipWithoutShared(b, model)
		for _, method := range []string{"pbp", "iri", "pbp+iri"} {
			b.Run(filepath.Base(name)+"/"+method, func(b *testing.B) {
				var rep struct {
					Persistent int     `json:"persistent_variables"`
					Eliminated float64 `json:"eliminated_label_fraction"`
					Seconds    float64 `json:"seconds"`
				}
				seconds := 0.0
				for range b.N {
					solveReport(b, &rep, model, "--method", method)
					seconds += rep.Seconds
				}
				b.ReportMetric(float64(rep.Persistent), "persistent")
				b.ReportMetric(rep.Eliminated, "eliminated")
				b.ReportMetric(seconds/float64(b.N), "method-s/op")
			})
		}
	}
}

// BenchmarkWindowedLabelElimination: "partopt solve MODEL -o DIR --method iri
// --window N --halo H" with default rounds, against --method pbp by the same
// windows, iri on the whole model and "partopt run --method iri" (the windows
// over the embedded cluster, every proof re-checked by the coordinator), on tsukuba (`gen stereo`, 16 disparities) and
// a colour segmentation of fruits.jpg (`gen seg`, 8 labels). Reported: persistent
// variables, the eliminated label fraction and pixels per second; the target (IRI
// issue): windowed iri within 1 point of whole-model iri and faster per pixel than
// windowed pbp; the default (pbp+iri), whole and by windows, at least what both
// prove. Results in docs/BENCHMARKS.md ("By windows").
func BenchmarkWindowedLabelElimination(b *testing.B) {
	images := testutil.SharedPath("images")
	testutil.SkipWithoutShared(b, images)
	dir := b.TempDir()
	models := map[string][]string{
		"tsukuba": {"stereo", filepath.Join(images, "middlebury-tsukuba", "tsukuba1.bmp"), filepath.Join(images, "middlebury-tsukuba", "tsukuba2.bmp"), "--disparities", "16"},
		"fruits":  {"seg", filepath.Join(images, "opencv-doc-debian", "fruits.jpg"), "--labels", "8"},
	}
	for _, name := range []string{"tsukuba", "fruits"} {
		model := filepath.Join(dir, name+".uai")
		args := append([]string{"gen"}, models[name]...)
		if code, _, stderr := partopt(append(args, "-o", model)...); code != 0 {
			b.Skipf("no %s model: %s", name, stderr)
		}
		for _, run := range []struct{ name, method, window, halo string }{
			{"iri/64+8", "iri", "64", "8"}, {"iri/128+16", "iri", "128", "16"}, {"iri/whole", "iri", "0", "0"},
			{"pbp/64+8", "pbp", "64", "8"}, {"pbp/128+16", "pbp", "128", "16"}, {"run-iri/64+8", "iri", "64", "8"},
			{"default/64+8", "", "64", "8"}, {"default/whole", "", "0", "0"}, // pbp+iri
		} {
			b.Run(name+"/"+run.name, func(b *testing.B) {
				var rep struct {
					Variables  int      `json:"variables"`
					Persistent int      `json:"persistent_variables"`
					Eliminated *float64 `json:"eliminated_label_fraction"`
				}
				var args []string
				if run.method != "" {
					args = []string{"--method", run.method}
				}
				if run.window != "0" {
					args = append(args, "--window", run.window, "--halo", run.halo, "--workers", "2")
				}
				command := "solve"
				if strings.HasPrefix(run.name, "run-") { // over the embedded cluster, proofs re-checked by the coordinator
					command = "run"
				}
				for range b.N {
					commandReport(b, &rep, command, model, args...)
				}
				b.ReportMetric(float64(rep.Persistent), "persistent")
				if rep.Eliminated != nil {
					b.ReportMetric(*rep.Eliminated, "eliminated")
				}
				b.ReportMetric(float64(rep.Variables*b.N)/b.Elapsed().Seconds(), "pixels/s")
			})
		}
	}
}

// solveReport runs "partopt solve model -o DIR flags…" into a fresh DIR and decodes
// its report.json into rep.
func solveReport(b *testing.B, rep any, model string, flags ...string) {
	commandReport(b, rep, "solve", model, flags...)
}

// commandReport runs "partopt command model -o DIR flags…" into a fresh DIR and
// decodes its report.json into rep.
func commandReport(b *testing.B, rep any, command, model string, flags ...string) {
	out := filepath.Join(b.TempDir(), "out")
	if code, _, stderr := partopt(append([]string{command, model, "-o", out}, flags...)...); code != 0 {
		b.Fatal(stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, reportFile))
	if err == nil {
		err = json.Unmarshal(data, rep)
	}
	if err != nil {
		b.Fatal(err)
	}
}
