package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
)

const fixtures = "../../testdata"

// sharedModels is the models directory of the shared benchmark data.
var sharedModels = testutil.SharedPath("models")

// partopt runs the CLI in-process and returns its exit code, stdout and stderr.
func partopt(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// lastEnergy parses the contract's last stdout line, "energy <value>".
func lastEnergy(t *testing.T, stdout string) float64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	v, ok := strings.CutPrefix(last, "energy ")
	if !ok {
		t.Fatalf("last line %q, want \"energy <value>\"", last)
	}
	e, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("last line %q: %v", last, err)
	}
	if math.IsInf(e, 1) && v != "+Inf" {
		t.Errorf("forbidden energy printed as %q, want +Inf", v)
	}
	return e
}

// TestEnergyOfCommittedFixtures: every fixture labeling (UAI, LG, BAYES, .gz, .xz,
// WCSP, evidence, one-label variables, forbidden states) against the independent
// reference of scripts/refenergy.py.
func TestEnergyOfCommittedFixtures(t *testing.T) {
	for _, row := range testutil.ReadTSV(t, filepath.Join(fixtures, "energies.tsv")) {
		t.Run(row[0]+"/"+row[1], func(t *testing.T) {
			want, _ := strconv.ParseFloat(row[2], 64)
			code, out, errOut := partopt("energy", filepath.Join(fixtures, row[0]), filepath.Join(fixtures, row[1]))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := lastEnergy(t, out); !testutil.CloseTo(got, want, 1e-9) {
				t.Errorf("energy %v, reference %v", got, want)
			}
			_, hasEvid := os.Stat(filepath.Join(fixtures, row[0]) + ".evid")
			if (hasEvid == nil) != strings.Contains(errOut, "applied evidence") {
				t.Errorf("stderr %q: the evidence note must appear exactly when MODEL.evid exists", errOut)
			}
		})
	}
}

// TestEnergyReproducesSharedOracle: `partopt energy` on every instance of
// ../shared/models/INDEX.md matches the independent reference energies to 1e-6 relative
// and the oracle table to its printed precision (three decimals).
func TestEnergyReproducesSharedOracle(t *testing.T) {
	testutil.SkipWithoutShared(t, sharedModels)
	oracle := map[string]float64{}
	for _, r := range testutil.ReadOracle(t, sharedModels) {
		oracle[r.Path] = r.Energy
	}
	rows := testutil.ReadTSV(t, filepath.Join(fixtures, "shared-energies.tsv"))
	if len(rows) != len(oracle) {
		t.Errorf("reference has %d rows, oracle %d", len(rows), len(oracle))
	}
	for _, row := range rows {
		t.Run(row[0], func(t *testing.T) {
			want, _ := strconv.ParseFloat(row[2], 64)
			code, out, errOut := partopt("energy", filepath.Join(sharedModels, row[0]), filepath.Join(sharedModels, row[1]))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := lastEnergy(t, out)
			if !testutil.CloseTo(got, want, 1e-6) {
				t.Errorf("energy %.12g, reference %.12g", got, want)
			}
			if o, ok := oracle[row[0]]; !ok || math.Abs(got-o) > 5e-4+1e-9*math.Abs(o) {
				t.Errorf("energy %.6f, oracle.tsv says %v", got, o)
			}
		})
	}
}

func TestEnergyEvidenceIsAppliedUnlessDisabled(t *testing.T) {
	model := filepath.Join(fixtures, "network-evid.uai")
	contra := filepath.Join(fixtures, "network-evid-contradicts.sol")
	code, out, errOut := partopt("energy", model, contra)
	if code != 0 || !math.IsInf(lastEnergy(t, out), 1) || !strings.Contains(errOut, "evidence") {
		t.Fatalf("with evidence: exit %d, out %q, err %q; want +Inf and a note", code, out, errOut)
	}
	code, out, errOut = partopt("energy", "--no-evid", model, contra)
	if code != 0 || math.IsInf(lastEnergy(t, out), 1) || strings.Contains(errOut, "evidence") {
		t.Fatalf("--no-evid: exit %d, out %q, err %q; want a finite energy and no note", code, out, errOut)
	}
}

