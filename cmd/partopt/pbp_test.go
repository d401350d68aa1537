package main

import (
	"bytes"
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
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// parsedPBPReport is report.json of the pbp method as the evaluation reads it.
type parsedPBPReport struct {
	Method              string     `json:"method"`
	Boundary            string     `json:"boundary"`
	Solver              string     `json:"solver"`
	Model               string     `json:"model"`
	Variables           *int       `json:"variables"`
	FreeVariables       *int       `json:"free_variables"`
	Observed            int        `json:"observed"`
	PersistentVariables *int       `json:"persistent_variables"`
	PersistentFraction  *float64   `json:"persistent_fraction"`
	Fraction            *float64   `json:"fraction"`
	PruningIterations   *int       `json:"pruning_iterations"`
	SolverIterations    *int       `json:"solver_iterations"`
	LowerBound          *reportNum `json:"lower_bound"`
	Energy              *reportNum `json:"energy"`
	CertificateGap      *reportNum `json:"certificate_gap"`
	Verified            *bool      `json:"verified"`
	Seconds             *float64   `json:"seconds"`
	SolverSeconds       *float64   `json:"solver_seconds"`
}

// pbpOutputs holds what one `partopt solve` (method pbp) run left behind.
type pbpOutputs struct {
	dir            string
	stdout, stderr string
	labels         []int // labels.sol
	listed         []int // persistent.evid: a label per model variable, or −1
	report         parsedPBPReport
}

// persistent is the number of variables persistent.evid lists.
func (o pbpOutputs) persistent() int {
	k := 0
	for _, l := range o.listed {
		if l >= 0 {
			k++
		}
	}
	return k
}

// solvePBP runs `partopt solve` with the default method on modelPath (extra flags in
// args), fails the test unless it succeeds, reads back the four files and checks that
// they agree with each other, with `partopt energy` and with `partopt verify`.
func solvePBP(t *testing.T, modelPath string, args ...string) pbpOutputs {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out", "nested") // -o need not exist
	code, stdout, stderr := partopt(append(append([]string{"solve", "-o", dir, "--method", "pbp"}, args...), modelPath)...)
	if code != 0 {
		t.Fatalf("solve %v %s: exit %d: %s", args, modelPath, code, stderr)
	}
	o := pbpOutputs{dir: dir, stdout: stdout, stderr: stderr}
	noEvid := slices.Contains(args, "--no-evid")
	m, err := uai.ReadFile(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	n := m.NumVars()
	if o.labels, err = uai.ReadSolutionFile(filepath.Join(dir, "labels.sol"), n); err != nil {
		t.Fatalf("labels.sol: %v", err)
	}
	ev, err := uai.ReadEvidenceFile(filepath.Join(dir, "persistent.evid"))
	if err != nil {
		t.Fatalf("persistent.evid: %v", err)
	}
	if o.listed, err = ev.Fixed(m.LabelCounts()); err != nil {
		t.Fatalf("persistent.evid: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &o.report); err != nil {
		t.Fatalf("report.json: %v\n%s", err, data)
	}
	r := o.report
	if r.Method != "pbp" || r.Boundary == "" || r.Model != modelPath || r.Variables == nil || r.FreeVariables == nil ||
		r.PersistentVariables == nil || r.PersistentFraction == nil || r.Fraction == nil || r.PruningIterations == nil ||
		r.SolverIterations == nil || r.LowerBound == nil || r.Energy == nil || r.CertificateGap == nil ||
		r.Verified == nil || r.Seconds == nil || r.SolverSeconds == nil {
		t.Fatalf("report.json lacks a required field:\n%s", data)
	}
	free, k := *r.FreeVariables, *r.PersistentVariables
	if *r.Variables != n || free+r.Observed != n || !*r.Verified {
		t.Errorf("variables %d, free %d, observed %d, verified %v; want %d in all, verified", *r.Variables, free, r.Observed, *r.Verified, n)
	}
	if listed := o.persistent(); listed != k+r.Observed {
		t.Errorf("persistent.evid lists %d variables, report %d persistent + %d observed", listed, k, r.Observed)
	}
	if want := 1.0; free > 0 && !testutil.CloseTo(*r.Fraction, float64(k)/float64(free), 1e-12) || free == 0 && *r.Fraction != want {
		t.Errorf("fraction %v, persistent %d of %d free", *r.Fraction, k, free)
	}
	if f := *r.PersistentFraction; !(f >= 0 && f <= 1) || (k == free) != (f == 1) && free > 0 {
		t.Errorf("persistent_fraction %v with %d of %d persistent", f, k, free)
	}
	for v, l := range o.listed {
		if l >= 0 && o.labels[v] != l {
			t.Errorf("variable %d: labels.sol %d, persistent.evid %d", v, o.labels[v], l)
		}
	}
	e, lb := float64(*r.Energy), float64(*r.LowerBound)
	if lb > e+1e-9*math.Max(1, math.Abs(e)) {
		t.Errorf("lower_bound %v > energy %v", lb, e)
	}
	summary := fmt.Sprintf("persistent %.6g variables %d/%d iterations %d energy %s bound %s gap %s",
		*r.PersistentFraction, k, free, *r.PruningIterations, formatEnergy(e), formatEnergy(lb), formatEnergy(float64(*r.CertificateGap))) +
		completionSuffix(readCompletion(t, dir))
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); lines[len(lines)-1] != summary {
		t.Errorf("stdout %q: want the summary line %q last", stdout, summary)
	}
	checkEnergyCommand(t, modelPath, dir, noEvid, e)
	vargs := []string{"verify", modelPath, dir}
	if noEvid {
		vargs = append(vargs, "--no-evid")
	}
	code, vout, verr := partopt(vargs...)
	if want := fmt.Sprintf("verified %d persistent variables, certificate gap ", k); code != 0 || !strings.HasPrefix(vout, want) {
		t.Errorf("verify: exit %d, stdout %q, stderr %q; want 0 and %q…", code, vout, verr, want)
	}
	return o
}

// checkEnergyCommand: the report's energy is what `partopt energy MODEL DIR/labels.sol`
// prints, to 1e-9 relative.
func checkEnergyCommand(t *testing.T, modelPath, dir string, noEvid bool, energy float64) {
	t.Helper()
	args := []string{"energy", modelPath, filepath.Join(dir, "labels.sol")}
	if noEvid {
		args = append(args, "--no-evid")
	}
	code, out, errOut := partopt(args...)
	if code != 0 {
		t.Fatalf("partopt energy: exit %d: %s", code, errOut)
	}
	if want := lastEnergy(t, out); !testutil.CloseTo(energy, want, 1e-9) {
		t.Errorf("report energy %v, `partopt energy` %v", energy, want)
	}
}

// writeFrustrated writes a 6-variable binary model whose LP relaxation is not tight,
// and returns its path: a frustrated triangle 0–1–2 (each edge costs 1 when its ends
// agree) hangs by the asymmetric edge 2–3 off a chain 3–4–5 whose unary terms favour
// label 0. Nothing in the triangle is persistent; the chain is, all of it with the
// invariant boundary, only 4 and 5 with the original one (at 3 it is weaker: the edge
// 2–3 gives min_a θ(a,1) − max_a θ(a,0) = −0.3 instead of min_a [θ(a,1) − θ(a,0)] = 0).
func writeFrustrated(t *testing.T, dir string) string {
	t.Helper()
	b := model.NewBuilder([]int{2, 2, 2, 2, 2, 2})
	agree := []float64{1, 0, 0, 1}
	tables := []struct {
		vars []int
		tab  []float64
	}{
		{[]int{0}, []float64{0, 0.1}},
		{[]int{0, 1}, agree}, {[]int{1, 2}, agree}, {[]int{0, 2}, agree},
		{[]int{2, 3}, []float64{0, 0, 0.3, 1}},
		{[]int{3}, []float64{0, 0.2}},
		{[]int{3, 4}, []float64{0, 0.05, 0.05, 0}},
		{[]int{4, 5}, []float64{0, 0.5, 0.5, 0}},
		{[]int{4}, []float64{0, 5}}, {[]int{5}, []float64{0, 5}},
	}
	for _, x := range tables {
		if err := b.AddTable(x.vars, x.tab); err != nil {
			t.Fatal(err)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "frustrated.uai")
	if err := uai.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSolvePBPDenoiseIsFullyPersistent(t *testing.T) {
	o := solvePBP(t, filepath.Join(fixtures, "denoise32.uai.gz"))
	r := o.report
	if *r.PersistentFraction != 1 || *r.Fraction != 1 || *r.PersistentVariables != 1024 || r.Boundary != "invariant" || r.Solver != "trws" {
		t.Errorf("persistent_fraction %v, fraction %v, persistent %d, boundary %q, solver %q; want 1, 1, 1024, invariant, trws",
			*r.PersistentFraction, *r.Fraction, *r.PersistentVariables, r.Boundary, r.Solver)
	}
	// Everything persistent: labels.sol is optimal, so the float64 bound meets it.
	if e, lb := float64(*r.Energy), float64(*r.LowerBound); !testutil.CloseTo(e, lb, 1e-9) {
		t.Errorf("energy %v, lower_bound %v: want equal (the labeling is optimal)", e, lb)
	}
	if o.stderr != "" {
		t.Errorf("stderr %q, want quiet", o.stderr)
	}
}

// TestSolvePBPGrid4x4 runs the frustrated grid4x4 with both boundaries. TRW-S finds no
// consistent variable there, so nothing is persistent: the outputs must still be
// complete (an empty proof, labels.sol from the relaxation) and verify must accept them.
// Theorem 4: the original boundary never proves more than the invariant one.
func TestSolvePBPGrid4x4(t *testing.T) {
	path := filepath.Join(fixtures, "grid4x4.uai.gz")
	inv := solvePBP(t, path).report
	orig := solvePBP(t, path, "--boundary", "original").report
	if *inv.PersistentFraction >= 1 || orig.Boundary != "original" {
		t.Errorf("persistent_fraction %v (want < 1: grid4x4 is frustrated), boundary %q", *inv.PersistentFraction, orig.Boundary)
	}
	if *orig.PersistentFraction > *inv.PersistentFraction {
		t.Errorf("original proves %v, invariant %v: Theorem 4 says original ≤ invariant", *orig.PersistentFraction, *inv.PersistentFraction)
	}
	if e := float64(*inv.Energy); e < grid4x4Optimum(t)-1e-9 {
		t.Errorf("energy %v below the optimum", e)
	}
}

// TestSolvePBPBoundaryTheorem4 checks --boundary on a model where the two variants
// differ (writeFrustrated): partial persistency with both, strictly less with the
// original boundary potentials (Theorem 4).
func TestSolvePBPBoundaryTheorem4(t *testing.T) {
	path := writeFrustrated(t, t.TempDir())
	inv := solvePBP(t, path)
	orig := solvePBP(t, path, "--boundary", "original")
	if got := fmt.Sprint(inv.listed); got != "[-1 -1 -1 0 0 0]" {
		t.Errorf("invariant: persistent.evid %v, want the chain 3–5 at 0", got)
	}
	if got := fmt.Sprint(orig.listed); got != "[-1 -1 -1 -1 0 0]" {
		t.Errorf("original: persistent.evid %v, want 4, 5 at 0", got)
	}
	if i, o := *inv.report.PersistentFraction, *orig.report.PersistentFraction; !(o < i) || !(i > 0 && i < 1) {
		t.Errorf("persistent_fraction: invariant %v, original %v; want 0 < original < invariant < 1", i, o)
	}
}

func TestSolvePBPAppliesEvidence(t *testing.T) {
	dir := t.TempDir()
	path := writeFrustrated(t, dir)
	// Observe variable 5 against its unary term; the evidence file lists it twice.
	os.WriteFile(path+".evid", []byte("2 5 1 5 1\n"), 0o644)
	o := solvePBP(t, path)
	r := o.report
	if *r.FreeVariables != 5 || r.Observed != 1 {
		t.Errorf("free_variables %d, observed %d; want 5, 1", *r.FreeVariables, r.Observed)
	}
	if o.labels[5] != 1 || o.listed[5] != 1 {
		t.Errorf("variable 5: labels.sol %d, persistent.evid %d; want the evidence label 1 in both", o.labels[5], o.listed[5])
	}
	if *r.PersistentVariables < 1 || o.listed[0] >= 0 || o.listed[1] >= 0 || o.listed[2] >= 0 {
		t.Errorf("persistent.evid %v, %d persistent: want some of the chain, nothing of the triangle", o.listed, *r.PersistentVariables)
	}
	if !strings.Contains(o.stderr, "applied evidence "+path+".evid") {
		t.Errorf("stderr %q lacks the evidence note", o.stderr)
	}
	// The proof is of the conditioned model: verify without the evidence refuses it.
	code, _, errOut := partopt("verify", "--no-evid", path, o.dir)
	if code != 2 || !strings.Contains(errOut, "a result for 5 variables") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("verify --no-evid: exit %d, %q; want 2 and a one-line explanation", code, errOut)
	}
	// --no-evid on both sides works.
	o = solvePBP(t, path, "--no-evid")
	if *o.report.FreeVariables != 6 || o.report.Observed != 0 || strings.Contains(o.stderr, "evidence") {
		t.Errorf("--no-evid: free %d, observed %d, stderr %q", *o.report.FreeVariables, o.report.Observed, o.stderr)
	}
}

func TestSolvePBPEverythingObserved(t *testing.T) {
	path := writeChain(t, t.TempDir())
	os.WriteFile(path+".evid", []byte("5 0 2 1 0 2 1 3 1 4 0\n"), 0o644)
	o := solvePBP(t, path)
	r := o.report
	if fmt.Sprint(o.labels) != "[2 0 1 1 0]" || fmt.Sprint(o.listed) != "[2 0 1 1 0]" || *r.FreeVariables != 0 ||
		*r.PersistentFraction != 1 || *r.PersistentVariables != 0 {
		t.Errorf("labels %v, listed %v, free %d, persistent_fraction %v, persistent %d",
			o.labels, o.listed, *r.FreeVariables, *r.PersistentFraction, *r.PersistentVariables)
	}
}

// TestSolvePBPHigherOrderBySRMP: models of order 3 (tiny, network with evidence) and 5
// (pedigree1: 334 variables, forbidden states) are solved by SRMP, and their
// certificates verify (solvePBP runs verify). tiny and network are fully persistent;
// pedigree1 in part (a quarter when written).
func TestSolvePBPHigherOrderBySRMP(t *testing.T) {
	for _, c := range []struct {
		name string
		full bool
	}{{"tiny.uai", true}, {"network-evid.uai", true}, {"pedigree1.uai", false}} {
		r := solvePBP(t, filepath.Join(fixtures, c.name)).report
		if r.Solver != "srmp" || (c.full && *r.PersistentFraction != 1) || *r.PersistentVariables == 0 {
			t.Errorf("%s: solver %q, persistent_fraction %v (%d variables)", c.name, r.Solver, *r.PersistentFraction, *r.PersistentVariables)
		}
	}
}

// TestSolvePBPCanceled: an interrupted pbp run has proven nothing; it writes nothing
// and exits 1 with one line.
func TestSolvePBPCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := runContext(ctx, []string{"solve", "-o", dir, filepath.Join(fixtures, "grid4x4.uai.gz")}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "interrupted") || strings.Count(errOut.String(), "\n") != 1 || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and one line saying interrupted", code, out.String(), errOut.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an interrupted run left %v", entries)
	}
}

