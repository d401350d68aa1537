package opengm

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/expansion"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model/uai"
)

// fixturePairs are the committed HDF5 fixtures and the LG files of the same models
// (testdata/make_fixtures.py): superblocks 0 and 2, contiguous and chunked
// gzip+shuffle datasets, double and float values, a group in dense link storage,
// explicit and Potts functions (potts_grid) and every function type (mixed).
var fixturePairs = []struct{ h5, lg string }{
	{"potts_grid_sb0.h5", "potts_grid.LG"},
	{"potts_grid_sb2_chunked.h5", "potts_grid.LG"},
	{"mixed_sb0.h5", "mixed.LG"},
	{"mixed_sb0_chunked_float.h5", "mixed.LG"},
	{"mixed_sb2_dense_chunked.h5", "mixed.LG"},
}

// TestHDF5EqualsLG: every fixture reads, and gives the energy of the same model read
// from the LG file (exactly) on 500 random labelings and the all-zero one.
func TestHDF5EqualsLG(t *testing.T) {
	for _, p := range fixturePairs {
		t.Run(p.h5, func(t *testing.T) {
			h, err := ReadFile(filepath.Join("testdata", p.h5))
			if err != nil {
				t.Fatal(err)
			}
			l, err := uai.ReadFile(filepath.Join("testdata", p.lg))
			if err != nil {
				t.Fatal(err)
			}
			if h.NumVars() != l.NumVars() {
				t.Fatalf("%d variables, the LG file %d", h.NumVars(), l.NumVars())
			}
			for v := range h.NumVars() {
				if h.NumLabels(v) != l.NumLabels(v) {
					t.Fatalf("variable %d: %d labels, the LG file %d", v, h.NumLabels(v), l.NumLabels(v))
				}
			}
			rng := rand.New(rand.NewPCG(5, 6))
			x := make([]int, h.NumVars())
			for range 501 {
				if eh, el := h.Energy(x), l.Energy(x); eh != el && !(math.Abs(eh-el) <= 1e-12*math.Max(1, math.Abs(el))) {
					t.Fatalf("labeling %v: energy %v, the LG file %v", x, eh, el)
				}
				for v := range x {
					x[v] = rng.IntN(h.NumLabels(v))
				}
			}
		})
	}
}

// TestReadFileErrors: a file that is not HDF5, a truncated one and a missing one are
// errors naming the file.
func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "mixed_sb0.h5"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"text.h5": []byte("MARKOV\n1\n2\n0\n"), "cut.h5": data[:len(data)/2], "empty.h5": nil}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "none.h5")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestValuesBombIsRefusedBeforeItsData: a 1.5 MB file whose values dataset
// inflates to 1.6 GB, for a model whose functions need 4 values, is refused from
// the dataset's declared size — what the indices describe bounds the values a
// file may make the reader decode — before anything is inflated (it made any
// reader peak at 3.2 GB).
func TestValuesBombIsRefusedBeforeItsData(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFile("testdata/bomb_values.h5")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "200000000 elements, limit 4") {
		t.Errorf("%v, want the values dataset refused", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<22 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
}

// TestTableBombIsRefusedBeforeItsData: a 1.3 MB file whose explicit table of
// 2^27 values — all that its model asks for, so no bound of the model's
// refuses it — inflates to 1 GiB is refused from the dataset's declared size
// against the file's (expansion.Budget) before a chunk is inflated, naming the
// file and the dataset; it made ReadFile peak at 3.2 GB. A table of 2^20
// values in a file of 10 KB is within the budget's slack and reads.
func TestTableBombIsRefusedBeforeItsData(t *testing.T) {
	data := testutil.OpenGMTableBomb(1<<13, 1<<14)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(bytes.NewReader(data), int64(len(data)), "table.h5")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, expansion.ErrBomb) || !strings.HasPrefix(err.Error(), "table.h5: ") || !strings.Contains(err.Error(), "/gm/function-id-16000/values: 134217728 values") {
		t.Errorf("%v, want the values of table.h5 refused as a bomb", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<22 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
	small := testutil.OpenGMTableBomb(1<<6, 1<<14)
	m, err := Read(bytes.NewReader(small), int64(len(small)), "small.h5")
	if err != nil || m.NumVars() != 2 || m.NumLabels(1) != 1<<14 {
		t.Errorf("a %d-byte file of 2^20 values: %v", len(small), err)
	}
}
