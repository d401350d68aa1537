package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/trws"
	"github.com/spf13/cobra"
)

// reportNum decodes a report.json number, or the strings "+Inf" / "-Inf" that stand
// for the values JSON numbers cannot hold.
type reportNum float64

func (x *reportNum) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "+Inf":
			*x = reportNum(math.Inf(1))
		case "-Inf":
			*x = reportNum(math.Inf(-1))
		default:
			return fmt.Errorf("unexpected string %q for a number", s)
		}
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*x = reportNum(f)
	return err
}

// parsedReport is report.json as the evaluation reads it.
type parsedReport struct {
	Method           string     `json:"method"`
	Model            string     `json:"model"`
	Variables        *int       `json:"variables"`
	FreeVariables    int        `json:"free_variables"`
	Observed         int        `json:"observed"`
	LowerBound       *reportNum `json:"lower_bound"`
	Energy           *reportNum `json:"energy"`
	Gap              *reportNum `json:"gap"`
	AgreeingFraction *float64   `json:"agreeing_fraction"`
	Agreement        *bool      `json:"agreement"`
	Iterations       *int       `json:"iterations"`
	Stop             string     `json:"stop"`
	Seconds          *float64   `json:"seconds"`
}

// solveOutputs holds what one `partopt solve` run left behind.
type solveOutputs struct {
	stdout, stderr string
	labels         []int
	report         parsedReport
}