// TestVerifyRejectsTampering edits one file of a good output directory at a time:
// damage that makes a file unreadable is bad input (exit 2), a readable file that
// disagrees with the proof or a proof that does not check is "NOT verified" (exit 1),
// and an edit of a label the proof does not fix changes nothing (exit 0).
func TestVerifyRejectsTampering(t *testing.T) {
	tmp := t.TempDir()
	path := writeFrustrated(t, tmp)
	good := solvePBP(t, path).dir // persistent: 3, 4, 5 at label 0
	cert, err := os.ReadFile(filepath.Join(good, "certificate.gob"))
	if err != nil {
		t.Fatal(err)
	}
	other := solvePBP(t, filepath.Join(fixtures, "denoise32.uai.gz")).dir
	write := func(name, content string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
		}
	}
	certBytes := func(b []byte) func(t *testing.T, dir string) { return write("certificate.gob", string(b)) }
	// A flipped byte of gzip's checksum is damage whatever the body; one inside
	// the compressed body (below) fails where the decoder first meets it, and
	// the file records its run's seconds, so where that is changes run to run.
	flipped := bytes.Clone(cert)
	flipped[len(flipped)-6] ^= 0x40
	garbage := make([]byte, 300)
	for i := range garbage {
		garbage[i] = byte(i * 7919 >> 3)
	}
	// forge changes the result's proven label of variable 5 (certificate included).
	forge := func(all bool) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			editResult(t, filepath.Join(dir, "certificate.gob"), func(r *persistency.Result) {
				r.Persistent[5] = 1
				if all {
					last := len(r.Certificate.Labeling) - 1
					r.Certificate.Labeling[last] = 1
					if d := r.Certificate.Dual; d != nil {
						d.Labeling[last] = 1
					} else {
						r.Certificate.Draft.Labeling = r.Certificate.Labeling // one labeling, the certificate's
					}
				}
			})
			if all { // and the other two files agree with the forgery
				write("persistent.evid", "3 3 0 4 0 5 1\n")(t, dir)
				write("labels.sol", "MPE\n6 0 1 0 0 0 1\n")(t, dir)
			}
		}
	}
	cases := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		code   int
		want   string
	}{
		{"untouched", func(*testing.T, string) {}, 0, ""},
		{"evid flips a label", write("persistent.evid", "3 3 0 4 0 5 1\n"), 1, "NOT verified: " + "%s/persistent.evid gives variable 5 label 1, the proof or the evidence 0"},
		{"evid drops a variable", write("persistent.evid", "2 3 0 4 0\n"), 1, "persistent.evid lacks variable 5"},
		{"evid adds a variable", write("persistent.evid", "4 0 0 3 0 4 0 5 0\n"), 1, "persistent.evid fixes variable 0 to 0, which is neither proven"},
		{"evid reordered", write("persistent.evid", "3 5 0 3 0 4 0\n"), 0, ""},
		{"evid garbage", write("persistent.evid", "hello\n"), 2, "persistent.evid"},
		{"evid truncated", write("persistent.evid", "3 3 0 4"), 2, "persistent.evid"},
		{"evid label out of range", write("persistent.evid", "3 3 0 4 0 5 7\n"), 2, "label 7 out of range"},
		{"evid missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "persistent.evid")) }, 2, "no such file"},
		{"labels flip a proven label", write("labels.sol", "MPE\n6 0 1 0 0 1 0\n"), 1, "NOT verified: " + "%s/labels.sol gives variable 4 label 1"},
		{"labels flip a label not proven", write("labels.sol", "MPE\n6 1 1 1 0 0 0\n"), 1, "NOT verified: " + "%s/optimal.sol is not the labeling of labels.sol"},
		{"labels flip a label not proven, no completion", func(t *testing.T, dir string) {
			write("labels.sol", "MPE\n6 1 1 1 0 0 0\n")(t, dir)
			os.Remove(filepath.Join(dir, "optimal.sol"))
			data, _ := os.ReadFile(filepath.Join(dir, reportFile))
			var rep map[string]any
			json.Unmarshal(data, &rep)
			delete(rep, "optimal")
			delete(rep, "completion")
			data, _ = json.Marshal(rep)
			os.WriteFile(filepath.Join(dir, reportFile), data, 0o644)
		}, 0, ""},
		{"labels truncated", write("labels.sol", "MPE\n6 0 1 0"), 2, "labels.sol"},
		{"labels out of range", write("labels.sol", "MPE\n6 0 1 0 0 0 2\n"), 2, "label 2 out of range"},
		{"certificate missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "certificate.gob")) }, 2, "no such file"},
		{"certificate empty", certBytes(nil), 2, "not a result file"},
		{"certificate truncated in header", certBytes(cert[:20]), 2, "not a result file"},
		{"certificate truncated to the header", certBytes(cert[:29]), 2, "truncated"},
		{"certificate truncated by half", certBytes(cert[:len(cert)/2]), 2, "truncated"},
		{"certificate missing its last byte", certBytes(cert[:len(cert)-1]), 2, "truncated"},
		{"certificate garbage", certBytes(garbage), 2, "not a result file"},
		{"certificate garbage after the header", certBytes(append(bytes.Clone(cert[:29]), garbage...)), 2, "damaged"},
		{"certificate flipped byte", certBytes(flipped), 2, "damaged"},
		{"certificate trailing data", certBytes(append(bytes.Clone(cert), 0, 1, 2)), 2, "data after"},
		{"certificate of another model", func(t *testing.T, dir string) {
			data, _ := os.ReadFile(filepath.Join(other, "certificate.gob"))
			os.WriteFile(filepath.Join(dir, "certificate.gob"), data, 0o644)
		}, 2, "a result of another model"},
		{"certificate label differs from its proof", forge(false), 1, "NOT verified: " + "%s/certificate.gob: persistency: the certificate's labeling differs"},
		{"forged proof", forge(true), 1, "NOT verified: " + "%s/certificate.gob: persistency: certificate gap"},
	}
	for i := range 8 {
		body := bytes.Clone(cert)
		body[29+(len(body)-37)*i/8] ^= 0x40
		dir := filepath.Join(t.TempDir(), "out")
		copyDir(t, good, dir)
		certBytes(body)(t, dir)
		code, out, errOut := partopt("verify", path, dir)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "damaged") && !strings.Contains(errOut, "truncated") {
			t.Errorf("a byte of the compressed body flipped (%d/8): exit %d, stdout %q, stderr %q; want exit 2 and one line saying damaged or truncated", i, code, out, errOut)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			copyDir(t, good, dir)
			c.tamper(t, dir)
			code, out, errOut := partopt("verify", path, dir)
			if code != c.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, c.code, out, errOut)
			}
			if c.code == 0 {
				if !strings.HasPrefix(out, "verified 3 persistent variables, certificate gap ") {
					t.Errorf("stdout %q", out)
				}
				return
			}
			want := c.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, dir)
			}
			if out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "partopt: ") || !strings.Contains(errOut, want) {
				t.Errorf("stdout %q, stderr %q; want nothing and one line containing %q", out, errOut, want)
			}
		})
	}
}

