package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/header"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
)

// writeSparseGridHeader writes a w×h .grid file of k labels, Potts with a shared
// weight, 4-connected, tiles of 256²: its header as the format lays it out, then a
// hole up to the length the header implies (the tiles and the tile index read as
// zeros: the index does not match its checksum, so only what reads no further than
// the header accepts the file). A 40000×25000 file takes one block on disk.
func writeSparseGridHeader(t *testing.T, path string, w, h, k int) {
	t.Helper()
	const tile = 256
	tiles := uint64((w+tile-1)/tile) * uint64((h+tile-1)/tile)
	indexOff := uint64(grid.HeaderSize) + uint64(w)*uint64(h)*uint64(k)*4
	b := header.New(grid.Magic, grid.Version, grid.HeaderSize)
	le := binary.LittleEndian
	le.PutUint32(b[16:], uint32(w))
	le.PutUint32(b[20:], uint32(h))
	le.PutUint32(b[24:], uint32(k))
	b[28], b[29], b[30] = 4, byte(model.Potts), byte(grid.Shared)
	le.PutUint64(b[40:], math.Float64bits(0.5))
	le.PutUint32(b[56:], tile)
	le.PutUint32(b[60:], tile)
	le.PutUint64(b[80:], indexOff)
	le.PutUint64(b[88:], tiles)
	if err := os.WriteFile(path, header.Seal(b), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(indexOff+16*tiles)); err != nil {
		t.Fatal(err)
	}
}