// solveTRWS runs `partopt solve --method trws` with ctx into a fresh directory, fails
// the test unless it succeeds, and reads back labels.sol (as a labeling of n
// variables) and report.json, checking every field the contract requires is present.
func solveTRWS(t *testing.T, ctx context.Context, n int, args ...string) solveOutputs {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out", "nested") // -o need not exist
	var out, errOut bytes.Buffer
	if code := runContext(ctx, append([]string{"solve", "--method", "trws", "-o", dir}, args...), &out, &errOut); code != 0 {
		t.Fatalf("solve %v: exit %d: %s", args, code, errOut.String())
	}
	o := solveOutputs{stdout: out.String(), stderr: errOut.String()}
	var err error
	if o.labels, err = uai.ReadSolutionFile(filepath.Join(dir, "labels.sol"), n); err != nil {
		t.Fatalf("labels.sol: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatalf("report.json is not valid JSON:\n%s", data)
	}
	if err := json.Unmarshal(data, &o.report); err != nil {
		t.Fatalf("report.json: %v\n%s", err, data)
	}
	r := o.report
	if r.Method == "" || r.Model == "" || r.Variables == nil || r.LowerBound == nil || r.Energy == nil ||
		r.Gap == nil || r.AgreeingFraction == nil || r.Agreement == nil || r.Iterations == nil ||
		r.Stop == "" || r.Seconds == nil {
		t.Fatalf("report.json lacks a required field:\n%s", data)
	}
	if *r.Variables != n {
		t.Errorf("variables %d, want %d", *r.Variables, n)
	}
	if f := *r.AgreeingFraction; !(f >= 0 && f <= 1) {
		t.Errorf("agreeing_fraction %v outside [0,1]", f)
	}
	if *r.Seconds < 0 {
		t.Errorf("seconds %v", *r.Seconds)
	}
	if g, e, b := float64(*r.Gap), float64(*r.Energy), float64(*r.LowerBound); !math.IsInf(e, 0) && !math.IsInf(b, 0) &&
		math.Abs(g-(e-b)) > 1e-9*math.Max(1, math.Abs(e)) {
		t.Errorf("gap %v ≠ energy %v − lower_bound %v", g, e, b)
	}
	summary := fmt.Sprintf("iterations %d stop %s", *r.Iterations, r.Stop)
	if lines := strings.Split(strings.TrimSpace(o.stdout), "\n"); !strings.HasPrefix(lines[len(lines)-1], "energy ") ||
		!strings.HasSuffix(lines[len(lines)-1], summary) {
		t.Errorf("stdout %q: want the summary line \"energy … %s\" last", o.stdout, summary)
	}
	o.checkEnergyMatchesEnergyCommand(t, args[len(args)-1], dir, slices.Contains(args, "--no-evid"))
	return o
}

// checkEnergyMatchesEnergyCommand: report.json's energy is what `partopt energy MODEL
// DIR/labels.sol` prints, to 1e-9 relative.
func (o solveOutputs) checkEnergyMatchesEnergyCommand(t *testing.T, modelPath, dir string, noEvid bool) {
	t.Helper()
	args := []string{"energy", modelPath, filepath.Join(dir, "labels.sol")}
	if noEvid {
		args = append(args, "--no-evid")
	}
	code, out, errOut := partopt(args...)
	if code != 0 {
		t.Fatalf("partopt energy: exit %d: %s", code, errOut)
	}
	if want, got := lastEnergy(t, out), float64(*o.report.Energy); !testutil.CloseTo(got, want, 1e-9) {
		t.Errorf("report energy %v, `partopt energy` %v", got, want)
	}
}

// grid4x4Optimum is the proven optimum of grid4x4 from testdata/energies.tsv.
func grid4x4Optimum(t *testing.T) float64 {
	for _, row := range testutil.ReadTSV(t, filepath.Join(fixtures, "energies.tsv")) {
		if row[1] == "grid4x4.uai.sol" {
			v, err := strconv.ParseFloat(row[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("energies.tsv has no grid4x4.uai.sol row")
	return 0
}

func TestSolveGrid4x4WritesLabelingAndReport(t *testing.T) {
	opt := grid4x4Optimum(t)
	o := solveTRWS(t, context.Background(), 16, filepath.Join(fixtures, "grid4x4.uai.gz"))
	r := o.report
	e, lb := float64(*r.Energy), float64(*r.LowerBound)
	if lb > e+1e-9 {
		t.Errorf("lower_bound %v > energy %v", lb, e)
	}
	if lb > opt+1e-6 {
		t.Errorf("lower_bound %v above the optimum %v", lb, opt)
	}
	if e < opt-1e-9 {
		t.Errorf("energy %v below the optimum %v", e, opt)
	}
	if r.Method != "trws" || *r.Iterations < 1 || o.stderr != "" {
		t.Errorf("method %q, iterations %d, stderr %q: want trws, ≥ 1, quiet", r.Method, *r.Iterations, o.stderr)
	}
}

func TestSolveZeroGapToleranceRunsExactlyMaxIterations(t *testing.T) {
	o := solveTRWS(t, context.Background(), 16, "--max-iterations", "7", "--gap-tolerance", "0", filepath.Join(fixtures, "grid4x4.uai.gz"))
	if *o.report.Iterations != 7 || o.report.Stop != "iterations" {
		t.Errorf("iterations %d, stop %q; want 7, iterations", *o.report.Iterations, o.report.Stop)
	}
}

// writeChain writes a 5-variable chain (a tree, where TRW-S is exact) with distinct
// random probabilities, and returns its path.
func writeChain(t *testing.T, dir string) string {
	labels := []int{3, 2, 3, 2, 3}
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	fmt.Fprintf(&b, "MARKOV\n%d\n%s\n%d\n", len(labels), strings.Trim(fmt.Sprint(labels), "[]"), 2*len(labels)-1)
	for v := range labels {
		fmt.Fprintf(&b, "1 %d\n", v)
	}
	for v := 0; v+1 < len(labels); v++ {
		fmt.Fprintf(&b, "2 %d %d\n", v, v+1)
	}
	table := func(n int) {
		fmt.Fprintf(&b, "%d\n", n)
		for range n {
			fmt.Fprintf(&b, " %.6f", 0.05+rng.Float64())
		}
		b.WriteString("\n")
	}
	for _, k := range labels {
		table(k)
	}
	for v := 0; v+1 < len(labels); v++ {
		table(labels[v] * labels[v+1])
	}
	path := filepath.Join(dir, "chain.uai")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSolveAppliesEvidence(t *testing.T) {
	path := writeChain(t, t.TempDir())
	m, err := uai.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	free, _, err := oracle.BruteForce(m, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// Observe variables 1 and 3 at labels the unconditioned optimum does not take.
	fixed := []int{-1, 1 - free[1], -1, 1 - free[3], -1}
	os.WriteFile(path+".evid", []byte(fmt.Sprintf("2 1 %d 3 %d\n", fixed[1], fixed[3])), 0o644)
	c, err := m.Condition(fixed)
	if err != nil {
		t.Fatal(err)
	}
	_, opt, err := oracle.BruteForce(c.Model, 1000)
	if err != nil {
		t.Fatal(err)
	}

	o := solveTRWS(t, context.Background(), 5, path)
	if o.labels[1] != fixed[1] || o.labels[3] != fixed[3] {
		t.Errorf("labels.sol %v ignores the evidence (variable 1 → %d, 3 → %d)", o.labels, fixed[1], fixed[3])
	}
	if !strings.Contains(o.stderr, "applied evidence "+path+".evid (2 observed variables)") {
		t.Errorf("stderr %q lacks the evidence note", o.stderr)
	}
	r := o.report
	if r.FreeVariables != 3 || r.Observed != 2 {
		t.Errorf("free_variables %d, observed %d; want 3, 2", r.FreeVariables, r.Observed)
	}
	if e := float64(*r.Energy); !testutil.CloseTo(e, opt, 1e-9) {
		t.Errorf("energy %v, the optimum with the evidence is %v (TRW-S is exact on a chain)", e, opt)
	}
	if lb := float64(*r.LowerBound); lb > opt+1e-6*math.Max(1, math.Abs(opt)) {
		t.Errorf("lower_bound %v above the optimum %v", lb, opt)
	}

	o = solveTRWS(t, context.Background(), 5, "--no-evid", path)
	if strings.Contains(o.stderr, "evidence") || o.report.FreeVariables != 5 {
		t.Errorf("--no-evid: stderr %q, free_variables %d", o.stderr, o.report.FreeVariables)
	}
}

func TestSolveEverythingObserved(t *testing.T) {
	path := writeChain(t, t.TempDir())
	evid := []int{2, 0, 1, 1, 0}
	os.WriteFile(path+".evid", []byte("5 0 2 1 0 2 1 3 1 4 0\n"), 0o644)
	o := solveTRWS(t, context.Background(), 5, path)
	r := o.report
	if fmt.Sprint(o.labels) != fmt.Sprint(evid) || r.FreeVariables != 0 || *r.AgreeingFraction != 1 || !*r.Agreement {
		t.Errorf("labels %v, free %d, agreeing_fraction %v, agreement %v; want %v, 0, 1, true",
			o.labels, r.FreeVariables, *r.AgreeingFraction, *r.Agreement, evid)
	}
	if e, lb := float64(*r.Energy), float64(*r.LowerBound); !testutil.CloseTo(e, lb, 1e-9) {
		t.Errorf("energy %v, lower_bound %v: with no free variable both are the offset", e, lb)
	}
}

// TestSolveCanceledWritesOutputs: an interrupted run (here, before its first
// iteration) still writes a labeling and a report with stop "canceled", exits 0 and
// says so on stderr; the bound of no iteration is the string "-Inf".
func TestSolveCanceledWritesOutputs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := solveTRWS(t, ctx, 16, filepath.Join(fixtures, "grid4x4.uai.gz"))
	if o.report.Stop != "canceled" || !strings.Contains(o.stderr, "interrupted") {
		t.Errorf("stop %q, stderr %q; want canceled and a note", o.report.Stop, o.stderr)
	}
	if lb := float64(*o.report.LowerBound); !math.IsInf(lb, -1) {
		t.Errorf("lower_bound %v after no iteration, want -Inf", lb)
	}
}

func TestSolveBadInputExitsTwoWithOneLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	grid := filepath.Join(fixtures, "grid4x4.uai.gz")
	out := filepath.Join(dir, "out")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown method", []string{"solve", "--method", "frobnicate", grid, "-o", out}, `unknown --method "frobnicate"`},
		{"missing -o", []string{"solve", grid}, `required flag(s) "output" not set`},
		{"order 3", []string{"solve", "--method", "trws", filepath.Join(fixtures, "network-evid.uai"), "-o", out}, "the trws method needs a pairwise model"},
		{"order 3 without evidence", []string{"solve", "--method", "trws", "--no-evid", filepath.Join(fixtures, "network.uai"), "-o", out}, "--method srmp solves any order"},
		{"boundary", []string{"solve", "--boundary", "outer", grid, "-o", out}, `--boundary "outer": want invariant or original`},
		{"boundary with trws", []string{"solve", "--method", "trws", "--boundary", "original", grid, "-o", out}, "only --method pbp has boundary potentials"},
		{"missing model", []string{"solve", filepath.Join(dir, "none.uai"), "-o", out}, "no such file"},
		{"output is a file", []string{"solve", grid, "-o", filepath.Join(file, "sub")}, "--output"},
		{"max iterations", []string{"solve", "--max-iterations", "-1", grid, "-o", out}, "--max-iterations -1"},
		{"gap tolerance", []string{"solve", "--gap-tolerance", "-1", grid, "-o", out}, "--gap-tolerance -1"},
		{"check every", []string{"solve", "--check-every", "0", grid, "-o", out}, "--check-every 0"},
		{"argument count", []string{"solve", "-o", out}, "accepts 1 arg(s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, errOut := partopt(c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stdout %q)", code, stdout)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "partopt: ") || !strings.Contains(errOut, c.want) {
				t.Errorf("stderr %q, want one line containing %q", errOut, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("-o %s was created by a refused run", out)
			}
		})
	}
}

// TestSolveSharedSegmentation: on a real segmentation model the bound stays below
// toulbar2's proven optimum and the labeling above it.
func TestSolveSharedSegmentation(t *testing.T) {
	const name = "uai2014-mroavi/MAP/Segmentation_12.uai"
	path := filepath.Join(sharedModels, name)
	testutil.SkipWithoutShared(t, path)
	opt := testutil.Optimum(t, sharedModels, name)
	m, err := uai.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := solveTRWS(t, context.Background(), m.NumVars(), path).report
	if lb := float64(*r.LowerBound); lb > opt+1e-3 {
		t.Errorf("lower_bound %v above the optimum %v", lb, opt)
	}
	if e := float64(*r.Energy); e < opt-1e-3 {
		t.Errorf("energy %v below the optimum %v", e, opt)
	}
}

func TestReportEncodesInfinitiesAsStrings(t *testing.T) {
	data, err := json.Marshal(map[string]jsonFloat{"e": jsonFloat(math.Inf(1)), "b": jsonFloat(math.Inf(-1)), "x": 1.5})
	if err != nil || string(data) != `{"b":"-Inf","e":"+Inf","x":1.5}` {
		t.Errorf("got %s, %v", data, err)
	}
	// and reads them back (verify reads a report: its completion's states may be +Inf).
	var back map[string]jsonFloat
	if err := json.Unmarshal(data, &back); err != nil || !math.IsInf(float64(back["e"]), 1) || !math.IsInf(float64(back["b"]), -1) || back["x"] != 1.5 {
		t.Errorf("read back %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"e":"big"}`), &back); err == nil {
		t.Error(`"big" read as a number`)
	}
	code, out, _ := partopt("solve", "--help")
	if code != 0 || !strings.Contains(out, `"+Inf"`) {
		t.Errorf("solve --help: exit %d, must document the \"+Inf\" encoding:\n%s", code, out)
	}
}

// TestStatusLineOffATerminalLogsEvery: off a terminal (a buffer, a file) the
// status line is a progress event of the command's log format, the first
// logEvery after the start, then at most every logEvery.
func TestStatusLineOffATerminalLogsEvery(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	for _, w := range []io.Writer{f, &buf} {
		cmd := &cobra.Command{}
		cmd.SetErr(w)
		addLogFlags(cmd)
		if err := cmd.ParseFlags([]string{"--log-format", "json"}); err != nil {
			t.Fatal(err)
		}
		s := newStatusLine(cmd, 10)
		if s == nil || s.log == nil {
			t.Fatalf("%T: not log events", w)
		}
		now := time.Unix(0, 0)
		s.now, s.last = func() time.Time { return now }, now
		p := trws.Progress{Iteration: 1, LowerBound: -3, Energy: -2, Agreeing: 1, Variables: 4}
		s.update(p)
		now = now.Add(logEvery / 2)
		s.update(p)
		if w == &buf && buf.Len() != 0 {
			t.Fatalf("an event before logEvery: %s", buf.String())
		}
		now = now.Add(logEvery)
		p.Iteration = 3
		s.update(p)
		s.clear()
	}
	var ev struct{ Msg, Status string }
	if err := json.Unmarshal(buf.Bytes(), &ev); err != nil || ev.Msg != "progress" || !strings.HasPrefix(ev.Status, "iter 3/10") {
		t.Errorf("%q, %v", buf.String(), err)
	}
}

func TestStatusLineThrottlesAndClears(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	s := &statusLine{w: &buf, width: 40, maxIter: 10, every: time.Second, now: func() time.Time { return now }}
	p := trws.Progress{Iteration: 1, Bound: -3, LowerBound: -3, Energy: -2, Agreeing: 1, Variables: 4}
	s.update(p)
	p.Iteration = 2
	s.update(p) // within a second: not shown
	now = now.Add(2 * time.Second)
	p.Iteration = 3
	s.update(p)
	s.clear()
	got := buf.String()
	want := "\r" + progressText(trws.Progress{Iteration: 1, LowerBound: -3, Energy: -2, Agreeing: 1, Variables: 4}, 10)[:39] + "\x1b[K"
	if !strings.HasPrefix(got, want) || strings.Contains(got, "iter 2/") || !strings.Contains(got, "\riter 3/10") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("status output %q", got)
	}
	if text := progressText(p, 10); !strings.Contains(text, "gap 1") || !strings.Contains(text, "agreeing 25.0%") {
		t.Errorf("progress text %q", text)
	}
}

// TestSolveFlagDefaults: the defaults are part of the CLI contract (no --method:
// the library's, pbp+iri for a model solved whole and pbp by windows).
func TestSolveFlagDefaults(t *testing.T) {
	want := map[string]string{"method": "", "boundary": "invariant", "max-iterations": "0", "gap-tolerance": "1e-09",
		"stall-iterations": "100", "check-every": "5", "no-evid": "false", "output": ""}
	fl := newSolveCmd().Flags()
	for name, def := range want {
		if f := fl.Lookup(name); f == nil || f.DefValue != def {
			t.Errorf("--%s: %+v, want default %q", name, f, def)
		}
	}
	if f := fl.ShorthandLookup("o"); f == nil || f.Name != "output" {
		t.Errorf("-o is %+v, want --output", f)
	}
}

// TestReadmeExampleSolves runs the README's first command on its bundled model with
// the default method, pbp+iri: the relaxation is tight there, so every variable is
// proven persistent (every other label eliminated), the labeling is optimal, and
// verify accepts the proof.
func TestReadmeExampleSolves(t *testing.T) {
	out := t.TempDir()
	model := filepath.Join(fixtures, "denoise32.uai.gz")
	code, stdout, stderr := partopt("solve", model, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "persistent 1 variables 1024/1024 eliminated 3072/3072 labels (1) ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("summary %q, want \"persistent 1 variables 1024/1024 eliminated 3072/3072 labels (1) …\"", stdout)
	}
	for _, f := range []string{"labels.sol", "persistent.evid", "certificate.gob", "domains.txt", "report.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if code, stdout, stderr := partopt("verify", model, out); code != 0 || !strings.HasPrefix(stdout, "verified 1024 persistent variables, certificate gap ") {
		t.Errorf("verify: exit %d, %q %q", code, stdout, stderr)
	}
}

// TestSolveSRMPHigherOrder: --method srmp solves the higher-order fixtures (orders 3,
// 5 and 6, forbidden states): the bound never exceeds the energy of the optimal
// labeling shipped with the fixture (toulbar2's), labels.sol has the reported energy,
// and on network.uai, whose relaxation is tight, the bound meets the optimum.
func TestSolveSRMPHigherOrder(t *testing.T) {
	for _, name := range []string{"network.uai", "pedigree1.uai", "water.uai"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(fixtures, name)
			m, err := uai.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			opt, err := uai.ReadSolutionFile(path+".sol", m.NumVars())
			if err != nil {
				t.Fatal(err)
			}
			best := m.Energy(opt)
			o := solveTRWS(t, context.Background(), m.NumVars(), "--method", "srmp", path)
			r := o.report
			lb, e := float64(*r.LowerBound), float64(*r.Energy)
			if r.Method != "srmp" || lb > best+1e-9*math.Max(1, math.Abs(best)) || e != m.Energy(o.labels) {
				t.Errorf("method %q, bound %v, energy %v (labels.sol: %v); optimum %v", r.Method, lb, e, m.Energy(o.labels), best)
			}
			if name == "network.uai" && (math.Abs(lb-best) > 1e-6 || e != best) {
				t.Errorf("network.uai: bound %v, energy %v; want both at the optimum %v", lb, e, best)
			}
		})
	}
}