// editResult rewrites a result file after edit.
func editResult(t *testing.T, path string, edit func(*persistency.Result)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := persistency.ReadResult(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	edit(res)
	var buf bytes.Buffer
	if err := persistency.WriteResult(&buf, res); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVerifyBadInputExitsTwoWithOneLine(t *testing.T) {
	dir := t.TempDir()
	grid := filepath.Join(fixtures, "grid4x4.uai.gz")
	trwsDir := filepath.Join(dir, "trws")
	if code, _, errOut := partopt("solve", "--method", "trws", grid, "-o", trwsDir); code != 0 {
		t.Fatal(errOut)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing directory", []string{"verify", grid, filepath.Join(dir, "none")}, "no such file"},
		{"trws output", []string{"verify", grid, trwsDir}, "certificate.gob: no such file or directory (partopt solve --method pbp writes it)"},
		{"missing model", []string{"verify", filepath.Join(dir, "none.uai"), trwsDir}, "no such file"},
		{"argument count", []string{"verify", grid}, "accepts 2 arg(s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := partopt(c.args...)
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line containing %q", code, out, errOut, c.want)
			}
		})
	}
}

func TestVerifyHelpDocumentsExitCodes(t *testing.T) {
	code, out, _ := partopt("verify", "--help")
	for _, want := range []string{"NOT verified", "Exit codes", "verified <k> persistent variables, certificate gap <g>"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("verify --help: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	code, out, _ = partopt("solve", "--help")
	for _, want := range []string{"persistent.evid", "reduced problem", "certificate.gob", "persistent_fraction", "--boundary"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("solve --help: exit %d, lacks %q", code, want)
		}
	}
}

// TestSolvePBPSharedSegmentation: on a real segmentation model pbp reports its
// persistent fraction, verify accepts the proof, and the energy and the bound bracket
// toulbar2's proven optimum.
func TestSolvePBPSharedSegmentation(t *testing.T) {
	const name = "uai2014-mroavi/MAP/Segmentation_12.uai"
	path := filepath.Join(sharedModels, name)
	testutil.SkipWithoutShared(t, path)
	opt := testutil.Optimum(t, sharedModels, name)
	r := solvePBP(t, path).report // checks verify
	t.Logf("%s: persistent_fraction %v (%d of %d), %d pruning iterations", name, *r.PersistentFraction, *r.PersistentVariables, *r.FreeVariables, *r.PruningIterations)
	if f := *r.PersistentFraction; !(f > 0) {
		t.Errorf("persistent_fraction %v: want some persistency on a segmentation model", f)
	}
	if lb := float64(*r.LowerBound); lb > opt+1e-3 {
		t.Errorf("lower_bound %v above the optimum %v", lb, opt)
	}
	if e := float64(*r.Energy); e < opt-1e-3 || *r.PersistentFraction == 1 && e > opt+1e-3 {
		t.Errorf("energy %v, optimum %v (persistent_fraction %v)", e, opt, *r.PersistentFraction)
	}
}

func TestPBPStatusText(t *testing.T) {
	text := pbpProgressText(persistency.Progress{}, false, trws.Progress{Iteration: 5, LowerBound: -3}, true, 16, 100)
	if text != "initial relaxation  | trws 5/100 bound -3" {
		t.Errorf("%q", text)
	}
	text = pbpProgressText(persistency.Progress{Iteration: 2, SetSize: 12, Variables: 16, Bound: 7.5}, true, trws.Progress{}, false, 16, 100)
	if text != "iter 2  |A| 12/16 (75.0%)  bound 7.5" {
		t.Errorf("%q", text)
	}
	if text = pbpProgressText(persistency.Progress{Iteration: 3, SetSize: 1, Bound: math.NaN()}, true, trws.Progress{}, false, 16, 100); !strings.Contains(text, "bound -") {
		t.Errorf("%q", text)
	}
}
