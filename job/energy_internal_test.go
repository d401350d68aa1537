package job

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
)

// TestEnergyReadsLabelRasters: energy of a labels.plf is the energy of the
// same labels as a solution file: in memory the same number, and by bands (a
// .grid model beyond memory: unaries and edges inside each band, edges across
// bands once) or by pieces of rows (rows wider than a band) the same up to
// summation order, while a solution file, for which the model would be read
// whole, is refused; with evidence a disagreeing raster is +Inf and an
// agreeing one keeps its energy.
func TestEnergyReadsLabelRasters(t *testing.T) {
	defer func(old int64, band int) { maxInMemoryPixels, energyBand = old, band }(maxInMemoryPixels, energyBand)
	rng := random.New(61)
	for mi, m := range []*model.Model{
		random.PottsGrid(random.New(62), 23, 17, 4),
		random.PottsDenoising(random.New(63), 19, 29, 3, 1.2, 4, 1),
		random.PottsGrid(random.New(64), 1, 11, 2), // a column: bands of one row
	} {
		w, h, ok := grid.Dims(m)
		if !ok {
			t.Fatalf("model %d is not a grid", mi)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "m.grid")
		if err := grid.WriteModelFile(path, m, w, h, 8); err != nil {
			t.Fatalf("model %d: %v", mi, err)
		}
		x := random.Labeling(rng, m)
		plf, sol := filepath.Join(dir, "labels.plf"), filepath.Join(dir, "labels.sol")
		writeRaster(t, plf, w, h, m.NumLabels(0), x)
		var b strings.Builder
		if err := uai.WriteSolution(&b, x); err != nil || os.WriteFile(sol, []byte(b.String()), 0o644) != nil {
			t.Fatal(err)
		}
		stored, err := modelfile.Read(path) // float32 unaries and weights
		if err != nil {
			t.Fatal(err)
		}
		want := stored.Energy(x)
		for _, c := range []struct {
			limit int64
			band  int
		}{
			{MaxInMemoryPixels, 50},
			{10, 50}, // bands of a few rows
			{10, 7},  // pieces of 7 columns (a column model: bands of 7 rows)
		} {
			limit := c.limit
			maxInMemoryPixels, energyBand = c.limit, c.band
			fromSol, err := Energy(path, sol, false, nil)
			switch {
			case limit == 10 && !errors.Is(err, errTooLarge):
				t.Errorf("model %d by bands: the solution file, which reads the model whole: %v, %v; want it refused", mi, fromSol, err)
			case limit > 10 && err != nil:
				t.Fatal(err)
			}
			fromPLF, err := Energy(path, plf, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if limit > 10 && (fromPLF != fromSol || fromSol != want) {
				t.Errorf("model %d in memory: raster %v, solution file %v, model %v", mi, fromPLF, fromSol, want)
			}
			if math.Abs(fromPLF-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("model %d by bands of %d pixels: %v, want %v", mi, c.band, fromPLF, want)
			}
			// Evidence that agrees, then evidence that does not.
			ev := path + ".evid"
			if err := os.WriteFile(ev, []byte(fmtEvidence(1, x[1], len(x)-1, x[len(x)-1])), 0o644); err != nil {
				t.Fatal(err)
			}
			if e, err := Energy(path, plf, false, nil); err != nil || math.Abs(e-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("model %d, limit %d, band %d, agreeing evidence: %v, %v; want %v", mi, limit, c.band, e, err, want)
			}
			if err := os.WriteFile(ev, []byte(fmtEvidence(1, x[1], len(x)-1, (x[len(x)-1]+1)%m.NumLabels(0))), 0o644); err != nil {
				t.Fatal(err)
			}
			if e, err := Energy(path, plf, false, nil); err != nil || !math.IsInf(e, 1) {
				t.Errorf("model %d, limit %d, band %d, disagreeing evidence: %v, %v; want +Inf", mi, limit, c.band, e, err)
			}
			if e, err := Energy(path, plf, true, nil); err != nil || math.Abs(e-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("model %d, limit %d, band %d, evidence ignored: %v, %v; want %v", mi, limit, c.band, e, err, want)
			}
			os.Remove(ev)
		}
		// Not a labeling, or one of another size.
		pers := filepath.Join(dir, "persistent.plf")
		f, err := labelfile.Create(pers, labelfile.Header{Width: w, Height: h, Labels: m.NumLabels(0), Kind: labelfile.Persistent})
		if err != nil || f.Close() != nil {
			t.Fatal(err)
		}
		small := filepath.Join(dir, "small.plf")
		writeRaster(t, small, w-1, h, m.NumLabels(0), x[:(w-1)*h])
		for _, limit := range []int64{MaxInMemoryPixels, 10} {
			maxInMemoryPixels = limit
			for _, bad := range []string{pers, small} {
				if _, err := Energy(path, bad, false, nil); err == nil {
					t.Errorf("model %d, limit %d: energy of %s accepted", mi, limit, filepath.Base(bad))
				}
			}
		}
	}
}

// fmtEvidence is an evidence file observing label l0 at v0 and l1 at v1.
func fmtEvidence(v0, l0, v1, l1 int) string {
	return fmt.Sprintf("2 %d %d %d %d\n", v0, l0, v1, l1)
}

// writeRaster writes x as a labeling raster of w×h pixels and k labels.
func writeRaster(t *testing.T, path string, w, h, k int, x []int) {
	t.Helper()
	f, err := labelfile.Create(path, labelfile.Header{Width: w, Height: h, Labels: k, Kind: labelfile.Labeling, TileWidth: 4, TileHeight: 4})
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]int32, len(x))
	for i, l := range x {
		vals[i] = int32(l)
	}
	if err := f.WriteRect(0, 0, w, h, vals); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// On an 8-connected grid with per-edge weights, energy read by bands of
// rows, by pieces of rows and by single pixels is the energy of the model
// read whole: each piece's diagonal edges to the row below, both ways, are
// counted once.
func TestEnergyOf8ConnectedRasterInPieces(t *testing.T) {
	defer func(old int64, band int) { maxInMemoryPixels, energyBand = old, band }(maxInMemoryPixels, energyBand)
	maxInMemoryPixels = 10
	const W, H, K = 13, 5, 3
	rng := random.New(65)
	path := filepath.Join(t.TempDir(), "m.grid")
	gw, err := grid.Create(path, grid.Header{Width: W, Height: H, Labels: K, Connectivity: 8, Kind: model.Potts, Mode: grid.PerEdge})
	if err != nil {
		t.Fatal(err)
	}
	unary, weights := make([]float32, W*H*K), make([]float32, W*H*4)
	for i := range unary {
		unary[i] = float32(rng.Float64())
	}
	for i := range weights {
		weights[i] = float32(rng.Float64())
	}
	if err := gw.WriteRows(unary, weights); err != nil || gw.Close() != nil {
		t.Fatal(err)
	}
	m, err := modelfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	x := random.Labeling(rng, m)
	plf := filepath.Join(t.TempDir(), "labels.plf")
	writeRaster(t, plf, W, H, K, x)
	want := m.Energy(x)
	for _, band := range []int{1 << 22, 2 * W, W, 5, 1} {
		energyBand = band
		if got, err := Energy(path, plf, false, nil); err != nil || math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("band of %d pixels: %v, %v; want %v", band, got, err, want)
		}
	}
}
