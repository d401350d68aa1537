package modelfile

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadChoosesTheFormatByName: a UAI file, an LG file and an OpenGM HDF5 file of the
// same model read alike; an unknown extension names the formats.
func TestReadChoosesTheFormatByName(t *testing.T) {
	h5, err := Read(filepath.Join("..", "opengm", "testdata", "potts_grid_sb0.h5"))
	if err != nil {
		t.Fatal(err)
	}
	lg, err := Read(filepath.Join("..", "opengm", "testdata", "potts_grid.LG"))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]int, h5.NumVars())
	for v := range x {
		x[v] = v % 3
	}
	if h5.NumVars() != 30 || h5.Energy(x) != lg.Energy(x) {
		t.Errorf("HDF5: %d variables, energy %v; LG: %v", h5.NumVars(), h5.Energy(x), lg.Energy(x))
	}
	if m, err := Read(filepath.Join("..", "..", "testdata", "grid4x4.uai.gz")); err != nil || m.NumVars() != 16 {
		t.Errorf("UAI: %v", err)
	}
	if _, err := Read("model.txt"); err == nil || !strings.Contains(err.Error(), Formats) {
		t.Errorf("unknown format: %v", err)
	}
}
