package uai_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
)

const fixtures = "../../testdata"

// TestFixtureEnergies compares the energy of every committed fixture labeling with the
// independent reference of scripts/refenergy.py (testdata/energies.tsv). Evidence is
// left to the CLI tests; rows whose model has evidence are checked without it here
// only where the labeling agrees with it.
func TestFixtureEnergies(t *testing.T) {
	for _, row := range testutil.ReadTSV(t, filepath.Join(fixtures, "energies.tsv")) {
		modelPath, solPath, want := filepath.Join(fixtures, row[0]), filepath.Join(fixtures, row[1]), parseEnergy(t, row[2])
		if math.IsInf(want, 1) && strings.Contains(row[1], "contradicts") {
			continue // +Inf only through the evidence, which the CLI applies
		}
		t.Run(row[0]+"/"+row[1], func(t *testing.T) {
			m, err := uai.ReadFile(modelPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			x, err := uai.ReadSolutionFile(solPath, m.NumVars())
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Energy(x); !testutil.CloseTo(got, want, 1e-9) {
				t.Errorf("energy %v, reference %v", got, want)
			}
		})
	}
}

func parseEnergy(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMalformedInputsGiveClearErrors(t *testing.T) {
	cases := []struct {
		name, format, input, want string
	}{
		{"empty", "uai", "", "line 1: unexpected end of file, expected MARKOV or BAYES"},
		{"bad header", "uai", "FOO 1", `expected MARKOV or BAYES, found "FOO"`},
		{"truncated labels", "uai", "MARKOV\n1000000000\n2 2", "line 3: unexpected end of file, expected the label count of variable 2"},
		{"zero labels", "uai", "MARKOV\n2\n2 0\n0\n", "variable 1 has 0 labels"},
		{"not a number", "uai", "MARKOV\n2\n2 x\n", `line 3: expected the label count of variable 1, found "x"`},
		{"scope out of range", "uai", "MARKOV\n2\n2 2\n1\n2 0 2\n", "line 5: a variable of factor 0 (0..1) is 2, more than the limit 1"},
		{"repeated variable", "uai", "MARKOV\n2\n2 2\n1\n2 0 0\n4\n1 1 1 1\n", "factor 0: model: factor 0: variable 0 appears twice"},
		{"entry count", "uai", "MARKOV\n2\n2 3\n1\n2 0 1\n5\n1 1 1 1 1\n", "line 6: factor 0 has 5 table entries, its scope [0 1] needs 6"},
		{"huge table", "uai", "MARKOV\n3\n65536 65536 65536\n1\n3 0 1 2\n", "more than 268435456 entries"},
		{"negative probability", "uai", "MARKOV\n1\n2\n1\n1 0\n2\n0.5 -0.1\n", "line 7: factor 0, entry 1: negative probability -0.1"},
		{"NaN probability", "uai", "MARKOV\n1\n2\n1\n1 0\n2\n0.5 nan\n", "factor 0, entry 1: NaN is not allowed"},
		{"infinite probability", "uai", "MARKOV\n1\n2\n1\n1 0\n2\n0.5 inf\n", "energy −Inf"},
		{"LG +inf", "LG", "MARKOV\n1\n2\n1\n1 0\n2\n0.5 +inf\n", "log value +Inf"},
		{"LG NaN", "LG", "MARKOV\n1\n2\n1\n1 0\n2\nNaN 1\n", "NaN is not allowed"},
		{"missing entries", "uai", "MARKOV\n1\n2\n1\n1 0\n2\n0.5\n", "line 7: unexpected end of file, expected entry 1 of the table of factor 0"},
		{"trailing data", "uai", "MARKOV\n1\n2\n1\n1 0\n2\n0.5 0.5\n7\n", `line 8: unexpected "7" after the end of the data`},
		{"wcsp global", "wcsp", "p 2 2 1 10\n2 2\n2 0 1 -1 salldiff\n", "global cost functions are not supported"},
		{"wcsp label", "wcsp", "p 2 2 1 10\n2 2\n2 0 1 0 1\n0 2 5\n", "line 4: label 1 of tuple 0 of cost function 0 (0..1) is 2, more than the limit 1"},
		{"wcsp ub", "wcsp", "p 2 2 1 -3\n2 2\n", "upper bound -3: want > 0"},
		{"long token", "uai", "MARKOV " + strings.Repeat("9", 5000), "token longer than"},
	}
	formats := map[string]uai.Format{"uai": uai.UAI, "LG": uai.LG, "wcsp": uai.WCSP}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := uai.Read(strings.NewReader(c.input), "in."+c.format, formats[c.format])
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "in."+c.format) {
				t.Errorf("error %q, want it to name the file and contain %q", err, c.want)
			}
		})
	}
}

