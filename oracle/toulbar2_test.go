package oracle_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
)

// solver returns a Toulbar2 bridge, or skips the test when toulbar2 is not installed.
// Under CI (CI set, as .ci/run installs toulbar2) a missing toulbar2 is a failure: the
// agreement tests must never pass by skipping there.
func solver(t *testing.T) oracle.Toulbar2 {
	t.Helper()
	path, err := oracle.FindToulbar2()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but toulbar2 is missing: %v", err)
		}
		t.Skipf("skipping, CI runs this test: %v", err)
	}
	return oracle.Toulbar2{Path: path}
}

// agree reports whether toulbar2's energy got matches the brute-force optimum want:
// equal within r.Tolerance (the rounding of -precision) plus float error, both +Inf,
// or both finite.
func agree(r oracle.Result, want float64) bool {
	if math.IsInf(r.Energy, 1) || math.IsInf(want, 1) {
		return r.Energy == want
	}
	return math.Abs(r.Energy-want) <= r.Tolerance+1e-9*max(1, math.Abs(want))
}

// checkResult checks r against the brute-force optimum want of m with the
// observations fixed (−1: free).
func checkResult(t *testing.T, what string, m *model.Model, fixed []int, r oracle.Result, want float64) {
	t.Helper()
	if !r.Optimal {
		t.Fatalf("%s: toulbar2 did not prove optimality", what)
	}
	if err := m.CheckLabeling(r.Labeling); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for v, l := range fixed {
		if l >= 0 && r.Labeling[v] != l {
			t.Fatalf("%s: variable %d observed as %d, labeled %d", what, v, l, r.Labeling[v])
		}
	}
	if e := m.Energy(r.Labeling); math.Float64bits(e) != math.Float64bits(r.Energy) {
		t.Fatalf("%s: Energy %v, but m.Energy(Labeling) = %v", what, r.Energy, e)
	}
	if !agree(r, want) {
		t.Fatalf("%s: toulbar2 energy %.12g (precision %d, tolerance %.3g), brute force %.12g", what, r.Energy, r.Precision, r.Tolerance, want)
	}
	if r.Energy < want-1e-9*max(1, math.Abs(want)) {
		t.Fatalf("%s: toulbar2 energy %.12g below the brute-force optimum %.12g", what, r.Energy, want)
	}
}

// randomEvidence observes each variable with probability 1/3, at a random label.
func randomEvidence(rng *rand.Rand, m *model.Model) (uai.Evidence, []int) {
	var ev uai.Evidence
	fixed := make([]int, m.NumVars())
	for v := range fixed {
		fixed[v] = -1
		if rng.IntN(3) == 0 {
			fixed[v] = rng.IntN(m.NumLabels(v))
			ev.Vars = append(ev.Vars, v)
			ev.Labels = append(ev.Labels, fixed[v])
		}
	}
	return ev, fixed
}

// minAgreeing is the minimum of m.Energy over the labelings that agree with fixed, by
// plain enumeration: a reference independent of model.Condition.
func minAgreeing(m *model.Model, fixed []int) float64 {
	x := make([]int, m.NumVars())
	best := math.Inf(1)
	var rec func(v int)
	rec = func(v int) {
		switch {
		case v == len(x):
			best = min(best, m.Energy(x))
		case fixed[v] >= 0:
			x[v] = fixed[v]
			rec(v + 1)
		default:
			for l := range m.NumLabels(v) {
				x[v] = l
				rec(v + 1)
			}
		}
	}
	rec(0)
	return best
}