func TestInfoDescribesTheModel(t *testing.T) {
	code, out, errOut := partopt("info", filepath.Join(fixtures, "pedigree1.uai"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"variables  334", "with one label", "order 5: 4", "explicit:", "forbidden ", "memory "} {
		if !strings.Contains(out, want) {
			t.Errorf("info output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = partopt("info", "--json", filepath.Join(fixtures, "grid4x4.uai.gz"))
	var info struct {
		Variables     int            `json:"variables"`
		FactorsByKind map[string]int `json:"factors_by_kind"`
		MemoryBytes   int64          `json:"memory_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || code != 0 {
		t.Fatalf("info --json: exit %d, %v:\n%s", code, err, out)
	}
	if info.Variables != 16 || info.MemoryBytes <= 0 || info.FactorsByKind["explicit"] == 0 {
		t.Errorf("info --json: %+v", info)
	}
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.uai")
	os.WriteFile(bad, []byte("MARKOV\n2\n2 2\n1\n2 0 1\n4\n0.5 0.5 nan 1\n"), 0o644)
	short := filepath.Join(dir, "short.sol")
	os.WriteFile(short, []byte("0 1\n"), 0o644)
	outOfRange := filepath.Join(dir, "range.sol")
	os.WriteFile(outOfRange, []byte("MPE\n4 1 0 5 1\n"), 0o644)
	tiny := filepath.Join(fixtures, "tiny.uai")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing model", []string{"energy", filepath.Join(dir, "none.uai"), short}, "no such file"},
		{"malformed model", []string{"energy", bad, short}, "bad.uai: line 7: factor 0, entry 2: NaN is not allowed"},
		{"labeling length", []string{"energy", tiny, short}, "do not form a labeling of 4 variables"},
		{"label out of range", []string{"energy", tiny, outOfRange}, "variable 2: label 5 out of range [0,3)"},
		{"unknown format", []string{"info", filepath.Join(dir, "m.txt")}, "unknown model format"},
		{"argument count", []string{"energy", tiny}, "accepts 2 arg(s)"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"unknown flag", []string{"info", "--bogus", tiny}, "unknown flag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := partopt(c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stdout %q)", code, out)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "partopt: ") || !strings.Contains(errOut, c.want) {
				t.Errorf("stderr %q, want one line containing %q", errOut, c.want)
			}
		})
	}
}

func TestHelpSucceeds(t *testing.T) {
	code, out, _ := partopt("--help")
	if code != 0 || !strings.Contains(out, "energy") || !strings.Contains(out, "info") {
		t.Errorf("--help: exit %d:\n%s", code, out)
	}
}

// TestCPUProfileOnRequest: $PARTOPT_CPUPROFILE writes a pprof CPU profile
// (gzip-compressed protobuf) of the command, whose exit code is kept; a path
// that cannot be written is bad input, and the command does not run.
func TestCPUProfileOnRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	code := profiled(path, io.Discard, func() int {
		return run([]string{"info", filepath.Join(fixtures, "denoise32.uai.gz")}, io.Discard, io.Discard)
	})
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("profile: %d bytes, %v", len(data), err)
	}
	if code := profiled("", io.Discard, func() int { return exitInternal }); code != exitInternal {
		t.Errorf("without a profile the command's exit code is kept: %d", code)
	}
	var stderr strings.Builder
	ran := false
	code = profiled(filepath.Join(t.TempDir(), "missing", "cpu.pprof"), &stderr, func() int { ran = true; return exitOK })
	if code != exitBadInput || ran || !strings.Contains(stderr.String(), "PARTOPT_CPUPROFILE") {
		t.Errorf("unwritable profile: exit %d, ran %v, %q", code, ran, stderr.String())
	}
}