// TestDeclaredSizesDoNotAllocate: a short file that declares a billion variables, a
// billion factors or a huge table fails without allocating for the declaration.
func TestDeclaredSizesDoNotAllocate(t *testing.T) {
	inputs := []string{
		"MARKOV\n1000000000\n2 2 2\n",
		"MARKOV\n2\n2 2\n2000000000\n1 0\n",
		"MARKOV\n1\n2\n1\n1 0\n2000000000\n0.5\n",
		"p 1000000000 2 1000000000 10\n2 2\n",
		"MARKOV\n20\n" + strings.Repeat("4 ", 20) + "\n1\n14 0 1 2 3 4 5 6 7 8 9 10 11 12 13\n268435456\n1 2 3\n",
	}
	for i, in := range inputs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		format := uai.UAI
		if strings.HasPrefix(in, "p ") {
			format = uai.WCSP
		}
		_, err := uai.Read(strings.NewReader(in), "small", format)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("input %d: no error", i)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
			t.Errorf("input %d (%d bytes) allocated %d bytes", i, len(in), grew)
		}
	}
}

// handModel has every function kind, a forbidden state, an order-3 table, a one-label
// variable, an offset, and energies large enough to need shifting in the probability format.
func handModel(t *testing.T) *model.Model {
	t.Helper()
	b := model.NewBuilder([]int{3, 3, 1, 2, 4})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	potts, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{3, 3}, W: 0.75})
	must(err)
	tl, err := b.AddFunction(model.Function{Kind: model.TruncatedLinear, Shape: []int{3, 4}, W: 2, T: 1.5})
	must(err)
	tq, err := b.AddFunction(model.Function{Kind: model.TruncatedQuadratic, Shape: []int{4, 3}, W: 0.5, T: 4})
	must(err)
	must(b.AddFactor(potts, 0, 1))
	must(b.AddFactor(tl, 1, 4))
	must(b.AddFactor(tq, 4, 0))
	must(b.AddTable([]int{0}, []float64{0.5, math.Inf(1), -1.25}))
	must(b.AddTable([]int{3}, []float64{1500, 1900.5}))
	must(b.AddTable([]int{2, 3, 0}, []float64{1, 2, 3, 4, 5, -6}))
	must(b.AddConstant(-3.5))
	m, err := b.Build()
	must(err)
	return m
}

func allLabelings(m *model.Model, visit func(x []int)) {
	x := make([]int, m.NumVars())
	for {
		visit(x)
		v := 0
		for ; v < len(x); v++ {
			x[v]++
			if x[v] < m.NumLabels(v) {
				break
			}
			x[v] = 0
		}
		if v == len(x) {
			return
		}
	}
}

func TestWriteReadRoundTripKeepsEveryEnergy(t *testing.T) {
	m := handModel(t)
	for _, format := range []uai.Format{uai.UAI, uai.LG} {
		var buf bytes.Buffer
		if err := uai.Write(&buf, m, format); err != nil {
			t.Fatal(err)
		}
		back, err := uai.Read(&buf, "roundtrip", format)
		if err != nil {
			t.Fatalf("%v: %v", format, err)
		}
		allLabelings(m, func(x []int) {
			if a, b := m.Energy(x), back.Energy(x); !testutil.CloseTo(a, b, 1e-12) {
				t.Fatalf("%v: labeling %v: energy %v, after round trip %v", format, x, a, b)
			}
		})
		// Parametric functions written as tables are recognised again on load.
		kinds := back.Stats().FactorsByKind
		if kinds[model.Potts] != 1 || kinds[model.TruncatedLinear] != 1 || kinds[model.TruncatedQuadratic] != 1 {
			t.Errorf("%v: kinds after round trip %v, want one Potts, one truncated linear, one truncated quadratic", format, kinds)
		}
	}
}

