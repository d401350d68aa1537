package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/uai"
)

// TestSolveWindowsOfHigherOrderModels: solve --window on higher-order UAI models uses
// graph-region windows solved by SRMP: pedigree1 (order 5, forbidden states) proves a
// part, network with evidence (order 3) everything; every window was verified, and
// labels.sol has a persistent label wherever persistent.evid lists one.
func TestSolveWindowsOfHigherOrderModels(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		full bool
	}{
		{"pedigree1.uai", []string{"--window", "60", "--halo", "2"}, false},
		{"network-evid.uai", []string{"--window", "30"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(fixtures, c.name)
			code, _, errOut := partopt(append([]string{"solve", path, "-o", dir}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			data, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Plan       string  `json:"plan"`
				Free       int     `json:"free_variables"`
				Persistent int     `json:"persistent_variables"`
				Verified   bool    `json:"verified"`
				Score      float64 `json:"persistent_fraction"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if r.Plan != "regions" || !r.Verified || r.Persistent == 0 || (c.full && r.Persistent != r.Free) {
				t.Errorf("report: %s", data)
			}
			m, err := uai.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			labels, err := uai.ReadSolutionFile(filepath.Join(dir, "labels.sol"), m.NumVars())
			if err != nil {
				t.Fatal(err)
			}
			ev, err := uai.ReadEvidenceFile(filepath.Join(dir, "persistent.evid"))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range ev.Vars {
				if labels[v] != ev.Labels[i] {
					t.Errorf("variable %d: labels.sol %d, persistent.evid %d", v, labels[v], ev.Labels[i])
				}
			}
		})
	}
}

// TestSolveRefusesAHugeTable: a UAI factor over 30 binary variables declares a table
// of 2^30 entries; solve refuses it with one clear line, before allocating it.
func TestSolveRefusesAHugeTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "huge.uai")
	var b strings.Builder
	b.WriteString("MARKOV\n30\n")
	for range 30 {
		b.WriteString("2 ")
	}
	b.WriteString("\n1\n30")
	for v := range 30 {
		fmt.Fprintf(&b, " %d", v)
	}
	fmt.Fprintf(&b, "\n\n%d\n0.5 0.5\n", 1<<30)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := partopt("solve", path, "-o", filepath.Join(dir, "out"))
	if code != 2 || !strings.Contains(errOut, "would have more than 268435456 entries") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want 2 and one line refusing the table", code, errOut)
	}
}