// TestBruteForceAndToulbar2AgreeOnRandomModels solves 320 random models with both
// oracles, every fourth also twice under random evidence (160 more runs).
func TestBruteForceAndToulbar2AgreeOnRandomModels(t *testing.T) {
	tb := solver(t)
	gens := []struct {
		name string
		gen  func(rng *rand.Rand) *model.Model
	}{
		{"PottsGrid", func(rng *rand.Rand) *model.Model { return random.PottsGrid(rng, 3, 3, 3) }},
		{"DensePairwise", func(rng *rand.Rand) *model.Model { return random.DensePairwise(rng, 7, 4, 0.6) }},
		{"HigherOrder", func(rng *rand.Rand) *model.Model { return random.HigherOrder(rng, 7, 3, 4, 14) }},
		{"HigherOrder forbidden", func(rng *rand.Rand) *model.Model { return random.HigherOrder(rng, 7, 3, 3, 40) }},
	}
	const seeds = 80
	for _, g := range gens {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			for seed := uint64(0); seed < seeds; seed++ {
				m := g.gen(random.New(seed))
				_, want, err := oracle.BruteForce(m, 1<<16)
				if err != nil {
					t.Fatal(err)
				}
				r, err := tb.Solve(ctx, m, uai.Evidence{})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				checkResult(t, "seed "+strconv.FormatUint(seed, 10), m, nil, r, want)
				if math.IsInf(want, 1) {
					t.Fatalf("seed %d: the generator made an infeasible model", seed)
				}

				if seed%4 != 0 {
					continue
				}
				rng := random.New(seed + 1000)
				for i := range 2 {
					ev, fixed := randomEvidence(rng, m)
					c, err := m.Condition(fixed)
					if err != nil {
						t.Fatal(err)
					}
					_, want, err := oracle.BruteForce(c.Model, 1<<16)
					if err != nil {
						t.Fatal(err)
					}
					if ref := minAgreeing(m, fixed); !(ref == want || math.Abs(ref-want) <= 1e-9*max(1, math.Abs(ref))) {
						t.Fatalf("seed %d, evidence %v: BruteForce on the conditioned model %v, enumeration %v", seed, ev, want, ref)
					}
					r, err := tb.Solve(ctx, m, ev)
					if err != nil {
						t.Fatalf("seed %d, evidence %d %v: %v", seed, i, ev, err)
					}
					checkResult(t, "seed "+strconv.FormatUint(seed, 10)+" with evidence", m, fixed, r, want)
				}
			}
		})
	}
}