func TestWriteFileCompressedRoundTrip(t *testing.T) {
	m := handModel(t)
	dir := t.TempDir()
	for _, name := range []string{"m.uai", "m.LG", "m.uai.gz"} {
		path := filepath.Join(dir, name)
		if err := uai.WriteFile(path, m); err != nil {
			t.Fatal(err)
		}
		back, err := uai.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		x := []int{2, 1, 0, 1, 3}
		if a, b := m.Energy(x), back.Energy(x); !testutil.CloseTo(a, b, 1e-12) {
			t.Errorf("%s: energy %v, after round trip %v", name, a, b)
		}
	}
	if err := uai.WriteFile(filepath.Join(dir, "m.wcsp"), m); err == nil {
		t.Error("writing .wcsp should be refused")
	}
}

func TestWriteRefusesEnergiesProbabilitiesCannotHold(t *testing.T) {
	b := model.NewBuilder([]int{2})
	if err := b.AddTable([]int{0}, []float64{0, 800}); err != nil {
		t.Fatal(err)
	}
	m, _ := b.Build()
	err := uai.Write(new(bytes.Buffer), m, uai.UAI)
	if err == nil || !strings.Contains(err.Error(), "write the .LG format") {
		t.Errorf("error %v, want advice to use .LG", err)
	}
	if err := uai.Write(new(bytes.Buffer), m, uai.LG); err != nil {
		t.Errorf("LG: %v", err)
	}
}

// Constants are carried by order-0 factors of up to ±700 each; one too large for a
// bounded number of them is an error, never a file that grows without limit.
func TestWriteLargeConstants(t *testing.T) {
	for _, c := range []struct {
		constant float64
		ok       bool
	}{{1e5, true}, {-3e6, true}, {1e8, false}} {
		b := model.NewBuilder([]int{2})
		b.AddTable([]int{0}, []float64{0, 1})
		b.AddConstant(c.constant)
		m, _ := b.Build()
		var buf bytes.Buffer
		err := uai.Write(&buf, m, uai.UAI)
		if !c.ok {
			if err == nil || !strings.Contains(err.Error(), "write the .LG format") {
				t.Errorf("constant %g: error %v, want advice to use .LG", c.constant, err)
			}
			continue
		}
		if err != nil || buf.Len() > 200_000 {
			t.Fatalf("constant %g: %d bytes, %v", c.constant, buf.Len(), err)
		}
		back, err := uai.Read(&buf, "c", uai.UAI)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := back.Energy([]int{1}), m.Energy([]int{1}); !testutil.CloseTo(got, want, 1e-12) {
			t.Errorf("constant %g: energy %v after round trip, want %v", c.constant, got, want)
		}
	}
}

// TestReadIsingGridRecognisesPotts: in pgmpy's 4×4 Ising grid the 12 attractive
// couplings (equal diagonal above equal off-diagonal probabilities) are Potts up to a
// constant; the 12 repulsive ones (negative weight) must stay explicit.
func TestReadIsingGridRecognisesPotts(t *testing.T) {
	m, err := uai.ReadFile(filepath.Join(fixtures, "grid4x4.uai.gz"))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stats()
	if s.Vars != 16 || s.FactorsByOrder[2] != 24 || s.FactorsByKind[model.Potts] != 12 {
		t.Fatalf("stats %+v, want 16 variables, 24 pairwise factors, 12 of them Potts", s)
	}
	for f := 0; f < m.NumFactors(); f++ {
		fn := m.FactorFunction(f)
		if fn.Kind == model.Explicit && fn.Order() == 2 && fn.Table[1] > fn.Table[0] && fn.Table[1] == fn.Table[2] && fn.Table[0] == fn.Table[3] {
			t.Errorf("factor %d: attractive symmetric table %v left explicit", f, fn.Table)
		}
	}
}

