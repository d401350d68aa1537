package grid_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/grid"
)

// FuzzOpen feeds arbitrary bytes to the Reader: it returns an error naming the input
// or a Reader whose windows are valid models, never panics, and allocates no more
// than the input holds. Seeds: small files of every mode.
// Run: go test ./model/grid -run XXX -fuzz FuzzOpen -fuzztime 1m
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	for i, hd := range headers(5, 4, 2) {
		path := filepath.Join(dir, "seed.grid")
		genGrid(hd, uint64(i), 0.2).write(f, path)
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(grid.Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := grid.NewReader(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error %q does not name the input", err)
			}
			return
		}
		hd := r.Header()
		m, err := r.Model()
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error %q does not name the input", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		if e := m.Energy(make([]int, m.NumVars())); math.IsNaN(e) || math.IsInf(e, -1) {
			t.Fatalf("energy %v", e)
		}
		if w, err := r.ReadWindow(hd.Width/2, hd.Height/2, (hd.Width+1)/2, (hd.Height+1)/2); err != nil {
			t.Fatalf("whole model reads but a window fails: %v", err)
		} else if err := w.Model.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
