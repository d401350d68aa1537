package job

import (
	"context"
	"strings"
	"testing"

	"github.com/partopt/partopt/persistency"
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
	if want := int64(32*32*4 + (2*32*31)*16); entries != want {
		t.Fatalf("verification entries %d, want %d (unaries and the 4×4 tables of the Potts edges of a 32×32 grid)", entries, want)
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