func TestEvidenceForms(t *testing.T) {
	cases := []struct {
		in         string
		vars, labs []int
		err        string
	}{
		{"2 3 1 0 0", []int{3, 0}, []int{1, 0}, ""},
		{"1\n2 3 1 0 0\n", []int{3, 0}, []int{1, 0}, ""},
		{"0", nil, nil, ""},
		{"1 0", nil, nil, ""},
		{"1 5 0", []int{5}, []int{0}, ""},
		{"", nil, nil, "empty evidence file"},
		{"3 1 1", nil, nil, "do not form"},
		{"2 1 x", nil, nil, `expected an integer, found "x"`},
	}
	for _, c := range cases {
		e, err := uai.ReadEvidence(strings.NewReader(c.in), "e.evid")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !slices.Equal(e.Vars, c.vars) || !slices.Equal(e.Labels, c.labs) {
			t.Errorf("%q: got %v %v, want %v %v", c.in, e.Vars, e.Labels, c.vars, c.labs)
		}
	}
}

func TestEvidenceFixedRejectsBadObservations(t *testing.T) {
	labels := []int32{2, 3}
	for _, c := range []struct {
		e   uai.Evidence
		err string
	}{
		{uai.Evidence{Vars: []int{2}, Labels: []int{0}}, "variable 2 out of range"},
		{uai.Evidence{Vars: []int{1}, Labels: []int{3}}, "label 3 out of range"},
		{uai.Evidence{Vars: []int{0, 0}, Labels: []int{0, 1}}, "observed as 0 and as 1"},
	} {
		if _, err := c.e.Fixed(labels); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: error %v, want %q", c.e, err, c.err)
		}
	}
	fixed, err := uai.Evidence{Vars: []int{1, 1}, Labels: []int{2, 2}}.Fixed(labels)
	if err != nil || !slices.Equal(fixed, []int{-1, 2}) {
		t.Errorf("fixed %v, %v", fixed, err)
	}
	var buf bytes.Buffer
	if err := uai.WriteEvidence(&buf, uai.Evidence{Vars: []int{4, 1}, Labels: []int{0, 2}}); err != nil || buf.String() != "2 4 0 1 2\n" {
		t.Errorf("WriteEvidence: %q, %v", buf.String(), err)
	}
}

func TestSolutionForms(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want []int
	}{
		{"0 1 2", 3, []int{0, 1, 2}},
		{"MPE\n3 0 1 2\n", 3, []int{0, 1, 2}},
		{"MAP\n3 0 1 2\n", -1, []int{0, 1, 2}},
		{"MPE\n1\n3 0 1 2\n", 3, []int{0, 1, 2}},
		{"3 0 1 2", 3, []int{0, 1, 2}},
		{"0 1 2", -1, []int{0, 1, 2}},
	}
	for _, c := range cases {
		got, err := uai.ReadSolution(strings.NewReader(c.in), "s", c.n)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"0 1", "MPE\n4 0 1 2", "0 1 x"} {
		if _, err := uai.ReadSolution(strings.NewReader(bad), "s", 3); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	var buf bytes.Buffer
	if err := uai.WriteSolution(&buf, []int{2, 0, 1}); err != nil || buf.String() != "MPE\n3 2 0 1\n" {
		t.Errorf("WriteSolution: %q, %v", buf.String(), err)
	}
}

func TestFormatOf(t *testing.T) {
	for name, want := range map[string]uai.Format{
		"a.uai": uai.UAI, "a.uai.xz": uai.UAI, "a.fg.uai.gz": uai.UAI, "a.LG": uai.LG, "a.lg.xz": uai.LG,
		"a.wcsp": uai.WCSP, "a.wcsp.xz": uai.WCSP, "a.wcsp.uai": uai.UAI, "a.h5": uai.Unknown,
	} {
		if got, _ := uai.FormatOf(name); got != want {
			t.Errorf("FormatOf(%q) = %v, want %v", name, got, want)
		}
	}
	if _, err := uai.ReadFile("x.h5"); err == nil || !strings.Contains(err.Error(), "unknown model format") {
		t.Errorf("ReadFile(x.h5): %v", err)
	}
}

func TestCorruptCompressedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.uai.xz")
	if err := os.WriteFile(path, []byte("not xz at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := uai.ReadFile(path); err == nil || !strings.Contains(err.Error(), "bad.uai.xz") {
		t.Errorf("error %v, want one naming the file", err)
	}
}

// writePottsGrid streams a w×h Potts grid with k labels in the UAI format: random
// unaries and contrast-like edge weights, one distinct weight per edge when uniform is
// false (the worst case for sharing functions), one weight for all edges otherwise.
func writePottsGrid(path string, w, h, k int, uniform bool, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 1))
	n, edges := w*h, (w-1)*h+w*(h-1)
	var buf []byte
	buf = append(buf, "MARKOV\n"...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, '\n')
	for v := 0; v < n; v++ {
		buf = strconv.AppendInt(buf, int64(k), 10)
		buf = append(buf, ' ')
	}
	buf = append(buf, '\n')
	buf = strconv.AppendInt(buf, int64(n+edges), 10)
	buf = append(buf, '\n')
	bw.Write(buf)
	for v := 0; v < n; v++ {
		fmtInts(bw, 1, v)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x+1 < w {
				fmtInts(bw, 2, y*w+x, y*w+x+1)
			}
			if y+1 < h {
				fmtInts(bw, 2, y*w+x, (y+1)*w+x)
			}
		}
	}
	for v := 0; v < n; v++ {
		buf = append(buf[:0], '\n')
		buf = strconv.AppendInt(buf, int64(k), 10)
		buf = append(buf, '\n')
		for l := 0; l < k; l++ {
			buf = strconv.AppendFloat(buf, 0.05+rng.Float64(), 'g', 6, 64)
			buf = append(buf, ' ')
		}
		bw.Write(append(buf, '\n'))
	}
	for e := 0; e < edges; e++ {
		weight := 0.5
		if !uniform {
			weight = 0.1 + rng.Float64()
		}
		p := strconv.AppendFloat(nil, math.Exp(-weight), 'g', 6, 64)
		buf = append(buf[:0], '\n')
		buf = strconv.AppendInt(buf, int64(k*k), 10)
		buf = append(buf, '\n')
		for a := 0; a < k; a++ {
			for b := 0; b < k; b++ {
				if a == b {
					buf = append(buf, '1')
				} else {
					buf = append(buf, p...)
				}
				buf = append(buf, ' ')
			}
		}
		bw.Write(append(buf, '\n'))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func fmtInts(w *bufio.Writer, xs ...int) {
	for i, x := range xs {
		if i > 0 {
			w.WriteByte(' ')
		}
		w.WriteString(strconv.Itoa(x))
	}
	w.WriteByte('\n')
}

// TestMillionVariablePottsGridLoadsInWellUnderOneGiB: the foundation's memory promise,
// 10⁶ variables and 2·10⁶ Potts edges with distinct weights, read from a UAI file.
func TestMillionVariablePottsGridLoadsInWellUnderOneGiB(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 60 MB model file; skipped in -short mode")
	}
	path := filepath.Join(t.TempDir(), "grid.uai")
	if err := writePottsGrid(path, 1000, 1000, 2, false, 7); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := uai.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	s := m.Stats()
	t.Logf("live heap %d MiB, estimate %d MiB, %d functions, %.0f bytes/factor", live>>20, s.MemoryBytes>>20, s.Functions, float64(live)/float64(s.Factors))
	if s.Vars != 1_000_000 || s.FactorsByKind[model.Potts] != 1_998_000 {
		t.Fatalf("stats %+v, want 10⁶ variables and 1,998,000 Potts edges", s)
	}
	if live > 512<<20 {
		t.Errorf("model holds %d MiB after load, want well under 1 GiB (< 512 MiB)", live>>20)
	}
	runtime.KeepAlive(m)
}

// BenchmarkReadPottsGrid1000x1000 loads a 10⁶-variable, 2·10⁶-edge binary Potts grid
// from a UAI file, with one weight for all edges and with a distinct weight per edge.
func BenchmarkReadPottsGrid1000x1000(b *testing.B) {
	for _, c := range []struct {
		name    string
		uniform bool
	}{{"uniform-weight", true}, {"distinct-weights", false}} {
		b.Run(c.name, func(b *testing.B) { benchmarkReadPottsGrid(b, c.uniform) })
	}
}