// buildModel runs add on a builder for labels and returns the model.
func buildModel(t *testing.T, labels []int, add func(b *model.Builder) error) *model.Model {
	t.Helper()
	b := model.NewBuilder(labels)
	if err := add(b); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestToulbar2Infeasible(t *testing.T) {
	tb := solver(t)
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		labels []int
		add    func(b *model.Builder) error
		ev     uai.Evidence
	}{
		{"every labeling forbidden", []int{2, 2}, func(b *model.Builder) error {
			return errors.Join(
				b.AddTable([]int{0}, []float64{inf, 1}),
				b.AddTable([]int{0, 1}, []float64{0, 0, inf, inf}),
			)
		}, uai.Evidence{}},
		{"forbidden by a ternary table", []int{2, 3, 2}, func(b *model.Builder) error {
			t := make([]float64, 12)
			for i := range t {
				t[i] = inf
			}
			t[7] = 1 // (1, 0, 1)
			return errors.Join(
				b.AddTable([]int{0, 1, 2}, t),
				b.AddTable([]int{2}, []float64{0, inf}),
			)
		}, uai.Evidence{}},
		{"infinite offset", []int{3}, func(b *model.Builder) error {
			return errors.Join(b.AddTable([]int{0}, []float64{1, 0, 2}), b.AddConstant(inf))
		}, uai.Evidence{}},
		{"evidence on a forbidden label", []int{2, 3}, func(b *model.Builder) error {
			return errors.Join(
				b.AddTable([]int{1}, []float64{0, inf, 2}),
				b.AddTable([]int{0, 1}, []float64{0, 1, 2, 3, 4, 5}),
			)
		}, uai.Evidence{Vars: []int{1}, Labels: []int{1}}},
		{"evidence at both ends of an equality chain", []int{2, 2, 2, 2}, func(b *model.Builder) error {
			// x0 = x1 = x2 = x3 with x0 = 0 and x3 = 1 observed: the conditioned model
			// keeps a finite constant, so toulbar2 must find the contradiction.
			eq := []float64{0, inf, inf, 0}
			return errors.Join(b.AddTable([]int{0, 1}, eq), b.AddTable([]int{1, 2}, eq), b.AddTable([]int{2, 3}, eq))
		}, uai.Evidence{Vars: []int{0, 3}, Labels: []int{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := buildModel(t, tc.labels, tc.add)
			fixed, err := tc.ev.Fixed(m.LabelCounts())
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.Condition(fixed)
			if err != nil {
				t.Fatal(err)
			}
			if _, e, err := oracle.BruteForce(c.Model, 1000); err != nil || !math.IsInf(e, 1) {
				t.Fatalf("the test model is feasible: %v, %v", e, err)
			}
			r, err := tb.Solve(t.Context(), m, tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, tc.name, m, fixed, r, inf)
		})
	}
}

func TestToulbar2EdgeCases(t *testing.T) {
	tb := solver(t)
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		labels []int
		add    func(b *model.Builder) error
		ev     uai.Evidence
	}{
		{"no factors", []int{2, 3, 1}, func(b *model.Builder) error { return nil }, uai.Evidence{}},
		{"only a constant", []int{2, 2}, func(b *model.Builder) error { return b.AddConstant(-2.5) }, uai.Evidence{}},
		{"no variables", nil, func(b *model.Builder) error { return b.AddConstant(1.25) }, uai.Evidence{}},
		{"1-label variables only", []int{1, 1, 1}, func(b *model.Builder) error {
			return errors.Join(b.AddTable([]int{0, 1}, []float64{3}), b.AddTable([]int{2, 0}, []float64{-1}))
		}, uai.Evidence{}},
		{"1-label variables and order-0 functions", []int{1, 3, 1, 2}, func(b *model.Builder) error {
			c, err := b.AddFunction(model.Function{Kind: model.Explicit, Table: []float64{0.75}})
			return errors.Join(err,
				b.AddFactor(c),
				b.AddTable([]int{0, 1}, []float64{1, 0.5, inf}),
				b.AddTable([]int{1, 3}, []float64{0, 1, 1, 0, 0.25, 2}),
				b.AddTable([]int{2}, []float64{-4}),
			)
		}, uai.Evidence{}},
		{"one observation", []int{2, 2, 2}, func(b *model.Builder) error {
			// toulbar2 misreads "1 v l"; the optimum without evidence has x0 = 1.
			return errors.Join(
				b.AddTable([]int{0}, []float64{1, 0}),
				b.AddTable([]int{0, 1}, []float64{0, 1, 1, 0}),
				b.AddTable([]int{1, 2}, []float64{0.5, 0, 0, 0.5}),
			)
		}, uai.Evidence{Vars: []int{0}, Labels: []int{0}}},
		{"repeated observation", []int{2, 2}, func(b *model.Builder) error {
			return b.AddTable([]int{0, 1}, []float64{0, 1, 1, 0})
		}, uai.Evidence{Vars: []int{1, 1}, Labels: []int{1, 1}}},
		{"every variable observed", []int{2, 3}, func(b *model.Builder) error {
			return b.AddTable([]int{0, 1}, []float64{0, 1, 2, 3, 4, 5})
		}, uai.Evidence{Vars: []int{0, 1}, Labels: []int{1, 2}}},
		{"factor energies spanning more than 700 (LG file)", []int{3, 3, 2}, func(b *model.Builder) error {
			return errors.Join(
				b.AddTable([]int{0, 1}, []float64{0, 900, inf, -5000, 1e4, 3, 2, 1, 0}),
				b.AddTable([]int{1, 2}, []float64{-800, inf, 0.5, 2e3, 7, -1}),
				b.AddTable([]int{2}, []float64{inf, 0}),
			)
		}, uai.Evidence{}},
		{"huge constant (a probability file would need 3·10^9 order-0 factors)", []int{2, 3}, func(b *model.Builder) error {
			return errors.Join(b.AddTable([]int{1, 0}, []float64{0, 1, 2, -3, 4, inf}), b.AddConstant(1e12))
		}, uai.Evidence{}},
		{"large energies", []int{3, 3, 3}, func(b *model.Builder) error {
			return errors.Join(
				b.AddTable([]int{0, 1}, []float64{1e4, 2e4, 3e4, -1e4, 4e3, 5.5e3, 9e3, 1e3, 7e3}),
				b.AddTable([]int{1, 2}, []float64{1234.5, 2345.25, 3456.125, 4567, 5678, 6789, 7890, 8901, 9012}),
				b.AddConstant(1e4),
			)
		}, uai.Evidence{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := buildModel(t, tc.labels, tc.add)
			fixed, err := tc.ev.Fixed(m.LabelCounts())
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.Condition(fixed)
			if err != nil {
				t.Fatal(err)
			}
			_, want, err := oracle.BruteForce(c.Model, 1000)
			if err != nil {
				t.Fatal(err)
			}
			r, err := tb.Solve(t.Context(), m, tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, tc.name, m, fixed, r, want)
		})
	}
}