// TestInfoOfAGigapixelGridReadsItsHeaderOnly is `partopt info giga.grid` on a
// 40000×25000 .grid (10⁹ pixels, 8 GB of tiles, a sparse file here) under a 2 GB
// address-space limit (ulimit -v, as an operator would cap it): info once read the
// model whole (~23 GB) and was killed without a word; it now describes the model
// from its header — the exact counts of variables and factors, the pairwise terms,
// the tiles, the file's size and the memory a whole read would take — at once,
// in text and JSON. `partopt convert` of the same file to .uai is refused before
// reading, one line naming the size and the bound, exit 2, no file left.
func TestInfoOfAGigapixelGridReadsItsHeaderOnly(t *testing.T) {
	dir := t.TempDir()
	run := cappedBinary(t, dir)
	const w, h = 40000, 25000
	giga := filepath.Join(dir, "giga.grid")
	writeSparseGridHeader(t, giga, w, h, 2)
	capped := func(args ...string) (int, string, string, time.Duration) {
		start := time.Now()
		code, stdout, stderr := run(args...)
		return code, stdout, stderr, time.Since(start)
	}
	const pixels, edges = w * h, (w-1)*h + w*(h-1)
	code, out, stderr, took := capped("info", giga)
	if code != exitOK || stderr != "" {
		t.Fatalf("info: exit %d, stderr %q; want a description", code, stderr)
	}
	for _, want := range []string{
		"model      " + giga + " (grid)\n",
		"variables  1000000000 (40000×25000 pixels, labels 2..2, 0 with one label)\n",
		"factors    2999935000 (order 1: 1000000000, order 2: 1999935000; 4-connected)\n",
		"explicit: 1000000000 factors, potts: 1999935000 factors",
		"pairwise   potts, shared weight 0.5\n",
		"tiles      15386 (157×98 of 256×256 pixels)\n",
		"file       7.5 GiB (8000246304 bytes)\n",
		"functions  2..1000000001 distinct",
		"memory     82.0 GiB..163.9 GiB read whole (estimate, by the distinct functions)\n",
		"past the 16777216 pixels read whole",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	t.Logf("info %s:\n%s", giga, out)
	if took > 20*time.Second {
		t.Errorf("info took %v: it reads more than the header", took)
	}
	code, out, stderr, _ = capped("info", "--json", giga)
	var info struct {
		Variables      int64            `json:"variables"`
		MaxLabels      int              `json:"max_labels"`
		Factors        int64            `json:"factors"`
		FactorsByOrder map[string]int64 `json:"factors_by_order"`
		FactorsByKind  map[string]int64 `json:"factors_by_kind"`
		MemoryBytes    int64            `json:"memory_bytes"`
		FileBytes      int64            `json:"file_bytes"`
		Width          int              `json:"width"`
		Within         bool             `json:"within_in_memory_bound"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || code != exitOK {
		t.Fatalf("info --json: exit %d, %v, stderr %q:\n%s", code, err, stderr, out)
	}
	if info.Variables != pixels || info.MaxLabels != 2 || info.Factors != pixels+edges ||
		info.FactorsByOrder["1"] != pixels || info.FactorsByOrder["2"] != edges ||
		info.FactorsByKind["explicit"] != pixels || info.FactorsByKind["potts"] != edges ||
		info.MemoryBytes < 20<<30 || info.FileBytes != 8000246304 || info.Width != w || info.Within {
		t.Errorf("info --json: %+v", info)
	}

	for _, target := range []string{"giga.uai", "giga.LG.gz"} {
		code, out, stderr, _ = capped("convert", giga, filepath.Join(dir, target))
		want := giga + ": 40000×25000 pixels: converting it to a format other than .grid reads the model into memory, up to 16777216 pixels"
		if code != exitBadInput || out != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "partopt: ") || !strings.Contains(stderr, want) {
			t.Errorf("convert to %s: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", target, code, out, stderr, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 { // the binary and giga.grid
		for _, e := range entries {
			t.Errorf("convert left %s", e.Name())
		}
	}
}

// TestInfoOfAGridAgreesWithItsUAIForm: a .grid is described from its header with
// the counts today's info gives of the same model in UAI form (variables, labels,
// factors by order), and the header's facts besides; convert .grid → .grid streams
// a retiled copy, 8-connected too (which no other format holds), that describes
// and evaluates the same.
func TestInfoOfAGridAgreesWithItsUAIForm(t *testing.T) {
	gp, up := genGrid(t, "3")
	type infoJSON struct {
		Variables      int64            `json:"variables"`
		MinLabels      int              `json:"min_labels"`
		MaxLabels      int              `json:"max_labels"`
		OneLabel       int64            `json:"one_label_variables"`
		Factors        int64            `json:"factors"`
		FactorsByOrder map[string]int64 `json:"factors_by_order"`
		Offset         float64          `json:"offset"`
		MemoryBytes    int64            `json:"memory_bytes"`
		TileWidth      int              `json:"tile_width"`
		Connectivity   int              `json:"connectivity"`
		Within         bool             `json:"within_in_memory_bound"`
	}
	describe := func(path string) infoJSON {
		t.Helper()
		code, out, stderr := partopt("info", "--json", path)
		var info infoJSON
		if err := json.Unmarshal([]byte(out), &info); err != nil || code != exitOK {
			t.Fatalf("info --json %s: exit %d, %v, %q", path, code, err, stderr)
		}
		return info
	}
	g, u := describe(gp), describe(up)
	if g.Variables != u.Variables || g.MinLabels != u.MinLabels || g.MaxLabels != u.MaxLabels || g.OneLabel != u.OneLabel ||
		g.Factors != u.Factors || g.FactorsByOrder["1"] != u.FactorsByOrder["1"] || g.FactorsByOrder["2"] != u.FactorsByOrder["2"] ||
		g.MemoryBytes <= 0 || !g.Within || g.Connectivity != 4 {
		t.Errorf("info of the .grid %+v, of its UAI form %+v", g, u)
	}
	if code, out, _ := partopt("info", gp); code != exitOK || !strings.Contains(out, "variables  384 (24×16 pixels, labels 4..4") ||
		strings.Contains(out, "past the") {
		t.Errorf("info: exit %d:\n%s", code, out)
	}

	dir := t.TempDir()
	eight := filepath.Join(dir, "eight.grid")
	gw, err := grid.Create(eight, grid.Header{Width: 9, Height: 7, Labels: 3, Connectivity: 8,
		Kind: model.TruncatedLinear, Mode: grid.PerEdge, T: math.Inf(1), Offset: 1.5, TileWidth: 4, TileHeight: 4})
	if err != nil {
		t.Fatal(err)
	}
	unary, weights := make([]float32, 9*7*3), make([]float32, 9*7*4)
	for i := range unary {
		unary[i] = float32(i%7) * 0.25
	}
	for i := range weights {
		weights[i] = float32(i%5) * 0.5
	}
	if err := gw.WriteRows(unary, weights); err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	retiled := filepath.Join(dir, "retiled.grid")
	if code, out, stderr := partopt("convert", "--tile", "5", eight, retiled); code != exitOK || out != "wrote "+retiled+": 63 variables, 269 factors\n" {
		t.Fatalf("convert .grid → .grid: exit %d, %q, %q", code, out, stderr)
	}
	a, b := describe(eight), describe(retiled)
	if a.Factors != 63+8*7+9*6+2*8*6 || b.Factors != a.Factors || b.MemoryBytes != a.MemoryBytes || b.Connectivity != 8 || b.TileWidth != 5 {
		t.Errorf("info of the 8-connected grid %+v, of its retiled copy %+v", a, b)
	}
	if code, out, _ := partopt("info", retiled); code != exitOK || !strings.Contains(out, "pairwise   truncated-linear, a weight per edge, truncation +Inf\n") {
		t.Errorf("info of the retiled copy: exit %d:\n%s", code, out)
	}
	if code, out, _ := partopt("info", "--json", retiled); code != exitOK || !strings.Contains(out, `"t": "+Inf"`) {
		t.Errorf("info --json of an infinite truncation: exit %d:\n%s", code, out)
	}
	sol := filepath.Join(dir, "x.sol")
	os.WriteFile(sol, []byte("63"+strings.Repeat(" 1 2 0", 21)+"\n"), 0o644)
	_, ea, _ := partopt("energy", eight, sol)
	_, eb, _ := partopt("energy", retiled, sol)
	if lastEnergy(t, ea) != lastEnergy(t, eb) {
		t.Errorf("energy %v of the retiled copy, %v of the original", lastEnergy(t, eb), lastEnergy(t, ea))
	}
	if job.MaxInMemoryPixels != 1<<24 {
		t.Errorf("job.MaxInMemoryPixels is %d: the messages tested above say 16777216", job.MaxInMemoryPixels)
	}
}
