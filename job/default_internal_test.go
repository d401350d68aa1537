package job

import (
	"cmp"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// TestDefaultFallsBackToPBPOnHugeTables: without a method, a model solved whole
// gets pbp+iri, unless label elimination's verification problem would pass the bound;
// then pbp alone, with a note that says why (an explicit --method pbp+iri is
// obeyed whatever the size).
func TestDefaultFallsBackToPBPOnHugeTables(t *testing.T) {
	const model = "../testdata/denoise32.uai.gz"
	p, err := LoadProblem(model, false)
	if err != nil {
		t.Fatal(err)
	}
	entries := persistency.VerificationSize(p.Solved)
	if want := int64(32*32*4 + (2*32*31)*(4+4)); entries != want {
		t.Fatalf("verification entries %d, want %d (unaries and the label maps of the Potts edges of a 32×32 grid)", entries, want)
	}
	run := func(m Method) (any, []string) {
		var notes []string
		res, err := Run(context.Background(), Spec{Model: model, Method: m, Output: t.TempDir()}, Options{Note: func(s string) { notes = append(notes, s) }})
		if err != nil {
			t.Fatal(err)
		}
		return res.Report, notes
	}
	if rep, _ := run(""); rep.(*IRIReport).Method != string(PBPIRI) {
		t.Fatalf("default: %+v, want pbp+iri", rep)
	}
	defer func(old int64) { maxDefaultEliminationEntries = old }(maxDefaultEliminationEntries)
	maxDefaultEliminationEntries = entries - 1
	rep, notes := run("")
	if _, ok := rep.(*PBPReport); !ok || len(notes) != 1 || !strings.Contains(notes[0], "pbp alone") {
		t.Errorf("default past the bound: report %T, notes %q; want pbp with a note", rep, notes)
	}
	if rep, _ := run(PBPIRI); rep.(*IRIReport).Method != string(PBPIRI) {
		t.Errorf("--method pbp+iri past the bound: %+v", rep)
	}
}

// TestDefaultIsPBPIRIOnGridsPastMemory: a .grid file without a method is
// solved by windows with pbp+iri, one past the in-memory bound too (out of
// core, no note, no fallback to pbp), and an explicit iri by windows as well.
func TestDefaultIsPBPIRIOnGridsPastMemory(t *testing.T) {
	p, err := LoadProblem("../testdata/denoise32.uai.gz", false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.grid")
	if err := grid.WriteModelFile(path, p.Model, 32, 32, 16); err != nil {
		t.Fatal(err)
	}
	run := func(m Method) (*WindowsReport, []string, error) {
		var notes []string
		res, err := Run(context.Background(), Spec{Model: path, Method: m, Window: 16, Output: t.TempDir()}, Options{Note: func(s string) { notes = append(notes, s) }})
		if err != nil {
			return nil, notes, err
		}
		return res.Report.(*WindowsReport), notes, nil
	}
	if rep, notes, err := run(""); err != nil || rep.Method != string(PBPIRI) || len(notes) != 0 {
		t.Fatalf("default: %+v, notes %q, %v; want pbp+iri", rep, notes, err)
	}
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	maxInMemoryPixels = 32*32 - 1
	for _, m := range []Method{"", IRI} {
		rep, notes, err := run(m)
		if want := cmp.Or(m, PBPIRI); err != nil || rep.Method != string(want) || len(notes) != 0 || rep.EliminatedLabels == nil {
			t.Errorf("%q past the bound: %+v, notes %q, %v; want %s out of core", m, rep, notes, err, want)
		}
	}
}

// TestDefaultPBPSettlesItsPruningIterations: the persistency options of a
// default spec (what solve, run and the workers pass to Algorithm 1) keep the
// default TRW-S stopping rules, so that pruning iterations settle near their
// changes instead of re-solving whole sub-problems; an explicit iteration cap
// is obeyed by re-solving.
func TestDefaultPBPSettlesItsPruningIterations(t *testing.T) {
	p, err := LoadProblem("../testdata/denoise32.uai.gz", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec   Spec
		settle bool
	}{
		{Spec{}, true},
		{Spec{Method: PBP, Window: 16}, true},
		{Spec{Solver: trws.Options{MaxIterations: 40}}, false},
	} {
		res, err := persistency.Run(context.Background(), p.Solved, c.spec.withDefaults().persistency())
		if err != nil {
			t.Fatal(err)
		}
		if res.PruningIterations == 0 || (res.Settled > 0) != c.settle {
			t.Errorf("%+v: %d of %d pruning iterations settled, want settling %v", c.spec, res.Settled, res.PruningIterations, c.settle)
		}
	}
}

// TestEveryWindowedMethodWindowsAGrid: a .grid file without --window is
// solved by windows of DefaultRasterWindow pixels whatever the method that
// solves by windows — iri too, which whole took 17.9 GB on a 10⁶-pixel stereo
// model — and whole otherwise (trws).
func TestEveryWindowedMethodWindowsAGrid(t *testing.T) {
	for _, c := range []struct {
		m        Method
		windowed bool
	}{{"", true}, {PBP, true}, {PBPIRI, true}, {IRI, true}, {TRWS, false}} {
		s := Spec{Model: "big.grid", Method: c.m}.withDefaults()
		if s.Windowed() != c.windowed || (c.windowed && s.Window != DefaultRasterWindow) {
			t.Errorf("%q: windowed %v, window %d; want %v", c.m, s.Windowed(), s.Window, c.windowed)
		}
	}
}

// TestPBPFirstOnRastersAndBinaryModels: pbp+iri of a whole model runs
// Algorithm 1 first on a raster (stereo, segmentation: measured 9× faster and
// stronger than the elimination first on a 400² stereo raster) and on a
// binary model, the elimination first on other models (proteins).
func TestPBPFirstOnRastersAndBinaryModels(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *model.Model
		want bool
	}{
		{"8-label raster", random.PottsDenoising(random.New(1), 12, 10, 8, 0.8, 4, 1.3), true},
		{"binary graph", random.DensePairwise(random.New(2), 20, 2, 0.3), true},
		{"5-label graph", random.DensePairwise(random.New(3), 20, 5, 0.3), false},
	} {
		if got := pbpFirst(c.m); got != c.want {
			t.Errorf("%s: Algorithm 1 first %v, want %v", c.name, got, c.want)
		}
	}
}
