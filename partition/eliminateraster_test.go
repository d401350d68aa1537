package partition_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"math/rand/v2"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// rasterElimination runs EliminateRaster on m (a w×h raster) from the domains
// of the persistent labels pers (nil: every label) with in-memory stores, and
// returns what the stores hold — alive labels, labeling, persistent labels — and
// the window certificates file.
func rasterElimination(t *testing.T, m *model.Model, w, h int, pers []int, opt partition.RasterEliminateOptions) (alive [][]int, labeling, persistent []int, proofs []byte, res *partition.RasterEliminationResult) {
	t.Helper()
	r, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	k := m.NumLabels(0)
	live, prior := partition.NewMemAlive(w, h, k), partition.NewMemAlive(w, h, k)
	var start partition.Store
	if pers != nil {
		s := partition.NewMemStore(w, h)
		for v, l := range pers {
			s.Values[v] = int32(l + 1)
		}
		start = s
	}
	if _, err := partition.InitAlive(live, w, h, start); err != nil {
		t.Fatal(err)
	}
	lab, per := partition.NewMemStore(w, h), partition.NewMemStore(w, h)
	var buf bytes.Buffer
	opt.Proofs = partition.NewProofWriter(&buf)
	if res, err = partition.EliminateRaster(context.Background(), r, live, prior, lab, per, opt); err != nil {
		t.Fatal(err)
	}
	if err := opt.Proofs.Close(); err != nil {
		t.Fatal(err)
	}
	if alive, err = live.ReadDomains(partition.Rect{W: w, H: h}); err != nil {
		t.Fatal(err)
	}
	labeling, persistent = make([]int, w*h), make([]int, w*h)
	for v := range labeling {
		labeling[v], persistent[v] = int(lab.Values[v]), int(per.Values[v])-1
	}
	return alive, labeling, persistent, buf.Bytes(), res
}

// inMemoryElimination is the same with Eliminate on the in-memory model, and
// its proofs written as job writes them.
func inMemoryElimination(t *testing.T, m *model.Model, domains [][]int, opt partition.EliminateOptions) (*partition.Elimination, []byte) {
	t.Helper()
	opt.Domains = domains
	res, err := partition.Eliminate(context.Background(), m, opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	pw := partition.NewProofWriter(&buf)
	for _, pr := range res.Proofs {
		if pr.Result != nil {
			if err := pw.Elimination(pr.Round, pr.Nodes, pr.Result); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return res, buf.Bytes()
}

// TestOutOfCoreEliminationIsEliminate: label elimination by raster windows out
// of core (EliminateRaster, alive labels in planes) gives exactly Eliminate's
// result with the same grid plans — alive labels, labeling, persistent labels,
// window certificates byte for byte — on the committed denoising raster, random
// Potts and truncated-linear rasters (two planes of labels among them), with
// growing levels, several rounds, pbp's labels as the start, and any worker
// count.
func TestOutOfCoreEliminationIsEliminate(t *testing.T) {
	denoise, err := modelfile.Read("../testdata/denoise32.uai.gz")
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name       string
		m          *model.Model
		w, h       int
		core, halo int
		maxLevel   int
		rounds     int
		pbp        bool
	}
	cases := []tc{
		{"denoise32", denoise, 32, 32, 8, 2, 1, 3, false},
		{"denoise32 from pbp", denoise, 32, 32, 8, 2, 2, 3, true},
	}
	for seed := range uint64(6) {
		rng := random.New(100 + seed)
		w, h := 9+int(seed%3)*2, 7+int(seed%2)
		var m *model.Model
		switch seed % 3 {
		case 0:
			m = random.PottsGrid(rng, w, h, 3)
		case 1:
			m = truncatedGrid(rng, w, h, 5)
		default:
			m = random.PottsDenoising(rng, w, h, 36, 6, 8, 1.5) // two alive planes
		}
		cases = append(cases, tc{fmt.Sprintf("random %d", seed), m, w, h, 3 + int(seed%2), 1, int(seed % 3), 4, seed%2 == 1})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pers []int
			var domains [][]int
			if c.pbp {
				// pbp by small windows, as pbp+iri's first stage: it leaves some undecided.
				r, err := partition.Solve(context.Background(), c.m, partition.Options{Plan: func(int) partition.Plan {
					return partition.GridPlan(c.w, c.h, 4, 2, 0)
				}})
				if err != nil {
					t.Fatal(err)
				}
				pers = r.Persistent
				domains = (&persistency.Result{Persistent: pers}).Domains(c.m)
				t.Logf("pbp proved %d of %d", persistency.Count(pers), len(pers))
			}
			wins := func(round, level int) []partition.RasterWindow {
				size := c.core << level
				return partition.RasterWindows(c.w, c.h, size, c.halo<<level, round*size/2)
			}
			plan := func(round, level int) partition.Plan {
				size := c.core << level
				return partition.GridPlan(c.w, c.h, size, c.halo<<level, round*size/2)
			}
			want, wantProofs := inMemoryElimination(t, c.m, domains, partition.EliminateOptions{Plan: plan, MaxLevel: c.maxLevel, MaxRounds: c.rounds, Workers: 2})
			for _, workers := range []int{1, 3} {
				alive, lab, per, proofs, res := rasterElimination(t, c.m, c.w, c.h, pers, partition.RasterEliminateOptions{Plan: wins, MaxLevel: c.maxLevel, MaxRounds: c.rounds, Workers: workers})
				for v := range alive {
					if !slices.Equal(alive[v], want.Alive[v]) {
						t.Fatalf("workers %d: pixel %d: alive %v, Eliminate %v", workers, v, alive[v], want.Alive[v])
					}
				}
				if !slices.Equal(lab, want.Labeling) || !slices.Equal(per, want.Persistent) {
					t.Fatalf("workers %d: labeling or persistent labels differ from Eliminate's", workers)
				}
				if !bytes.Equal(proofs, wantProofs) {
					t.Fatalf("workers %d: window certificates of %d bytes, Eliminate's %d, differ", workers, len(proofs), len(wantProofs))
				}
				t.Logf("workers %d: %d persistent, %d labels eliminated, %d windows solved", workers, res.Persistent, res.Eliminated, res.Solved)
				if res.Rounds != want.Rounds || res.Windows != want.Windows || res.Level != want.Level || res.Persistent != int64(persistency.Count(want.Persistent)) {
					t.Fatalf("workers %d: %+v; Eliminate: %d rounds, %d windows, level %d, %d persistent", workers, res, want.Rounds, want.Windows, want.Level, persistency.Count(want.Persistent))
				}
			}
		})
	}
}

