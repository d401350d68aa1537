package main

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResultsOut: a raster result's labels.plf has the energy of its
// labels.sol, and export writes it as a full-resolution image whose pixels
// are those labels; a result without a label raster, a bad format or a
// missing directory exits 2 and writes nothing.
func TestResultsOut(t *testing.T) {
	gp, _ := genGrid(t, "3")
	dir := t.TempDir()
	if code, _, stderr := partopt("solve", gp, "-o", dir, "--window", "8", "--halo", "2"); code != 0 {
		t.Fatal(stderr)
	}
	_, sol, _ := partopt("energy", gp, filepath.Join(dir, labelsFile))
	code, plf, stderr := partopt("energy", gp, filepath.Join(dir, labelTilesFile))
	if code != 0 || plf != sol || !strings.HasPrefix(plf, "energy ") {
		t.Errorf("energy of labels.plf: exit %d, %q (labels.sol: %q) %s", code, plf, sol, stderr)
	}
	labels := strings.Fields(readFile(t, filepath.Join(dir, labelsFile)))
	out := filepath.Join(t.TempDir(), "labels.png")
	if code, _, stderr := partopt("export", dir, "-o", out); code != 0 {
		t.Fatal(stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok || g.Rect.Dx() != 24 || g.Rect.Dy() != 16 {
		t.Fatalf("exported %T of %v, want an 8-bit 24×16 image", img, img.Bounds())
	}
	x := labels[len(labels)-24*16:] // after the solution file's count
	for i, l := range x {
		if got := g.Pix[i]; l != string(rune('0'+got)) {
			t.Fatalf("pixel %d: %d, labels.sol %s", i, got, l)
		}
	}
	graph := t.TempDir()
	if code, _, stderr := partopt("solve", "../../testdata/network-evid.uai", "-o", graph, "--method", "srmp"); code != 0 {
		t.Fatal(stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", graph, "-o", filepath.Join(t.TempDir(), "x.png")}, "not a raster"},
		{[]string{"export", dir, "-o", filepath.Join(t.TempDir(), "x.jpg")}, "unknown export format"},
		{[]string{"export", filepath.Join(t.TempDir(), "none"), "-o", filepath.Join(t.TempDir(), "x.png")}, "no such file"},
		{[]string{"export", filepath.Join(dir, persistentTilesFile), "-o", filepath.Join(t.TempDir(), "x.png"), "--persistent"}, "result directory"},
	} {
		if code, _, stderr := partopt(c.args...); code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
		if out := c.args[len(c.args)-1]; filepath.Ext(out) != "" {
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
				t.Errorf("%v left %d files", c.args, len(entries))
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