// TestToulbar2Workarounds solves the smallest models found on which toulbar2 1.1.1
// itself fails (see Solve): the bridge must get them right.
func TestToulbar2Workarounds(t *testing.T) {
	tb := solver(t)
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		labels []int
		add    func(b *model.Builder) error
	}{
		{"1-label variable in a pairwise factor next to an order-4 factor (toulbar2 crashes)",
			[]int{3, 2, 2, 2, 1}, func(b *model.Builder) error {
				t := make([]float64, 24)
				t[11], t[23] = 0.7, 0.7
				return errors.Join(
					b.AddTable([]int{4, 3}, []float64{0, inf}),
					b.AddTable([]int{3, 1, 2, 0}, t),
				)
			}},
		{"pairwise factor on (b, a) and order-3 factor on (a, b, c) (toulbar2 returns a wrong optimum)",
			[]int{3, 2, 2}, func(b *model.Builder) error {
				p3 := []float64{0.572543489785202, 0, 1.1234582831138962, 1.673731387355155,
					0.44719837166544774, 0.8659424799945773, 1.3194182809286505, 2.1192184973868544,
					0.7497436743428899, 2.091026854862627, 1.107843451523933, 0.7282381442508413}
				p2 := []float64{0.37573587634584255, 0.8023871211825706, 1.7726694262743274,
					2.603367318172568, 0.4552727025064451, 1.9598032153577027}
				return errors.Join(b.AddTable([]int{0, 1, 2}, energies(p3)), b.AddTable([]int{1, 0}, energies(p2)))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := buildModel(t, tc.labels, tc.add)
			_, want, err := oracle.BruteForce(m, 1000)
			if err != nil {
				t.Fatal(err)
			}
			r, err := tb.Solve(t.Context(), m, uai.Evidence{})
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, tc.name, m, nil, r, want)
		})
	}
}

// energies converts probabilities to energies, −ln p.
func energies(p []float64) []float64 {
	e := make([]float64, len(p))
	for i, v := range p {
		e[i] = -math.Log(v)
	}
	return e
}

