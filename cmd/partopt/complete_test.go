package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
)

// completionReport is what the completion tests read of report.json.
type completionReport struct {
	Energy     jsonFloat `json:"energy"`
	Optimal    *bool     `json:"optimal"`
	Completion *struct {
		Undecided  int            `json:"undecided_variables"`
		Components int            `json:"components"`
		Methods    map[string]int `json:"methods"`
		Open       []struct {
			FirstVariable int    `json:"first_variable"`
			Variables     int    `json:"variables"`
			Reason        string `json:"reason"`
		} `json:"open"`
	} `json:"completion"`
	Outputs []string `json:"outputs"`
}

// completionSuffix is the summary line's end that r's completion gives.
func completionSuffix(r completionReport) string {
	switch c := r.Completion; {
	case r.Optimal == nil:
		return ""
	case *r.Optimal && c.Components == 0:
		return " optimal (every variable persistent)"
	case *r.Optimal:
		return fmt.Sprintf(" optimal (%d variables left in %d components, completed)", c.Undecided, c.Components)
	}
	return fmt.Sprintf(" not proven optimal (%d of %d components open)", len(r.Completion.Open), r.Completion.Components)
}

func readCompletion(t *testing.T, dir string) completionReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, reportFile))
	if err != nil {
		t.Fatal(err)
	}
	var r completionReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSolveEndsWithAProvenOptimalLabeling: the default solve (and pbp by
// regions) of models whose proofs leave nothing, a component for enumeration,
// for dynamic programming or for toulbar2, with evidence and higher-order
// factors, writes a labeling
// of the minimum energy (toulbar2's proven optimum of the whole model), says
// optimal, writes optimal.sol, and verify re-checks it.
func TestSolveEndsWithAProvenOptimalLabeling(t *testing.T) {
	tb := oracle.Toulbar2{}
	if _, err := oracle.FindToulbar2(); err != nil {
		t.Skipf("the optima come from toulbar2: %v", err)
	}
	pbpRegions := []string{"--method", "pbp", "--window", "10"} // pbp by regions: every label alive where it proves none
	for _, c := range []struct {
		model  string
		method string // a method that must have solved a component ("" none left)
		args   []string
	}{
		{"tiny.uai", "", nil},
		{"network-evid.uai", "", nil},
		{"grid4x4.uai", "enumeration", nil},
		{"dense40.uai", "dynamic-programming", nil},
		{"pedigree1.uai", "dynamic-programming", nil},
		{"water.uai", "dynamic-programming", nil}, // within the table budget by min-fill's order
		{"404.wcsp.xz", "toulbar2", nil},
		{"network-evid.uai", "", pbpRegions},
		{"dense40.uai", "dynamic-programming", pbpRegions},
		{"pedigree1.uai", "dynamic-programming", pbpRegions},
		{"water.uai", "dynamic-programming", pbpRegions},
	} {
		t.Run(strings.Join(append([]string{c.model}, c.args...), " "), func(t *testing.T) {
			path := filepath.Join(fixtures, c.model)
			dir := filepath.Join(t.TempDir(), "out")
			// toulbar2's limit far past its seconds here: a loaded machine does not make the test fail.
			code, stdout, stderr := partopt(append([]string{"solve", path, "-o", dir, "--complete-budget", "engine=30m"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, " optimal (") {
				t.Errorf("summary %q does not say optimal", stdout)
			}
			r := readCompletion(t, dir)
			if r.Optimal == nil || !*r.Optimal || r.Completion == nil {
				t.Fatalf("report: optimal %v, completion %+v", r.Optimal, r.Completion)
			}
			if c.method != "" && r.Completion.Methods[c.method] == 0 || c.method == "" && r.Completion.Components != 0 {
				t.Errorf("completion %+v, want a component solved by %q", r.Completion, c.method)
			}
			p, err := job.LoadProblem(path, false)
			if err != nil {
				t.Fatal(err)
			}
			// The optimum: toulbar2's now, or the one 404.wcsp.xz ships (toulbar2's
			// default search takes half a minute to prove it).
			var want oracle.Result
			if x, err := uai.ReadSolutionFile(path+".sol", p.Model.NumVars()); err == nil && c.model == "404.wcsp.xz" {
				want.Energy = p.Model.Energy(x)
				want.Tolerance = 1e-6 * max(1, math.Abs(want.Energy))
			} else if want, err = tb.Solve(context.Background(), p.Model, evidenceFor(t, path)); err != nil || !want.Optimal {
				t.Fatalf("toulbar2: %v (optimal %v)", err, want.Optimal)
			}
			if e := float64(r.Energy); math.Abs(e-want.Energy) > want.Tolerance+1e-9*max(1, math.Abs(want.Energy)) {
				t.Errorf("energy %v, toulbar2's optimum %v (tolerance %v)", e, want.Energy, want.Tolerance)
			}
			labels, err := uai.ReadSolutionFile(filepath.Join(dir, "labels.sol"), p.Model.NumVars())
			if err != nil {
				t.Fatal(err)
			}
			optimal, err := uai.ReadSolutionFile(filepath.Join(dir, job.OptimalFile), p.Model.NumVars())
			if err != nil || !slices.Equal(labels, optimal) || !slices.Contains(r.Outputs, job.OptimalFile) {
				t.Errorf("optimal.sol %v (%v), labels.sol %v, outputs %v", optimal, err, labels, r.Outputs)
			}
			if code, stdout, stderr := partopt("verify", path, dir); code != 0 || !strings.Contains(stdout, "verified optimal labeling") {
				t.Errorf("verify: exit %d %q %s", code, stdout, stderr)
			}
		})
	}
}

// TestCompletionOnEverySharedModelIsTheOptimumOrNamesWhatIsOpen: on every
// model of ../shared/models the oracle knows, the default solve's completion
// (variable elimination and enumeration; no engine, whose "optimal" is
// toulbar2's word) either says optimal with the energy of the oracle's labeling
// (1e-6 relative), never below it, or names each open component and why; its
// labeling is never worse than a proven optimum. verify re-checks what it says.
func TestCompletionOnEverySharedModelIsTheOptimumOrNamesWhatIsOpen(t *testing.T) {
	optimal := 0
	for _, row := range testutil.ReadOracle(t, sharedModels) {
		t.Run(row.Path, func(t *testing.T) {
			path := filepath.Join(sharedModels, row.Path)
			p, err := job.LoadProblem(path, false)
			if err != nil {
				t.Fatal(err)
			}
			// The oracle's labeling's energy on the model as partopt reads it
			// (oracle.tsv prints three decimals).
			best, tol, of := row.Energy, 5e-4, "oracle.tsv"
			sol := filepath.Join(sharedModels, "oracle", strings.ReplaceAll(row.Path, "/", "__")+".sol")
			if x, err := uai.ReadSolutionFile(sol, p.Model.NumVars()); err == nil {
				best, tol, of = p.Model.Energy(x), 1e-6*max(1, math.Abs(p.Model.Energy(x))), "its labeling"
			}
			dir := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := partopt("solve", path, "-o", dir, "--complete-budget", "engine=off")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r := readCompletion(t, dir)
			if r.Optimal == nil || r.Completion == nil {
				t.Fatalf("report: optimal %v, completion %+v", r.Optimal, r.Completion)
			}
			e := float64(r.Energy)
			t.Logf("optimal %v at %.9g (%d open); the oracle's %.9g (%s, proven %v)", *r.Optimal, e, len(r.Completion.Open), best, of, row.Proven)
			switch {
			case *r.Optimal && (e < best-tol || row.Proven && e > best+tol):
				t.Errorf("optimal at energy %.9g, the oracle's labeling %.9g (proven %v)", e, best, row.Proven)
			case *r.Optimal:
				optimal++
			case len(r.Completion.Open) == 0:
				t.Errorf("not optimal, and no open component named: %+v", r.Completion)
			case row.Proven && e < best-tol:
				t.Errorf("energy %.9g below the proven optimum %.9g", e, best)
			}
			for _, o := range r.Completion.Open {
				if o.Variables == 0 || o.Reason == "" {
					t.Errorf("open component %+v: want its size and why", o)
				}
			}
			want := "verified optimal labeling"
			if !*r.Optimal {
				want = "not proven optimal"
			}
			if code, out, stderr := partopt("verify", path, dir); code != 0 || !strings.Contains(out, want) {
				t.Errorf("verify: exit %d %q %s: want %q (%s)", code, out, stderr, want, stdout)
			}
		})
	}
	t.Logf("%d models completed to a proven optimum", optimal)
}

// evidenceFor is MODEL.evid beside path, or none.
func evidenceFor(t *testing.T, path string) uai.Evidence {
	t.Helper()
	evid, ok := uai.EvidencePathFor(path)
	if !ok {
		return uai.Evidence{}
	}
	ev, err := uai.ReadEvidenceFile(evid)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestVerifyRejectsAWrongOptimum: a completed result whose labels.sol (and
// optimal.sol) take a worse alive label on a component, or whose optimal.sol
// and report disagree about the claim, is NOT verified.
func TestVerifyRejectsAWrongOptimum(t *testing.T) {
	path := filepath.Join(fixtures, "dense40.uai")
	dir := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := partopt("solve", path, "-o", dir); code != 0 {
		t.Fatal(stderr)
	}
	m, err := modelfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	domains, err := job.ReadDomains(filepath.Join(dir, job.DomainsFile), m)
	if err != nil {
		t.Fatal(err)
	}
	labels, err := uai.ReadSolutionFile(filepath.Join(dir, "labels.sol"), m.NumVars())
	if err != nil {
		t.Fatal(err)
	}
	// A worse labeling within the alive labels: one variable moved.
	var worse []int
	for v, ls := range domains {
		for _, l := range ls {
			x := slices.Clone(labels)
			x[v] = l
			if worse == nil && m.Energy(x) > m.Energy(labels)+1e-6 {
				worse = x
			}
		}
	}
	if worse == nil {
		t.Fatal("no alive label makes the labeling worse: nothing to tamper with")
	}
	writeSol := func(dir, name string, x []int) { writeSolution(t, filepath.Join(dir, name), x) }
	report, err := os.ReadFile(filepath.Join(dir, reportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		tamper func(dir string)
		want   string
	}{
		{"a worse labeling", func(d string) { writeSol(d, "labels.sol", worse); writeSol(d, job.OptimalFile, worse) }, "is not a minimum on the component"},
		{"optimal.sol missing", func(d string) { os.Remove(filepath.Join(d, job.OptimalFile)) }, "claims an optimal labeling"},
		{"optimal.sol not labels.sol", func(d string) { writeSol(d, job.OptimalFile, worse) }, "is not the labeling of labels.sol"},
		{"no claim, optimal.sol", func(d string) {
			os.WriteFile(filepath.Join(d, reportFile), []byte(strings.Replace(string(report), `"optimal": true`, `"optimal": false`, 1)), 0o644)
		}, "does not claim an optimal labeling"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			copyDir(t, dir, d)
			c.tamper(d)
			code, stdout, stderr := partopt("verify", path, d)
			if code != 1 || !strings.Contains(stderr, "NOT verified") || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q: want NOT verified, %q", code, stdout, stderr, c.want)
			}
		})
	}
	// A report is input: a budget past the largest is refused, not run.
	d := t.TempDir()
	copyDir(t, dir, d)
	huge := strings.Replace(string(report), `"states": 65536`, `"states": 1e300`, 1)
	if huge == string(report) {
		t.Fatal("report.json has no states budget to tamper with")
	}
	os.WriteFile(filepath.Join(d, reportFile), []byte(huge), 0o644)
	if code, _, stderr := partopt("verify", path, d); code != 2 || !strings.Contains(stderr, "the completion's budget: states=1e+300: want at most") {
		t.Errorf("a report asking for 1e300 states: exit %d, %q", code, stderr)
	}
}

// TestCompletionFlags: --complete=false writes what the proofs found alone;
// a budget too small for the remainder leaves it open, named with its reason,
// and says so; a malformed budget is refused.
func TestCompletionFlags(t *testing.T) {
	path := filepath.Join(fixtures, "dense40.uai")
	off := filepath.Join(t.TempDir(), "off")
	if code, stdout, stderr := partopt("solve", path, "-o", off, "--complete=false"); code != 0 || strings.Contains(stdout, "optimal") {
		t.Fatalf("exit %d %q %s", code, stdout, stderr)
	}
	if r := readCompletion(t, off); r.Optimal != nil || r.Completion != nil || slices.Contains(r.Outputs, job.OptimalFile) {
		t.Errorf("--complete=false: optimal %v, completion %v, outputs %v", r.Optimal, r.Completion, r.Outputs)
	}
	small := filepath.Join(t.TempDir(), "small")
	code, stdout, stderr := partopt("solve", path, "-o", small, "--complete-budget", "states=2,table=2,engine=off")
	if code != 0 || !strings.Contains(stdout, "not proven optimal (1 of 1 components open)") {
		t.Fatalf("exit %d %q %s", code, stdout, stderr)
	}
	r := readCompletion(t, small)
	if r.Optimal == nil || *r.Optimal || r.Completion == nil || len(r.Completion.Open) != 1 || r.Completion.Open[0].Reason == "" ||
		r.Completion.Open[0].Variables != r.Completion.Undecided {
		t.Errorf("report: optimal %v, completion %+v", r.Optimal, r.Completion)
	}
	if _, err := os.Stat(filepath.Join(small, job.OptimalFile)); err == nil {
		t.Error("optimal.sol written for an open component")
	}
	if e := float64(r.Energy); e > float64(readCompletion(t, off).Energy) {
		t.Errorf("an open completion's energy %v above the labeling it started from, %v", e, float64(readCompletion(t, off).Energy))
	}
	if code, stdout, stderr := partopt("verify", path, small); code != 0 || !strings.Contains(stdout, "labels.sol is not proven optimal") {
		t.Errorf("verify: exit %d %q %s", code, stdout, stderr)
	}
	for _, c := range []struct{ budget, want string }{
		{"states=0", "states=0: want a number ≥ 1"},
		{"table=x", "table=x: want a number ≥ 1"},
		{"engine=-1s", "engine=-1s: want a duration"},
		{"depth=3", `unknown limit "depth"`},
		{"states", "want key=value"},
		{"states=1e13", "want at most 1099511627776"},
		{"table=1e10", "want at most 4294967296"},
		{"engine=25h", "want at most 24h0m0s"},
	} {
		code, _, stderr := partopt("solve", path, "-o", filepath.Join(t.TempDir(), "x"), "--complete-budget", c.budget)
		if code != 2 || !strings.Contains(stderr, "--complete-budget") || !strings.Contains(stderr, c.want) {
			t.Errorf("--complete-budget %s: exit %d, %q: want %q", c.budget, code, stderr, c.want)
		}
	}
}

// componentsGrid writes a 32×24 .grid of 4 labels whose 8-pixel windows (halo
// 2, one round) leave components of every kind, by pbp+iri and by pbp alone:
// enumerated, by dynamic programming.
func componentsGrid(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src, path := filepath.Join(dir, "m.uai"), filepath.Join(dir, "m.grid")
	if err := uai.WriteFile(src, random.PottsDenoising(random.New(3), 32, 24, 4, 0.5, 4, 0.7)); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := partopt("convert", src, path); code != 0 {
		t.Fatal(stderr)
	}
	return path
}

// TestWindowedRasterSolveEndsOptimal: a .grid model solved by windows out of
// core — label elimination (the default) or pbp alone, whose undecided pixels
// keep every label — ends with a labeling at toulbar2's optimum, components
// left by the windows solved by enumeration and dynamic programming, which
// verify re-checks on labels.plf: moved to a worse label there (labels.sol and
// optimal.sol alike), it is NOT verified.
func TestWindowedRasterSolveEndsOptimal(t *testing.T) {
	if _, err := oracle.FindToulbar2(); err != nil {
		t.Skipf("the optimum comes from toulbar2: %v", err)
	}
	path := componentsGrid(t)
	m, err := modelfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := oracle.Toulbar2{}.Solve(context.Background(), m, uai.Evidence{})
	if err != nil || !want.Optimal {
		t.Fatalf("toulbar2: %v", err)
	}
	for _, method := range []string{"pbp+iri", "pbp"} {
		t.Run(method, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := partopt("solve", path, "-o", out, "--method", method, "--window", "8", "--halo", "2", "--rounds", "1", "--complete-budget", "engine=30m")
			if code != 0 {
				t.Fatal(stderr)
			}
			r := readCompletion(t, out)
			if r.Optimal == nil || r.Completion == nil || r.Completion.Methods["enumeration"] == 0 || r.Completion.Methods["dynamic-programming"] == 0 {
				t.Fatalf("%s: completion %+v: want components left by the windows, enumerated and by dynamic programming", stdout, r.Completion)
			}
			if !*r.Optimal || !strings.HasSuffix(strings.TrimSpace(stdout), completionSuffix(r)) {
				t.Fatalf("summary %q, completion %+v: want optimal", stdout, r.Completion)
			}
			if e := float64(r.Energy); math.Abs(e-want.Energy) > want.Tolerance+1e-9*max(1, math.Abs(want.Energy)) {
				t.Errorf("energy %v, toulbar2's optimum %v", e, want.Energy)
			}
			if code, stdout, stderr := partopt("verify", path, out); code != 0 || !strings.Contains(stdout, "verified optimal labeling") {
				t.Errorf("verify: exit %d %q %s", code, stdout, stderr)
			}
			// A completed pixel moved to a worse label it keeps alive.
			labels, err := uai.ReadSolutionFile(filepath.Join(out, "labels.sol"), m.NumVars())
			if err != nil {
				t.Fatal(err)
			}
			pers, err := uai.ReadEvidenceFile(filepath.Join(out, "persistent.evid"))
			if err != nil {
				t.Fatal(err)
			}
			var worse []int
			for v := range labels {
				if slices.Contains(pers.Vars, v) || worse != nil {
					continue
				}
				for l := range m.NumLabels(v) {
					x := slices.Clone(labels)
					x[v] = l
					if alive(t, out, v, l) && m.Energy(x) > m.Energy(labels)+1e-6 {
						worse = x
						break
					}
				}
			}
			if worse == nil {
				t.Fatal("no undecided pixel has a worse alive label: nothing to tamper with")
			}
			writeSolution(t, filepath.Join(out, "labels.sol"), worse)
			writeSolution(t, filepath.Join(out, job.OptimalFile), worse)
			writeRaster(t, filepath.Join(out, job.LabelTilesFile), worse)
			if code, stdout, stderr := partopt("verify", path, out); code != 1 || !strings.Contains(stderr, "NOT verified") || !strings.Contains(stderr, "is not a minimum on the component") {
				t.Errorf("a worse completed pixel: exit %d, %q %q: want NOT verified", code, stdout, stderr)
			}
		})
	}
}

// alive says whether label l of variable v is alive in a result's domains.txt
// (every label when the result has none: pbp's undecided variables).
func alive(t *testing.T, dir string, v, l int) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, job.DomainsFile))
	if os.IsNotExist(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	// A line of the variable count, then one a variable: its count, its labels.
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if v+1 >= len(lines) {
		t.Fatalf("%s lists no variable %d", job.DomainsFile, v)
	}
	return slices.Contains(strings.Fields(lines[v+1])[1:], fmt.Sprint(l))
}

// writeSolution writes x as a UAI MPE solution file.
func writeSolution(t *testing.T, path string, x []int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := uai.WriteSolution(f, x); err != nil {
		t.Fatal(err)
	}
}

// writeRaster rewrites the label file at path with the labeling x.
func writeRaster(t *testing.T, path string, x []int) {
	t.Helper()
	f, err := labelfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := f.Header()
	f.Close()
	g, err := labelfile.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]int32, len(x))
	for i, l := range x {
		vals[i] = int32(l)
	}
	if err := g.WriteRect(0, 0, h.Width, h.Height, vals); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRunAndSubmitEndOptimal: a raster whose windows leave components, run
