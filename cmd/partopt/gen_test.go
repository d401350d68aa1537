package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/uai"
)

const genTestdata = "../../gen/testdata"

func TestGenSegWritesGridAndUAI(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(genTestdata, "blocks.png")
	gp, up := filepath.Join(dir, "b.grid"), filepath.Join(dir, "b.uai")
	for _, out := range []string{gp, up} {
		code, stdout, stderr := partopt("gen", "seg", img, "-o", out, "--labels", "3", "--lambda", "0.5")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "24×16 pixels, 3 labels, potts") {
			t.Errorf("stdout %q", stdout)
		}
	}
	g, err := grid.ReadFile(gp)
	if err != nil {
		t.Fatal(err)
	}
	u, err := uai.ReadFile(up)
	if err != nil {
		t.Fatal(err)
	}
	if g.NumVars() != 24*16 || u.NumVars() != 24*16 {
		t.Fatalf("variables %d, %d", g.NumVars(), u.NumVars())
	}
	x := make([]int, 24*16)
	for i := range x {
		x[i] = i % 3
	}
	if eg, eu := g.Energy(x), u.Energy(x); !(eg-eu < 1e-4*eg && eu-eg < 1e-4*eg) {
		t.Errorf("energy grid %v, uai %v", eg, eu)
	}
	// Same command, same bytes.
	again := filepath.Join(dir, "again.grid")
	partopt("gen", "seg", img, "-o", again, "--labels", "3", "--lambda", "0.5")
	a, _ := os.ReadFile(gp)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("two runs wrote different grid files")
	}
}

func TestGenStereoAndTiled(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.uai")
	code, _, stderr := partopt("gen", "stereo", filepath.Join(genTestdata, "left.png"), filepath.Join(genTestdata, "right.png"), "-o", out, "--disparities", "4", "--contrast")
	if code != 0 {
		t.Fatalf("stereo: exit %d: %s", code, stderr)
	}
	if m, err := uai.ReadFile(out); err != nil || m.NumVars() != 20*12 || m.NumLabels(0) != 4 {
		t.Fatalf("stereo model: %v", err)
	}
	out = filepath.Join(dir, "t.grid")
	code, _, stderr = partopt("gen", "tiled", filepath.Join(genTestdata, "blocks.png"), "-o", out, "--width", "100", "--height", "70", "--labels", "3", "--tile", "32")
	if code != 0 {
		t.Fatalf("tiled: exit %d: %s", code, stderr)
	}
	r, err := grid.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Header(); h.Width != 100 || h.Height != 70 || h.Labels != 3 || h.TileWidth != 32 {
		t.Errorf("tiled header %+v", h)
	}
}

// TestGenStereoTiledWritesTheTiledPair: gen stereo-tiled writes a W×H truncated-linear
// grid with D labels, byte for byte the file of gen.StereoTiled with the same options,
// and info reads it as such.
func TestGenStereoTiledWritesTheTiledPair(t *testing.T) {
	dir := t.TempDir()
	left, right := filepath.Join(genTestdata, "left.png"), filepath.Join(genTestdata, "right.png")
	out := filepath.Join(dir, "st.grid")
	code, stdout, stderr := partopt("gen", "stereo-tiled", left, right, "-o", out, "--width", "50", "--height", "30",
		"--disparities", "4", "--contrast", "--weight", "3", "--trunc", "3", "--tile", "16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "50×30 pixels, 4 labels, truncated-linear pairwise (per-edge weights)") {
		t.Errorf("stdout %q", stdout)
	}
	r, err := grid.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	r.Close()
	if h.Width != 50 || h.Height != 30 || h.Labels != 4 || h.Kind != model.TruncatedLinear || h.T != 3 || h.Mode != grid.PerEdge || h.TileWidth != 16 {
		t.Errorf("header %+v", h)
	}
	l, err := gen.LoadImage(left)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := gen.LoadImage(right)
	if err != nil {
		t.Fatal(err)
	}
	st, err := gen.StereoTiled(l, rt, 50, 30, 4, gen.StereoOptions{W: 3, T: 3, Contrast: true})
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "lib.grid")
	if err := gen.WriteFile(lib, st, gen.WriteOptions{TileSize: 16}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(lib)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("the command's grid file differs from gen.StereoTiled's")
	}
	code, stdout, stderr = partopt("info", "--json", out)
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, stderr)
	}
	var info struct {
		Variables int            `json:"variables"`
		MaxLabels int            `json:"max_labels"`
		Kinds     map[string]int `json:"factors_by_kind"`
	}
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatalf("info --json: %v: %s", err, stdout)
	}
	if edges := 49*30 + 50*29; info.Variables != 50*30 || info.MaxLabels != 4 || info.Kinds["truncated-linear"] != edges {
		t.Errorf("info: %d variables, %d labels, kinds %v; want 1500, 4, truncated-linear: %d", info.Variables, info.MaxLabels, info.Kinds, edges)
	}
}

func TestGenBadInput(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(genTestdata, "blocks.png")
	left, right := filepath.Join(genTestdata, "left.png"), filepath.Join(genTestdata, "right.png")
	junk := filepath.Join(dir, "junk.jpg")
	os.WriteFile(junk, []byte("not a jpeg"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "seg", img, "-o", filepath.Join(dir, "m.png")}, "unknown output format"},
		{[]string{"gen", "seg", img}, "no output file"},
		{[]string{"gen", "seg", junk, "-o", filepath.Join(dir, "m.grid")}, "not a readable image"},
		{[]string{"gen", "seg", filepath.Join(dir, "missing.png"), "-o", filepath.Join(dir, "m.grid")}, "no such file"},
		{[]string{"gen", "seg", img, "-o", filepath.Join(dir, "nodir", "m.grid")}, "does not exist"},
		{[]string{"gen", "seg", img, "-o", filepath.Join(dir, "m.grid"), "--labels", "0"}, "labels"},
		{[]string{"gen", "stereo", img, img, "-o", filepath.Join(dir, "m.grid")}, "--disparities"},
		{[]string{"gen", "stereo", img, filepath.Join(genTestdata, "left.png"), "-o", filepath.Join(dir, "m.grid"), "--disparities", "3"}, "same size"},
		{[]string{"gen", "tiled", img, "-o", filepath.Join(dir, "m.uai"), "--width", "10", "--height", "10"}, ".grid files only"},
		{[]string{"gen", "tiled", img, "-o", filepath.Join(dir, "m.grid")}, "--width"},
		{[]string{"gen", "stereo-tiled", left, right, "-o", filepath.Join(dir, "m.uai"), "--width", "10", "--height", "10", "--disparities", "4"}, ".grid files only"},
		{[]string{"gen", "stereo-tiled", left, right, "-o", filepath.Join(dir, "m.grid"), "--height", "10", "--disparities", "4"}, "--width"},
		{[]string{"gen", "stereo-tiled", left, right, "-o", filepath.Join(dir, "m.grid"), "--width", "10", "--height", "10", "--disparities", "1"}, "D ≥ 2"},
		{[]string{"gen", "stereo-tiled", img, right, "-o", filepath.Join(dir, "m.grid"), "--width", "10", "--height", "10", "--disparities", "4"}, "same size"},
		{[]string{"gen", "stereo-tiled", left, right, "-o", filepath.Join(dir, "m.grid"), "--width", "10", "--height", "10", "--disparities", "4", "--weight", "-1"}, "stereo options"},
	} {
		code, _, stderr := partopt(tc.args...)
		if code != exitBadInput || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args[1:], code, stderr, tc.want)
		}
	}
}
