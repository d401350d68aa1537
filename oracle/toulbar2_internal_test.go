package oracle

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// These tests need no toulbar2.

func TestParseOutput(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		out                          string
		optimum, noSolution, timeOut bool
		energy                       float64
	}{
		{"optimum", `loading uai file:  grid4x4.uai
New solution: 344274965 energy: -97.387 prob: 1.970e+42 (0 backtracks, 2 nodes, depth 4)
Optimality gap: [146898734, 344274965] 57.331 % (2 backtracks, 4 nodes)
New solution: 297522235 energy: -102.062 prob: 2.113e+44 (2 backtracks, 6 nodes, depth 3)
Optimum: 297522235 energy: -102.062 prob: 2.113e+44 in 3 backtracks and 7 nodes ( 0 removals by DEE) and 0.002 seconds.
end.
`, true, false, false, -102.062},
		{"no solution", `Read 2 variables, with 2 values at most, and 2 cost functions, with maximum arity 2.
No solution in 0 backtracks and 0 nodes ( 0 removals by DEE) and 0.002004 seconds.
end.
`, false, true, false, math.NaN()},
		{"no solution at propagation", "loading uai file:  inf2.uai\nNo solution found by initial propagation!\nend.\n", false, true, false, math.NaN()},
		{"time limit", `New solution: 42889503248 energy: -12789.801 prob: inf (17104 backtracks, 34818 nodes, depth 333)
Optimality gap: [8568227609, 42889503248] 80.023 % (17434 backtracks, 35148 nodes)
New solution: 42801704523 energy: -12798.581 prob: inf (20360 backtracks, 41401 nodes, depth 329)

Time limit expired... Aborting...
`, false, false, true, -12798.581},
		{"no variables", "New solution: 0 energy: -0.000 prob: 1.000e+00 (0 backtracks, 0 nodes, depth 2)\nOptimum: 0 energy: -0.000 prob: 1.000e+00 in 0 backtracks\n", true, false, false, 0},
	} {
		r := parseOutput([]byte(tc.out))
		if r.optimum != tc.optimum || r.noSolution != tc.noSolution || r.timedOut != tc.timeOut ||
			!(r.energy == tc.energy || math.IsNaN(r.energy) && math.IsNaN(tc.energy)) {
			t.Errorf("%s: optimum %v, no solution %v, timed out %v, energy %v; want %v, %v, %v, %v", tc.name,
				r.optimum, r.noSolution, r.timedOut, r.energy, tc.optimum, tc.noSolution, tc.timeOut, tc.energy)
		}
	}
}

func TestTail(t *testing.T) {
	out := []byte("a\nb\nc\nd\n")
	if got, want := tail(out, 2), "toulbar2 output (end):\nc\nd"; got != want {
		t.Errorf("tail 2 = %q, want %q", got, want)
	}
	if got, want := tail(out, 10), "toulbar2 output (end):\na\nb\nc\nd"; got != want {
		t.Errorf("tail 10 = %q, want %q", got, want)
	}
	b := &tailBuffer{max: 4}
	for _, s := range []string{"0123", "4567", "89", "ab"} {
		b.Write([]byte(s))
	}
	if s := string(b.buf); !strings.HasSuffix(s, "6789ab") || len(s) > 8 {
		t.Errorf("tailBuffer kept %q, want at most 8 bytes ending in 6789ab", s)
	}
}

// TestForToulbar2PreservesEnergies checks that the model handed to toulbar2 has no
// offset, ascending scopes, and the energies of the original minus its offset.
func TestForToulbar2PreservesEnergies(t *testing.T) {
	gens := []func(rng *rand.Rand) *model.Model{
		func(rng *rand.Rand) *model.Model { return random.HigherOrder(rng, 7, 3, 4, 14) },
		func(rng *rand.Rand) *model.Model { return random.DensePairwise(rng, 7, 4, 0.6) },
		func(rng *rand.Rand) *model.Model { return random.PottsGrid(rng, 3, 3, 3) },
	}
	for seed := uint64(0); seed < 60; seed++ {
		m := gens[seed%3](random.New(seed))
		p, err := forToulbar2(m)
		if err != nil {
			t.Fatal(err)
		}
		for f := range p.NumFactors() {
			if !slices.IsSorted(p.FactorVars(f)) {
				t.Fatalf("seed %d: factor %d on %v", seed, f, p.FactorVars(f))
			}
		}
		rng := random.New(seed + 100)
		for range 50 {
			x := random.Labeling(rng, m)
			want, got := m.Energy(x)-m.Offset(), p.Energy(x)
			if !(want == got || math.Abs(want-got) <= 1e-12*max(1, math.Abs(want))) {
				t.Fatalf("seed %d: labeling %v: energy %v, want %v", seed, x, got, want)
			}
		}
	}
}

func TestWriteModelFormats(t *testing.T) {
	inf := math.Inf(1)
	build := func(t1 []float64) *model.Model {
		b := model.NewBuilder([]int{2, 3})
		if err := b.AddTable([]int{0, 1}, t1); err != nil {
			t.Fatal(err)
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		table []float64
		file  string
	}{
		{[]float64{0, 1, inf, 2, 3, 4}, "model.uai"},
		{[]float64{0, 800, inf, 2, 3, 4}, "model.LG"}, // exp(−800) underflows
	} {
		dir := t.TempDir()
		p, err := writeModel(dir, build(tc.table))
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(p) != tc.file {
			t.Errorf("table %v written to %s, want %s", tc.table, filepath.Base(p), tc.file)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(string(data)), "inf") {
			t.Errorf("%s contains an infinity, which toulbar2 cannot read:\n%s", tc.file, data)
		}
	}
}

func TestAutoPrecisionSpread(t *testing.T) {
	b := model.NewBuilder([]int{4, 4, 4, 4})
	add := func(f model.Function, u, v int) {
		id, err := b.AddFunction(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddFactor(id, u, v); err != nil {
			t.Fatal(err)
		}
	}
	add(model.Function{Kind: model.Potts, Shape: []int{4, 4}, W: 30}, 0, 1)                             // spread 30
	add(model.Function{Kind: model.TruncatedLinear, Shape: []int{4, 4}, W: 10, T: 2}, 1, 2)             // 20
	add(model.Function{Kind: model.TruncatedQuadratic, Shape: []int{4, 4}, W: 5, T: math.Inf(1)}, 2, 3) // 45
	if err := b.AddTable([]int{3}, []float64{1, math.Inf(1), -4, 0}); err != nil {                      // 5
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	// S = 100: 100·10^12 = 10^14 is within the budget, 10^15 is not.
	if p := AutoPrecision(m); p != 12 {
		t.Errorf("AutoPrecision = %d, want 12", p)
	}
}
