package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSolveIRIThenVerifyAndReduce: the label elimination methods through the
// CLI: solve writes domains.txt and the report's elimination fields, verify
// re-checks them, reduce writes a UAI model and refuses LG.
func TestSolveIRIThenVerifyAndReduce(t *testing.T) {
	model := filepath.Join(fixtures, "pedigree1.uai")
	for _, method := range []string{"iri", "pbp+iri"} {
		dir := t.TempDir()
		code, out, errOut := partopt("solve", model, "-o", dir, "--method", method)
		if code != 0 || !strings.HasPrefix(out, "persistent ") || !strings.Contains(out, "eliminated ") {
			t.Fatalf("%s: exit %d, out %q, err %q", method, code, out, errOut)
		}
		var rep struct {
			Method                  string
			PersistentVariables     int     `json:"persistent_variables"`
			EliminatedLabels        int     `json:"eliminated_labels"`
			EliminatedLabelFraction float64 `json:"eliminated_label_fraction"`
			Verified                bool
		}
		data, _ := os.ReadFile(filepath.Join(dir, reportFile))
		if err := json.Unmarshal(data, &rep); err != nil || rep.Method != method || rep.EliminatedLabels == 0 || rep.EliminatedLabelFraction <= 0 || !rep.Verified {
			t.Errorf("%s: report %+v (%v)", method, rep, err)
		}
		if code, out, errOut := partopt("verify", model, dir); code != 0 || !strings.HasPrefix(out, "verified ") {
			t.Errorf("%s: verify: exit %d, out %q, err %q", method, code, out, errOut)
		}
		reduced := filepath.Join(dir, "reduced.uai")
		if code, out, errOut := partopt("reduce", model, dir, "-o", reduced); code != 0 || !strings.HasPrefix(out, "wrote ") {
			t.Errorf("%s: reduce: exit %d, out %q, err %q", method, code, out, errOut)
		}
		if code, _, errOut := partopt("energy", reduced, filepath.Join(dir, labelsFile)); code != 0 || strings.Contains(errOut, "+Inf") {
			t.Errorf("%s: the labeling of solve is not feasible in the reduced model: exit %d, %s", method, code, errOut)
		}
		if code, _, errOut := partopt("reduce", model, dir, "-o", filepath.Join(dir, "reduced.LG")); code != exitBadInput || !strings.Contains(errOut, "LG") {
			t.Errorf("%s: reduce to LG: exit %d, %s", method, code, errOut)
		}
	}
}

// TestWindowedDefaultProvesAtLeastPBP: solve by windows without --method runs
// pbp+iri — Algorithm 1's windows, then label elimination from what they
// proved — so every label windowed pbp proves (same windows, same rounds) is
// proven again, and the labels it leaves keep the optimum (toulbar2): a raster
// by tiles, models by regions, with and without evidence.
func TestWindowedDefaultProvesAtLeastPBP(t *testing.T) {
	frustrated := writeFrustrated(t, t.TempDir())
	for _, c := range []struct {
		model        string
		n, w, h      int
		window, halo string
		plan         string
	}{
		{filepath.Join(fixtures, "denoise32.uai.gz"), 32 * 32, 32, 32, "12", "4", "raster"},
		{frustrated, 6, 0, 0, "2", "1", "regions"},
		{filepath.Join(fixtures, "network-evid.uai"), 116 + 4, 0, 0, "30", "2", "regions"},
	} {
		args := []string{"--window", c.window, "--halo", c.halo}
		pbp := solveWindowed(t, c.model, c.n, c.w, c.h, append(args, "--method", "pbp")...)
		both := solveWindowed(t, c.model, c.n, c.w, c.h, args...)
		var rep struct {
			Method, Plan string
			PBP          *int64 `json:"pbp_persistent_variables"`
			Eliminated   *int   `json:"eliminated_labels"`
		}
		data, _ := os.ReadFile(filepath.Join(both.dir, reportFile))
		if err := json.Unmarshal(data, &rep); err != nil || rep.Method != "pbp+iri" || rep.Plan != c.plan || rep.PBP == nil || *rep.PBP != pbp.report.PersistentVariables || rep.Eliminated == nil {
			t.Errorf("%s: report %s (%v), pbp alone proved %d", c.model, data, err, pbp.report.PersistentVariables)
		}
		for v, l := range pbp.listed {
			if l >= 0 && both.listed[v] != l {
				t.Errorf("%s: variable %d: pbp proves label %d, pbp+iri lists %d", c.model, v, l, both.listed[v])
			}
		}
		t.Logf("%s: pbp %d persistent, pbp+iri %d", c.model, pbp.report.PersistentVariables, both.report.PersistentVariables)
		if c.w == 0 {
			checkSoundWithToulbar2(t, c.model, both.listed)
		}
	}
}

// TestWindowedIRIThenReduce: label elimination by windows (BFS regions of a
// higher-order model with evidence, grid tiles of a raster) writes labels.sol,
// persistent.evid and domains.txt whose reduced problem keeps the labeling
// feasible; a .grid file is read into memory and gives the same result as its
// UAI twin.
func TestWindowedIRIThenReduce(t *testing.T) {
	for _, c := range []struct{ model, window, plan string }{
		{filepath.Join(fixtures, "network-evid.uai"), "30", "regions"},
		{filepath.Join(fixtures, "denoise32.uai.gz"), "16", "raster"},
	} {
		dir := t.TempDir()
		code, out, errOut := partopt("solve", c.model, "-o", dir, "--method", "iri", "--window", c.window, "--halo", "4")
		if code != 0 || !strings.Contains(out, "windows ") {
			t.Fatalf("%s: exit %d, out %q, err %q", c.model, code, out, errOut)
		}
		var rep struct {
			Method, Plan     string
			EliminatedLabels *int `json:"eliminated_labels"`
			Verified         bool
		}
		data, _ := os.ReadFile(filepath.Join(dir, reportFile))
		if err := json.Unmarshal(data, &rep); err != nil || rep.Method != "iri" || rep.Plan != c.plan || rep.EliminatedLabels == nil || *rep.EliminatedLabels == 0 || !rep.Verified {
			t.Errorf("%s: report %s (%v)", c.model, data, err)
		}
		reduced := filepath.Join(dir, "reduced.uai")
		if code, _, errOut := partopt("reduce", c.model, dir, "-o", reduced); code != 0 {
			t.Fatalf("%s: reduce: %s", c.model, errOut)
		}
		if code, out, errOut := partopt("energy", reduced, filepath.Join(dir, labelsFile), "--no-evid"); code != 0 || strings.Contains(out, "+Inf") {
			t.Errorf("%s: the labeling is not feasible in the reduced model: %s %s", c.model, out, errOut)
		}
	}
	grid := filepath.Join(t.TempDir(), "m.grid")
	if code, _, errOut := partopt("convert", filepath.Join(fixtures, "denoise32.uai.gz"), grid); code != 0 {
		t.Fatal(errOut)
	}
	fromGrid, fromUAI := t.TempDir(), t.TempDir()
	for dir, model := range map[string]string{fromGrid: grid, fromUAI: filepath.Join(fixtures, "denoise32.uai.gz")} {
		if code, _, errOut := partopt("solve", model, "-o", dir, "--method", "iri", "--window", "16"); code != 0 {
			t.Fatalf("iri on %s: exit %d, %s", model, code, errOut)
		}
	}
	sameFiles(t, fromGrid, fromUAI, []string{labelsFile, persistentFile, "domains.txt"})
}
