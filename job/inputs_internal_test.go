package job

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
)

// TestNoGridPastMemoryIsReadWhole: with the in-memory bound below a .grid
// model, every operation that would read it whole refuses before reading
// (errTooLarge) — verify of a whole-model result, the energy of a solution
// file, reduce — while those that work out of core still do: verify of pbp's
// and of label elimination's window proofs, the energy of labels.plf. Under
// the bound, all of them run.
func TestNoGridPastMemoryIsReadWhole(t *testing.T) {
	dir := t.TempDir()
	gridPath, uaiPath := filepath.Join(dir, "m.grid"), filepath.Join(dir, "m.uai")
	if err := grid.WriteModelFile(gridPath, random.PottsGrid(random.New(71), 24, 16, 3), 24, 16, 8); err != nil {
		t.Fatal(err)
	}
	stored, err := modelfile.Read(gridPath) // its float32 numbers, for a whole run of the same model
	if err != nil {
		t.Fatal(err)
	}
	if err := uai.WriteFile(uaiPath, stored); err != nil {
		t.Fatal(err)
	}
	run := func(s Spec) string {
		s.Output = filepath.Join(t.TempDir(), "out")
		if _, err := Run(context.Background(), s, Options{}); err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		return s.Output
	}
	whole := run(Spec{Model: uaiPath, Method: PBP})
	windows := run(Spec{Model: gridPath, Method: PBP, Window: 8})
	elimination := run(Spec{Model: gridPath, Method: IRI, Window: 8})
	ops := []struct {
		name    string
		op      func() error
		refused bool // past the bound
	}{
		{"verify of a whole-model result", func() error { _, err := Verify(gridPath, whole, false, nil); return err }, true},
		{"verify of label elimination's window proofs", func() error { _, err := Verify(gridPath, elimination, false, nil); return err }, false},
		{"verify of pbp's window proofs", func() error { _, err := Verify(gridPath, windows, false, nil); return err }, false},
		{"energy of labels.sol", func() error { _, err := Energy(gridPath, filepath.Join(windows, LabelsFile), false, nil); return err }, true},
		{"energy of labels.plf", func() error {
			_, err := Energy(gridPath, filepath.Join(windows, LabelTilesFile), false, nil)
			return err
		}, false},
		{"reduce", func() error {
			out := filepath.Join(t.TempDir(), "r.uai")
			if err := CheckReduce(gridPath, elimination, out); err != nil {
				return err
			}
			_, err := Reduce(gridPath, elimination, out)
			return err
		}, true},
	}
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	for _, limit := range []int64{MaxInMemoryPixels, 24*16 - 1} {
		maxInMemoryPixels = limit
		for _, o := range ops {
			err := o.op()
			switch past := limit < 24*16; {
			case past && o.refused && (!errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), gridPath)):
				t.Errorf("%s past the bound: %v; want it refused as too large, naming the model", o.name, err)
			case past && o.refused && errors.As(err, new(InternalError)):
				t.Errorf("%s past the bound: %v is an InternalError; want bad input", o.name, err)
			case (!past || !o.refused) && err != nil:
				t.Errorf("%s, bound %d: %v", o.name, limit, err)
			}
		}
	}
}