func benchmarkReadPottsGrid(b *testing.B, uniform bool) {
	path := filepath.Join(b.TempDir(), "grid.uai")
	if err := writePottsGrid(path, 1000, 1000, 2, uniform, 7); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ResetTimer()
	var m *model.Model
	for i := 0; i < b.N; i++ {
		var err error
		if m, err = uai.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(m.MemoryBytes())/float64(m.NumFactors()), "model-B/factor")
	b.ReportMetric(float64(ms.HeapAlloc)/float64(m.NumFactors()), "heap-B/factor")
	runtime.KeepAlive(m)
}

// TestRepeatedTableValuesReadExactly: table entries are read by their text with
// a cache of recent values; whatever repeats, collides or is spelled two ways
// ("0.5", "5e-1", long tokens), every entry is −log of its own text, in both the
// probability and the log domain.
func TestRepeatedTableValuesReadExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var pool []string
	for i := range 3000 {
		p := rng.Float64()
		switch i % 4 {
		case 0:
			pool = append(pool, strconv.FormatFloat(p, 'g', -1, 64)) // up to 24 bytes and beyond
		case 1:
			pool = append(pool, strconv.FormatFloat(p, 'e', 3, 64))
		case 2:
			pool = append(pool, strconv.FormatFloat(p, 'f', 2, 64))
		default:
			pool = append(pool, strconv.FormatFloat(p, 'g', 3, 64)+"0000000000000000000000000")
		}
	}
	const n, k = 200, 4 // a chain of 200 variables, 4 labels
	for _, format := range []uai.Format{uai.UAI, uai.LG} {
		var text strings.Builder
		fmt.Fprintf(&text, "MARKOV\n%d\n%s\n%d\n", n, strings.Repeat("4 ", n), n-1)
		for v := range n - 1 {
			fmt.Fprintf(&text, "2 %d %d\n", v, v+1)
		}
		var want [][]float64
		for range n - 1 {
			fmt.Fprintf(&text, "%d\n", k*k)
			var row []float64
			for range k * k {
				tok := pool[rng.IntN(len(pool))]
				if rng.IntN(2) == 0 {
					tok = pool[rng.IntN(40)] // often repeated
				}
				v, _ := strconv.ParseFloat(tok, 64)
				e := -math.Log(v)
				if format == uai.LG {
					e = -v
				}
				row = append(row, e)
				text.WriteString(tok + " ")
			}
			text.WriteString("\n")
			want = append(want, row)
		}
		m, err := uai.Read(strings.NewReader(text.String()), "chain", format)
		if err != nil {
			t.Fatal(err)
		}
		for f := range n - 1 {
			for a := range k {
				for b := range k {
					if got := m.FactorFunction(f).Pairwise(a, b); got != want[f][a*k+b] {
						t.Fatalf("%v: factor %d entry (%d,%d) = %v, want %v", format, f, a, b, got, want[f][a*k+b])
					}
				}
			}
		}
	}
}

// TestCompressedStreamsAreReadOnlyAsFarAsTheModelNeeds: a compressed model file
// is decoded as a stream, only as far as its declared model needs: 64 MB of
// data after the model's end, or a 64 MB token, inflated from a few hundred KB,
// are refused at their first line, with bounded allocation.
func TestCompressedStreamsAreReadOnlyAsFarAsTheModelNeeds(t *testing.T) {
	for name, tail := range map[string][]byte{
		"data after the end": bytes.Repeat([]byte("0 "), 32<<20),
		"one huge token":     bytes.Repeat([]byte("7"), 64<<20),
	} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte("MARKOV\n1\n2\n1\n1 0\n2\n0.5 0.5\n"))
		zw.Write(tail)
		zw.Close()
		path := filepath.Join(t.TempDir(), "bomb.uai.gz")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := uai.ReadFile(path)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "line 8") {
			t.Errorf("%s (%d bytes compressed): %v, want an error at line 8, its first", name, buf.Len(), err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
			t.Errorf("%s: refusing it allocated %d bytes", name, n)
		}
	}
}

