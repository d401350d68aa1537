package main

import (
	"compress/gzip"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

// clusterExamples are the commands whose examples name a NATS server, hosts,
// ports or a running job: they run against a cluster, not in a directory,
// and are not executed here (see the issue on users' data and conventions).
var clusterExamples = []string{"partopt server", "partopt coordinator", "partopt worker", "partopt submit",
	"partopt fetch", "partopt cancel", "partopt status", "partopt jobs", "partopt delete"}

// helpScenario is every other example line of the commands' help, as written,
// in an order where each finds the files the lines before it wrote; "setup: "
// lines are the test's own steps between them (what a user does by hand).
var helpScenario = []string{
	"partopt version",
	"partopt --version",
	"partopt info model.uai",
	"partopt info --json scene.h5 | jq .variables",
	"partopt gen tiled fruits.jpg -o big.grid --width 600 --height 400 --labels 4   # 40000×25000: a gigapixel, 16 GB",
	"partopt gen seg fruits.jpg -o seg.grid --labels 8",
	"partopt gen seg fruits.jpg -o seg.grid --labels 8 --lambda 2",
	"partopt gen seg fruits.jpg -o seg.uai.gz",
	"setup: gunzip seg.uai.gz",
	"partopt gen stereo tsukuba1.bmp tsukuba2.bmp -o tsukuba.grid --disparities 16",
	"partopt gen stereo left.png right.png -o stereo.uai --disparities 16",
	"partopt gen stereo left.png right.png -o stereo.uai --disparities 32 --contrast",
	"partopt gen stereo-tiled tsukuba1.bmp tsukuba2.bmp -o stereo.grid --width 1000 --height 800 --disparities 16",
	"partopt gen stereo-tiled left.tif right.tif -o cones.grid --width 600 --height 450 --disparities 32 --contrast",
	"partopt solve model.uai -o result/           # prove persistent labels, whole model",
	"partopt solve model.uai -o result/",
	"partopt verify model.uai result/               # re-check the proof from the model alone",
	"partopt verify model.uai result/",
	"partopt energy model.uai result/labels.sol",
	"partopt export result/ -o labels.png           # the labeling as an image",
	"partopt export result/ -o labels.png",
	"partopt solve model.uai -o result/ --method trws --max-iterations 300",
	"partopt solve model.uai -o result/ --method iri",
	"partopt reduce model.uai result/ -o left.uai   # what is left, for toulbar2 or any solver",
	"partopt solve seg.uai -o result/ --method pbp --boundary original",
	"partopt convert scene.h5 scene.uai",
	"partopt convert seg.uai seg.grid --tile 256",
	"partopt solve big.grid -o result/ --window 512 --workers 8",
	"partopt energy big.grid result/labels.plf",
	"partopt export result/ --persistent -o persistent.tiff",
	`partopt export result/labels.plf -o labels.npy   # numpy.load("labels.npy")`,
	"setup: cp -r result fetched", // what partopt fetch of such a job writes: solve --window's files
	"partopt verify big.grid fetched/   # a windowed or cluster result, window by window",
	"partopt run big.grid -o result/ --workers 8    # by windows over an embedded NATS",
	"partopt run big.grid -o result/",
}

// helpExamples are the example lines of c and its subcommands (a line ending
// in \ joined with the next), by command path.
func helpExamples(c *cobra.Command) map[string][]string {
	out := map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var line string
		for _, l := range strings.Split(c.Example, "\n") {
			line += strings.TrimSpace(l)
			if strings.HasSuffix(line, `\`) {
				line = strings.TrimSuffix(line, `\`) + " "
				continue
			}
			if line != "" {
				out[c.CommandPath()] = append(out[c.CommandPath()], line)
			}
			line = ""
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(c)
	return out
}

// TestHelpExamplesRunAsWritten: every example of every command's --help but
// the cluster's runs as written — a shell line, with the partopt binary first
// on PATH, in a directory holding the files the examples name (a raster
// model.uai, an OpenGM scene.h5, small images) — and exits 0, each finding what
// the lines before it wrote; the scenario holds every such line and no other.
func TestHelpExamplesRunAsWritten(t *testing.T) {
	bin := buildBinary(t, t.TempDir())
	in := map[string]bool{}
	for _, l := range helpScenario {
		in[l] = true
	}
	for cmd, lines := range helpExamples(newRoot(io.Discard, io.Discard)) {
		for _, l := range lines {
			switch {
			case slices.Contains(clusterExamples, cmd):
			case cmd == "partopt run" && (strings.Contains(l, "--listen") || strings.Contains(l, "--http")):
				// A port of its own (which another process may hold here), or
				// workers of other machines joining: a cluster's example.
			case !in[l]:
				t.Errorf("%s: example %q is not run by the scenario", cmd, l)
			}
			delete(in, l)
		}
	}
	for l := range in {
		if !strings.HasPrefix(l, "setup: ") {
			t.Errorf("the scenario runs %q, which no help shows", l)
		}
	}
	if _, err := exec.LookPath("jq"); err != nil && os.Getenv("CI") != "" {
		t.Fatal("jq, which an example pipes into, is not installed")
	}
	dir := t.TempDir()
	writeExampleInputs(t, dir)
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, line := range helpScenario {
		if strings.Contains(line, "| jq") {
			if _, err := exec.LookPath("jq"); err != nil {
				t.Logf("skipped, no jq: %s", line)
				continue
			}
		}
		cmd := exec.Command("sh", "-c", strings.TrimPrefix(line, "setup: "))
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
}

// writeExampleInputs writes the files the help examples name: model.uai (the
// 32×32 denoising raster of testdata), scene.h5 (an OpenGM fixture),
// fruits.jpg, and stereo pairs as BMP, PNG and TIFF (the right image the left
// shifted by two pixels).
func writeExampleInputs(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures, "denoise32.uai.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	model, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	scene, err := os.ReadFile(filepath.Join("..", "..", "model", "opengm", "testdata", "potts_grid_sb0.h5"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const w, h = 64, 48
	left := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			// Blocks of four colours with noise: something to segment and match.
			c := [4]color.RGBA{{200, 40, 40, 255}, {40, 180, 60, 255}, {50, 60, 200, 255}, {220, 200, 60, 255}}[(x/16+y/12)%4]
			n := uint8(rng.IntN(24))
			left.Set(x, y, color.RGBA{c.R/2 + n, c.G/2 + n, c.B/2 + n, 255})
		}
	}
	right := image.NewRGBA(left.Bounds())
	for y := range h {
		for x := range w {
			right.Set(x, y, left.At(min(x+2, w-1), y))
		}
	}
	files := map[string]func(io.Writer) error{
		"model.uai":    func(w io.Writer) error { _, err := w.Write(model); return err },
		"scene.h5":     func(w io.Writer) error { _, err := w.Write(scene); return err },
		"fruits.jpg":   func(w io.Writer) error { return jpeg.Encode(w, left, nil) },
		"tsukuba1.bmp": func(w io.Writer) error { return bmp.Encode(w, left) },
		"tsukuba2.bmp": func(w io.Writer) error { return bmp.Encode(w, right) },
		"left.png":     func(w io.Writer) error { return png.Encode(w, left) },
		"right.png":    func(w io.Writer) error { return png.Encode(w, right) },
		"left.tif":     func(w io.Writer) error { return tiff.Encode(w, left, nil) },
		"right.tif":    func(w io.Writer) error { return tiff.Encode(w, right, nil) },
	}
	for name, write := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := write(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
