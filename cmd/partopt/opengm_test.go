package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/uai"
)

// opengmFixtures is model/opengm's testdata: OpenGM HDF5 files and the same models as
// LG files.
const opengmFixtures = "../../model/opengm/testdata"

// TestSolveHDF5EqualsLG: solve (pbp, and --method trws on the pairwise grid) on an
// OpenGM HDF5 file writes the labels.sol and persistent.evid that it writes for the same
// model as LG, and a report with the same numbers; energy agrees too. The fixtures
// cover superblocks 0 and 2, chunked gzip+shuffle datasets, float and double values,
// explicit and Potts functions and every other function type.
func TestSolveHDF5EqualsLG(t *testing.T) {
	cases := []struct {
		h5, lg string
		args   []string
	}{
		{"potts_grid_sb0.h5", "potts_grid.LG", nil},
		{"potts_grid_sb2_chunked.h5", "potts_grid.LG", nil},
		{"potts_grid_sb2_chunked.h5", "potts_grid.LG", []string{"--method", "trws"}},
		{"mixed_sb0.h5", "mixed.LG", nil},
		{"mixed_sb0_chunked_float.h5", "mixed.LG", []string{"--boundary", "original"}},
		{"mixed_sb2_dense_chunked.h5", "mixed.LG", nil},
	}
	for _, c := range cases {
		t.Run(c.h5+strings.Join(c.args, ""), func(t *testing.T) {
			outs := map[string]string{}
			for _, name := range []string{c.h5, c.lg} {
				dir := filepath.Join(t.TempDir(), "out")
				path := filepath.Join(opengmFixtures, name)
				if code, _, errOut := partopt(append([]string{"solve", path, "-o", dir}, c.args...)...); code != 0 {
					t.Fatalf("solve %s: exit %d: %s", name, code, errOut)
				}
				outs[name] = dir
			}
			a, b := outs[c.h5], outs[c.lg]
			files := []string{labelsFile, persistentFile}
			if c.args != nil && c.args[0] == "--method" {
				files = files[:1] // trws proves nothing
			}
			sameFiles(t, a, b, files)
			ra, rb := reportNumbers(t, a), reportNumbers(t, b)
			for k, v := range rb {
				if ra[k] != v {
					t.Errorf("report %s: %v for HDF5, %v for LG", k, ra[k], v)
				}
			}
			m, err := uai.ReadFile(filepath.Join(opengmFixtures, c.lg))
			if err != nil {
				t.Fatal(err)
			}
			sol := filepath.Join(a, labelsFile)
			_, outH, _ := partopt("energy", filepath.Join(opengmFixtures, c.h5), sol)
			_, outL, _ := partopt("energy", filepath.Join(opengmFixtures, c.lg), sol)
			if eh, el := lastEnergy(t, outH), lastEnergy(t, outL); eh != el || m.NumVars() == 0 {
				t.Errorf("energy %v from HDF5, %v from LG", eh, el)
			}
		})
	}
}

// reportNumbers returns the numbers of report.json that depend on the model only.
func reportNumbers(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, reportFile))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, k := range []string{"variables", "persistent_variables", "persistent_fraction", "pruning_iterations", "solver_iterations", "lower_bound", "energy", "iterations", "agreeing_fraction", "solver"} {
		if v, ok := r[k]; ok {
			out[k] = v
		}
	}
	if len(out) < 4 {
		t.Fatalf("report.json lacks the numbers: %s", data)
	}
	return out
}

// TestConvert: an OpenGM model converted to LG and UAI keeps its energies (LG exactly),
// a grid model converts to .grid, and the formats convert cannot write are refused
// with one line before anything is read.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(opengmFixtures, "mixed_sb0_chunked_float.h5")
	lg, u, g := filepath.Join(dir, "m.LG"), filepath.Join(dir, "m.uai.gz"), filepath.Join(dir, "g.grid")
	for _, out := range []string{lg, u} {
		if code, stdout, errOut := partopt("convert", in, out); code != 0 || !strings.HasPrefix(stdout, "wrote "+out) {
			t.Fatalf("convert %s: exit %d, %q %q", out, code, stdout, errOut)
		}
	}
	ref := filepath.Join(opengmFixtures, "mixed.LG")
	sol := filepath.Join(dir, "x.sol")
	for _, labels := range []string{"0 0 0 0 0 0 0 0", "1 2 3 2 1 2 3 1", "1 0 2 1 0 1 0 1"} {
		os.WriteFile(sol, []byte("8 "+labels+"\n"), 0o644)
		_, want, _ := partopt("energy", ref, sol)
		_, got, _ := partopt("energy", lg, sol)
		_, gotU, _ := partopt("energy", u, sol)
		if lastEnergy(t, got) != lastEnergy(t, want) {
			t.Errorf("labels %s: LG energy %v, want %v", labels, lastEnergy(t, got), lastEnergy(t, want))
		}
		if e, w := lastEnergy(t, gotU), lastEnergy(t, want); !(e == w || (e-w)*(e-w) < 1e-18*(1+w*w)) {
			t.Errorf("labels %s: UAI energy %v, want %v", labels, e, w)
		}
	}
	if code, _, errOut := partopt("convert", filepath.Join(opengmFixtures, "potts_grid_sb0.h5"), g); code != 0 {
		t.Fatalf("convert to .grid: %s", errOut)
	}
	if code, out, _ := partopt("info", g); code != 0 || !strings.Contains(out, "variables  30") {
		t.Errorf("info of the converted grid: %s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", in, filepath.Join(dir, "x.h5")}, "writing OpenGM HDF5 is not supported"},
		{[]string{"convert", in, filepath.Join(dir, "x.txt")}, "unknown output format"},
		{[]string{"convert", in, filepath.Join(dir, "x.grid")}, "not a raster"},
		{[]string{"convert", filepath.Join(dir, "none.h5"), lg}, "no such file"},
	} {
		code, _, errOut := partopt(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args, code, errOut, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 { // m.LG, m.uai.gz, x.sol, g.grid: nothing partial
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files left: %v", names)
	}
}
