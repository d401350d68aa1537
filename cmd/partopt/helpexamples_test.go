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

// clusterScenario is every example line of the cluster's commands (server,
// coordinator, worker, submit, status, fetch, cancel, jobs, delete, and run's
// with a port of its own), as written, in an order where each finds what the
// lines before it started or wrote: first a NATS server, one coordinator and
// one worker on this host, then a token-protected server with three
// coordinator replicas (c1, c2, c3) and a worker. The examples' services are
// started in the background, in any order (each waits for NATS, a submit for
// a starting coordinator); "setup: " lines are the test's own steps between
// them (what an operator does by hand: files in place, the server's address
// awaited before a client's first command, services stopped).
// Every line runs in one shell, so that $JOB carries from line to line.
var clusterScenario = []string{
	"setup: partopt gen tiled fruits.jpg -o big.grid --width 600 --height 400 --labels 4",
	"setup: mkdir -p /srv/models && cp model.uai /srv/models/scene.uai",
	"partopt server --listen 127.0.0.1:4222 --dir /var/lib/partopt-nats",
	"partopt coordinator --nats nats://nats:4222 --data /var/lib/partopt --shared-root /srv/models",
	"partopt worker --nats nats://nats:4222 --shared-root /srv/models",
	"setup: wait_for grep nats:// server.log",
	"JOB=$(partopt submit big.grid --window 512)",
	`partopt status --wait "$JOB" && partopt fetch "$JOB" -o result/`,
	`partopt status "$JOB"`,
	`partopt status --wait --json "$JOB" > status.json`,
	`setup: jq -e '.phase == "done"' status.json`,
	`partopt status --wait --timeout 2h "$JOB"`,
	"setup: rm -r result",
	`partopt fetch "$JOB" -o result/`,
	"setup: partopt verify big.grid result/",
	"partopt submit /srv/models/scene.uai --shared --method iri --job scene-1",
	"setup: partopt status --wait scene-1",
	"partopt jobs",
	`partopt jobs --json | jq -r '.[] | select(.phase == "done") | .job'`,
	"setup: JOB=$(partopt submit big.grid --window 16)",
	`partopt cancel "$JOB" --reason "wrong model"`,
	`partopt delete "$JOB"`,
	`partopt jobs --json | jq -r '.[] | select(.phase != "running") | .job' | xargs partopt delete`,
	`setup: [ "$(partopt jobs --json | jq length)" = 0 ]`,
	"setup: stop",
	"setup: rm -r /var/lib/partopt /var/lib/partopt-nats && mkdir -p /run/secrets && echo 5e1f0c0a7d2b9e44 > /run/secrets/nats-token",
	"partopt server --listen 0.0.0.0:4222 --dir /var/lib/partopt-nats --token-file /run/secrets/nats-token",
	"setup: export NATS_TOKEN=$(cat /run/secrets/nats-token) && wait_for grep nats:// server.log",
	"partopt coordinator --nats nats://nats:4222 --token-file /run/secrets/nats-token --data /var/lib/partopt " +
		"--id c1 --raft-addr c1:7000 --peers c1=c1:7000,c2=c2:7000,c3=c3:7000 --bootstrap --http 0.0.0.0:8222",
	`setup: partopt coordinator --nats nats://nats:4222 --token-file /run/secrets/nats-token --data /var/lib/partopt-c2 --id c2 --raft-addr c2:7000 --peers c1=c1:7000,c2=c2:7000,c3=c3:7000 --http c2:8223 > c2.log 2>&1 & pids="$pids $!"`,
	`setup: partopt coordinator --nats nats://nats:4222 --token-file /run/secrets/nats-token --data /var/lib/partopt-c3 --id c3 --raft-addr c3:7000 --peers c1=c1:7000,c2=c2:7000,c3=c3:7000 --http c3:8224 > c3.log 2>&1 & pids="$pids $!"`,
	"NATS_URL=nats://nats:4222 partopt worker --token-file /run/secrets/nats-token --slots 4 --http 0.0.0.0:9090",
	`setup: JOB=$(wait_for partopt submit big.grid --window 512) && partopt status --wait "$JOB" && partopt fetch "$JOB" -o replicated/`,
	"setup: cmp replicated/labels.plf result/labels.plf",
	"setup: stop && unset NATS_TOKEN",
	"partopt run model.uai -o result/ --window 200 --workers 4 --http localhost:8222",
	"partopt run big.grid -o result/ --listen 0.0.0.0:4222 --token-file /run/secrets/nats-token   # workers of other machines join",
	"setup: cmp result/labels.plf replicated/labels.plf",
}

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
				line = strings.TrimSpace(strings.TrimSuffix(line, `\`)) + " "
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
	for _, l := range slices.Concat(helpScenario, clusterScenario) {
		in[l] = true
	}
	shown := map[string]bool{}
	for cmd, lines := range helpExamples(newRoot(io.Discard, io.Discard)) {
		for _, l := range lines {
			if !in[l] {
				t.Errorf("%s: example %q is run by neither scenario", cmd, l)
			}
			shown[l] = true
		}
	}
	for l := range in {
		if !shown[l] && !strings.HasPrefix(l, "setup: ") {
			t.Errorf("a scenario runs %q, which no help shows", l)
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