// TestTableErrorsComeInTheFilesOrder: tables are parsed on one goroutine and
// built on another (addTables), chunk by chunk; an error far into the file still
// names its factor and line, and the first error in the file's order is the one
// reported, whichever goroutine finds it (and a failure leaves no goroutine
// behind).
func TestTableErrorsComeInTheFilesOrder(t *testing.T) {
	const n = 40000 // unary tables: 80,000 entries, several chunks
	file := func(twice, malformed int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "MARKOV\n%d\n%s\n%d\n", n, strings.TrimSpace(strings.Repeat("2 ", n)), n)
		for f := range n {
			if f == twice {
				fmt.Fprintf(&b, "2 %d %d\n", f, f)
			} else {
				fmt.Fprintf(&b, "1 %d\n", f)
			}
		}
		for f := range n {
			switch f {
			case twice:
				b.WriteString("4 0.1 0.2 0.3 0.4\n")
			case malformed:
				b.WriteString("2 0.5 x\n")
			default:
				fmt.Fprintf(&b, "2 0.%d 0.5\n", f%9+1)
			}
		}
		return b.String()
	}
	line := func(f int) int { return 5 + n + f } // factor f's table
	before := runtime.NumGoroutine()
	cases := []struct {
		name             string
		twice, malformed int
		want             string
	}{
		// (the builder numbers the factors it keeps: constant tables, every ninth, go to the offset)
		{"a repeated variable first", 30000, 35000, fmt.Sprintf("line %d: factor 30000: model: factor 26667: variable 30000 appears twice", line(30000))},
		{"a malformed entry first", 35000, 30000, fmt.Sprintf(`line %d: expected entry 1 of the table of factor 30000 (a number), found "x"`, line(30000))},
		{"in the first chunk", 3, 39999, fmt.Sprintf("line %d: factor 3: model: factor 3: variable 3 appears twice", line(3))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := uai.Read(strings.NewReader(file(c.twice, c.malformed)), "in.uai", uai.UAI)
			if err == nil || err.Error() != "in.uai: "+c.want {
				t.Fatalf("error %v, want in.uai: %s", err, c.want)
			}
		})
	}
	m, err := uai.Read(strings.NewReader(file(-1, -1)), "in.uai", uai.UAI)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]int, n)
	want := 0.0
	for f := range n {
		want -= math.Log(float64(f%9+1) / 10)
	}
	if got := m.Energy(x); math.Abs(got-want) > 1e-9*want {
		t.Errorf("energy of all zeros %v, want %v", got, want)
	}
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d goroutines after reading, %d before", runtime.NumGoroutine(), before)
}

// TestATableLargerThanAChunkReadsBack: a factor's table may hold more entries
// than a chunk of the pipelined reader (addTables), before and after small
// ones; every entry lands where it belongs.
func TestATableLargerThanAChunkReadsBack(t *testing.T) {
	const k = 42 // 42³ = 74,088 entries
	var b strings.Builder
	fmt.Fprintf(&b, "MARKOV\n4\n%d %d %d 2\n3\n1 3\n3 0 1 2\n1 3\n2 0.25 0.5\n%d\n", k, k, k, k*k*k)
	for i := range k * k * k {
		fmt.Fprintf(&b, "%d ", i%1000+1)
	}
	b.WriteString("\n2 0.5 0.125\n")
	m, err := uai.Read(strings.NewReader(b.String()), "big.uai", uai.UAI)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range [][]int{{0, 0, 0, 0}, {41, 41, 41, 1}, {3, 17, 29, 1}, {40, 2, 7, 0}} {
		i := (x[0]*k+x[1])*k + x[2]
		want := -math.Log(float64(i%1000+1)) - math.Log([]float64{0.25, 0.5}[x[3]]) - math.Log([]float64{0.5, 0.125}[x[3]])
		if got := m.Energy(x); math.Abs(got-want) > 1e-12 {
			t.Errorf("energy of %v: %v, want %v", x, got, want)
		}
	}
}
