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
// bands once) the same up to summation order, while a solution file, for
// which the model would be read whole, is refused; with evidence a
// disagreeing raster is +Inf and an agreeing one keeps its energy.
func TestEnergyReadsLabelRasters(t *testing.T) {
	defer func(old int64, band int) { maxInMemoryPixels, energyBand = old, band }(maxInMemoryPixels, energyBand)
	energyBand = 50 // bands of a few rows
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
		for _, limit := range []int64{MaxInMemoryPixels, 10} { // in memory, then by bands
			maxInMemoryPixels = limit
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
				t.Errorf("model %d by bands: %v, want %v", mi, fromPLF, want)
			}
			// Evidence that agrees, then evidence that does not.
			ev := path + ".evid"
			if err := os.WriteFile(ev, []byte(fmtEvidence(1, x[1], len(x)-1, x[len(x)-1])), 0o644); err != nil {
				t.Fatal(err)
			}
			if e, err := Energy(path, plf, false, nil); err != nil || math.Abs(e-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("model %d, limit %d, agreeing evidence: %v, %v; want %v", mi, limit, e, err, want)
			}
			if err := os.WriteFile(ev, []byte(fmtEvidence(1, x[1], len(x)-1, (x[len(x)-1]+1)%m.NumLabels(0))), 0o644); err != nil {
				t.Fatal(err)
			}
			if e, err := Energy(path, plf, false, nil); err != nil || !math.IsInf(e, 1) {
				t.Errorf("model %d, limit %d, disagreeing evidence: %v, %v; want +Inf", mi, limit, e, err)
			}
			if e, err := Energy(path, plf, true, nil); err != nil || math.Abs(e-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("model %d, limit %d, evidence ignored: %v, %v; want %v", mi, limit, e, err, want)
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