// chain returns a chain of 5 variables with 3 labels and random pairwise energies in
// [−scale, scale), one of them forbidden.
func chain(t *testing.T, scale float64) *model.Model {
	rng := random.New(3)
	labels := []int{3, 3, 3, 3, 3}
	return buildModel(t, labels, func(b *model.Builder) error {
		for v := 1; v < len(labels); v++ {
			t := make([]float64, 9)
			for i := range t {
				t[i] = scale * (2*rng.Float64() - 1)
			}
			if v == 2 {
				t[4] = math.Inf(1)
			}
			if err := b.AddTable([]int{v - 1, v}, t); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestToulbar2PrecisionFollowsEnergyRange checks the automatic precision: 12 digits
// for small energies, fewer as the energies grow, so that costs never overflow.
func TestToulbar2PrecisionFollowsEnergyRange(t *testing.T) {
	tb := solver(t)
	for _, tc := range []struct {
		scale float64
		prec  int
	}{{1, 12}, {100, 11}, {1e4, 9}, {1e6, 7}, {1e9, 4}} {
		m := chain(t, tc.scale)
		if p := oracle.AutoPrecision(m); p != tc.prec {
			t.Errorf("scale %g: AutoPrecision = %d, want %d", tc.scale, p, tc.prec)
		}
		_, want, err := oracle.BruteForce(m, 1000)
		if err != nil {
			t.Fatal(err)
		}
		r, err := tb.Solve(t.Context(), m, uai.Evidence{})
		if err != nil {
			t.Fatalf("scale %g: %v", tc.scale, err)
		}
		checkResult(t, "scale "+strconv.FormatFloat(tc.scale, 'g', -1, 64), m, nil, r, want)
	}
}

// TestToulbar2OverflowIsAnError forces a precision whose costs overflow: toulbar2 then
// reports "No solution" for a feasible model, which Solve must not take for a proof.
func TestToulbar2OverflowIsAnError(t *testing.T) {
	tb := solver(t)
	tb.Precision = 15
	_, err := tb.Solve(t.Context(), chain(t, 100), uai.Evidence{})
	if err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Fatalf("precision 15: err = %v, want an overflow error", err)
	}
}

func TestToulbar2Errors(t *testing.T) {
	tb := solver(t)
	m := random.PottsGrid(random.New(1), 2, 2, 2)
	if _, err := tb.Solve(t.Context(), m, uai.Evidence{Vars: []int{4}, Labels: []int{0}}); err == nil {
		t.Error("evidence on variable 4 of 4: no error")
	}
	if _, err := tb.Solve(t.Context(), m, uai.Evidence{Vars: []int{0, 0}, Labels: []int{0, 1}}); err == nil {
		t.Error("contradicting evidence: no error")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tb.Solve(ctx, m, uai.Evidence{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v, want context.Canceled", err)
	}
	bad := tb
	bad.ExtraArgs = []string{"-no-such-option=1"}
	if _, err := bad.Solve(t.Context(), m, uai.Evidence{}); err == nil || !strings.Contains(err.Error(), "toulbar2 output") {
		t.Errorf("unknown option: err = %v, want an error with toulbar2's output", err)
	}
	missing := oracle.Toulbar2{Path: filepath.Join(t.TempDir(), "no-toulbar2")}
	if _, err := missing.Solve(t.Context(), m, uai.Evidence{}); err == nil {
		t.Error("missing executable: no error")
	}
}

// TestToulbar2RemovesItsFiles checks that nothing is left in the temporary directory
// after a solved, an infeasible and a failed run.
func TestToulbar2RemovesItsFiles(t *testing.T) {
	tb := solver(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	inf := math.Inf(1)
	infeasible := buildModel(t, []int{2, 2}, func(b *model.Builder) error {
		return errors.Join(b.AddTable([]int{0}, []float64{inf, 1}), b.AddTable([]int{0, 1}, []float64{0, 0, inf, inf}))
	})
	if r, err := tb.Solve(t.Context(), infeasible, uai.Evidence{}); err != nil || !math.IsInf(r.Energy, 1) {
		t.Fatalf("infeasible model: %v, %v", r.Energy, err)
	}
	if _, err := tb.Solve(t.Context(), random.PottsGrid(random.New(2), 3, 3, 2), uai.Evidence{}); err != nil {
		t.Fatal(err)
	}
	tb.ExtraArgs = []string{"-no-such-option=1"}
	if _, err := tb.Solve(t.Context(), random.PottsGrid(random.New(2), 3, 3, 2), uai.Evidence{}); err == nil {
		t.Fatal("unknown option: no error")
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Fatalf("left in TMPDIR: %v (%v)", left, err)
	}
}

func TestFindToulbar2MissingNamesTheFix(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := oracle.FindToulbar2()
	if err == nil || !strings.Contains(err.Error(), "apt-get install toulbar2") {
		t.Fatalf("FindToulbar2 with an empty PATH: %v, want an error naming apt-get install toulbar2", err)
	}
}

var sharedModels = testutil.SharedPath("models")

// oracleOPT returns the proved optima listed in ../shared/models/oracle/oracle.tsv.
func oracleOPT(t *testing.T) map[string]float64 {
	t.Helper()
	opt := map[string]float64{}
	for _, r := range testutil.ReadOracle(t, sharedModels) {
		if r.Proven {
			opt[r.Path] = r.Energy
		}
	}
	return opt
}

func TestToulbar2OnRealModels(t *testing.T) {
	tb := solver(t)
	opt := oracleOPT(t)
	for _, name := range []string{
		"toulbar2/network.uai",
		"pgmpy/grid4x4.uai",
		"uai2014-mroavi/MAP/Promedas_70.uai",        // with its evidence
		"toulbar2/water.uai",                        // BAYES, tables of order up to 6
		"toulbar2/279_ASP.uai",                      // dense pairwise, up to 18 labels
		"pascal2-dechterlab/pedigree/pedigree1.uai", // order 5, 1-label variables
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, ok := opt[name]
			if !ok {
				t.Fatalf("oracle.tsv has no OPT row for %s", name)
			}
			path := filepath.Join(sharedModels, name)
			testutil.SkipWithoutShared(t, path)
			m, err := uai.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var ev uai.Evidence
			if p, ok := uai.EvidencePathFor(path); ok {
				if ev, err = uai.ReadEvidenceFile(p); err != nil {
					t.Fatal(err)
				}
			}
			fixed, err := ev.Fixed(m.LabelCounts())
			if err != nil {
				t.Fatal(err)
			}
			r, err := tb.Solve(t.Context(), m, ev)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Optimal {
				t.Fatal("no proof of optimality")
			}
			for v, l := range fixed {
				if l >= 0 && r.Labeling[v] != l {
					t.Fatalf("observed variable %d labeled %d, evidence %d", v, r.Labeling[v], l)
				}
			}
			// oracle.tsv rounds to 3 decimals.
			if math.Abs(r.Energy-want) > 5e-4+r.Tolerance {
				t.Errorf("energy %.6f (precision %d), oracle.tsv OPT %.3f", r.Energy, r.Precision, want)
			}
			t.Logf("%d evidence, energy %.6f, reported %.3f, precision %d, tolerance %.2g", ev.Len(), r.Energy, r.ReportedEnergy, r.Precision, r.Tolerance)
		})
	}
}

// hardGrid is toulbar2 and Grids_18, a frustrated 40×40 grid it cannot solve
// in a minute; the test (what) skips in -short mode and without ../shared.
func hardGrid(t *testing.T, what string) (oracle.Toulbar2, *model.Model) {
	t.Helper()
	tb := solver(t)
	if testing.Short() {
		t.Skipf("skipping %s in -short mode", what)
	}
	path := filepath.Join(sharedModels, "uai2014-mroavi/MAP/Grids_18.uai")
	testutil.SkipWithoutShared(t, path)
	m, err := uai.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return tb, m
}

// TestToulbar2TimeLimit stops toulbar2 after a CPU second on a frustrated 40×40 grid
// it cannot solve in a minute: the best labeling comes back unproven.
func TestToulbar2TimeLimit(t *testing.T) {
	tb, m := hardGrid(t, "the 1-second time limit")
	tb.Timeout = time.Second
	start := time.Now()
	r, err := tb.Solve(t.Context(), m, uai.Evidence{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Optimal {
		t.Fatalf("toulbar2 proved optimality on Grids_18 within a second (energy %v)", r.Energy)
	}
	if math.IsInf(r.Energy, 0) || m.Energy(r.Labeling) != r.Energy {
		t.Fatalf("energy %v, m.Energy(labeling) %v", r.Energy, m.Energy(r.Labeling))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 1-second limit took %v", d)
	}
}

// TestToulbar2StoppedAtADeadlineKeepsItsBest: a context deadline (a
// completion's time spent, or the kill past Timeout on a loaded machine) stops
// toulbar2 on a model it cannot solve in that time, and Solve returns the
// labeling it wrote last, unproven, instead of an error; cancelling the
// context is still an error.
func TestToulbar2StoppedAtADeadlineKeepsItsBest(t *testing.T) {
	tb, m := hardGrid(t, "the 2-second deadline")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	r, err := tb.Solve(ctx, m, uai.Evidence{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Optimal || math.IsInf(r.Energy, 0) || m.Energy(r.Labeling) != r.Energy {
		t.Fatalf("optimal %v, energy %v, m.Energy(labeling) %v: want an unproven labeling", r.Optimal, r.Energy, m.Energy(r.Labeling))
	}
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(2*time.Second, cancel)
	if _, err := tb.Solve(ctx, m, uai.Evidence{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