// TestOutOfCoreEliminationKeepsTheOptimum: on many small random rasters (Potts,
// truncated linear and quadratic, frustrated), the out-of-core elimination's
// alive labels keep an optimum (brute force over the model and over the alive
// labels), its labeling takes alive labels only, and the replay of its window
// certificates gives back its alive labels.
func TestOutOfCoreEliminationKeepsTheOptimum(t *testing.T) {
	eliminated, labels := int64(0), int64(0)
	for seed := range uint64(90) {
		rng := random.New(seed)
		w, h := 4, 3
		var m *model.Model
		switch seed % 3 {
		case 0:
			m = random.PottsGrid(rng, w, h, 3)
		case 1:
			m = truncatedGrid(rng, w, h, 3)
		default:
			m = random.FrustratedGrid(rng, w, h)
		}
		core, halo := 1+int(seed%3), int(seed%2)
		wins := func(round, level int) []partition.RasterWindow {
			return partition.RasterWindows(w, h, core<<level, halo, round)
		}
		alive, lab, per, proofs, res := rasterElimination(t, m, w, h, nil, partition.RasterEliminateOptions{Plan: wins, Workers: 1 + int(seed%2), MaxRounds: 4, MaxLevel: int(seed % 3)})
		_, opt, err := oracle.BruteForce(m, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		restricted, err := m.Restrict(alive)
		if err != nil {
			t.Fatal(err)
		}
		_, ropt, err := oracle.BruteForce(restricted, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		if !(ropt == opt || math.Abs(ropt-opt) <= 1e-6*math.Max(1, math.Abs(opt))) {
			t.Errorf("seed %d: optimum %v, over the alive labels %v", seed, opt, ropt)
		}
		for v, ls := range alive {
			if !slices.Contains(ls, lab[v]) || (len(ls) == 1) != (per[v] >= 0) {
				t.Fatalf("seed %d: pixel %d: label %d, persistent %d, alive %v", seed, v, lab[v], per[v], ls)
			}
		}
		// The replay of the certificates re-derives the alive labels.
		r, _ := partition.RasterOf(m, w, h)
		k := m.NumLabels(0)
		live, prior := partition.NewMemAlive(w, h, k), partition.NewMemAlive(w, h, k)
		partition.InitAlive(live, w, h, nil)
		g, err := partition.NewRasterMerger(w, h, live, prior, nil)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := partition.NewProofReader("certs", bytes.NewReader(proofs), int64(len(proofs)), int64(w*h))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := partition.ReplayRasterElimination(context.Background(), r, g, rd, 2); err != nil {
			t.Fatalf("seed %d: replay: %v", seed, err)
		}
		replayed, _ := live.ReadDomains(partition.Rect{W: w, H: h})
		for v := range alive {
			if !slices.Equal(replayed[v], alive[v]) {
				t.Fatalf("seed %d: pixel %d: replayed %v, run %v", seed, v, replayed[v], alive[v])
			}
		}
		eliminated += res.Eliminated
		labels += int64(w * h * (k - 1))
	}
	t.Logf("%d of %d labels eliminated", eliminated, labels)
	if eliminated < labels/10 || eliminated == labels {
		t.Errorf("%d of %d labels eliminated: the test checks too little", eliminated, labels)
	}
}

// truncatedGrid is a w×h 4-connected raster of k labels everywhere: random
// unaries in [0, 2) and on every edge a truncated linear (or, one in three,
// truncated quadratic) term of random weight and truncation — stereo's kind.
func truncatedGrid(rng *rand.Rand, w, h, k int) *model.Model {
	labels := make([]int, w*h)
	for v := range labels {
		labels[v] = k
	}
	b := model.NewBuilder(labels)
	for v := range labels {
		t := make([]float64, k)
		for l := range t {
			t[l] = 2 * rng.Float64()
		}
		if err := b.AddTable([]int{v}, t); err != nil {
			panic(err)
		}
	}
	for y := range h {
		for x := range w {
			for _, u := range [][2]int{{x + 1, y}, {x, y + 1}} {
				if u[0] >= w || u[1] >= h {
					continue
				}
				kind := model.TruncatedLinear
				if rng.IntN(3) == 0 {
					kind = model.TruncatedQuadratic
				}
				fn, err := b.AddFunction(model.Function{Kind: kind, Shape: []int{k, k}, W: 0.2 + rng.Float64(), T: []float64{1, 2, 3}[rng.IntN(3)]})
				if err == nil {
					err = b.AddFactor(fn, y*w+x, u[1]*w+u[0])
				}
				if err != nil {
					panic(err)
				}
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}