// (embedded NATS) and submitted to a coordinator and a worker, by pbp+iri and
// by pbp alone, ends with solve's completed labeling byte for byte — labels,
// optimal.sol — and a report saying optimal, which verify re-checks on the
// fetched result.
func TestRunAndSubmitEndOptimal(t *testing.T) {
	path := componentsGrid(t)
	c := newCommands(t)
	c.start("coordinator", "coordinator", "--data", t.TempDir(), "--http", "")
	c.start("worker", "worker", "--slots", "2", "--grace", "0s", "--cache", t.TempDir())
	cli := func(args ...string) (int, string, string) { return partopt(append(args, "--nats", c.url)...) }
	completed := []string{labelsFile, optimalFile, labelTilesFile, persistentFile}
	for _, method := range []string{"pbp+iri", "pbp"} {
		t.Run(method, func(t *testing.T) {
			args := []string{"--method", method, "--window", "8", "--halo", "2", "--rounds", "1", "--complete-budget", "engine=off"}
			want := filepath.Join(t.TempDir(), "solve")
			if code, _, stderr := partopt(append([]string{"solve", path, "-o", want}, args...)...); code != 0 {
				t.Fatal(stderr)
			}
			if r := readCompletion(t, want); r.Optimal == nil || !*r.Optimal || r.Completion.Components == 0 {
				t.Fatalf("solve: optimal %v, completion %+v: want components, completed", r.Optimal, r.Completion)
			}
			run := filepath.Join(t.TempDir(), "run")
			code, stdout, stderr := partopt(append([]string{"run", path, "-o", run}, args...)...)
			if code != 0 {
				t.Fatal(stderr)
			}
			_, fetched := submitAndFetch(t, cli, append([]string{"submit", path}, args...)...)
			for _, got := range []string{run, fetched} {
				sameFiles(t, want, got, completed)
				if r := readCompletion(t, got); r.Optimal == nil || !*r.Optimal || !strings.HasSuffix(strings.TrimSpace(stdout), completionSuffix(r)) {
					t.Errorf("%s: optimal %v, completion %+v; run's summary %q", got, r.Optimal, r.Completion, stdout)
				}
				if code, out, stderr := partopt("verify", path, got); code != 0 || !strings.Contains(out, "verified optimal labeling") {
					t.Errorf("verify %s: exit %d %q %s", got, code, out, stderr)
				}
			}
		})
	}
}
