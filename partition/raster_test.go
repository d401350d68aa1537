package partition_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// solveRaster runs SolveRaster with in-memory stores and returns the persistent labels
// (−1 unproven) and the labeling.
func solveRaster(t *testing.T, r partition.Raster, opt partition.RasterOptions, fixed []int) ([]int, []int, *partition.RasterResult) {
	t.Helper()
	pers := partition.NewMemStore(r.Width, r.Height)
	for v, l := range fixed {
		pers.Values[v] = int32(l + 1)
	}
	lab := partition.NewMemStore(r.Width, r.Height)
	res, err := partition.SolveRaster(context.Background(), r, pers, lab, partition.NewMemStore(r.Width, r.Height), opt)
	if err != nil {
		t.Fatal(err)
	}
	p, l := make([]int, len(pers.Values)), make([]int, len(lab.Values))
	for v := range p {
		p[v], l[v] = int(pers.Values[v])-1, int(lab.Values[v])
	}
	return p, l, res
}

func rasterOf(t *testing.T, m *model.Model, w, h int) partition.Raster {
	t.Helper()
	r, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOutOfCoreSolveEqualsInMemorySolve: SolveRaster over a tiled grid file, reading
// only windows, proves exactly the labels of Solve with the same plan on the whole
// model in memory, and so does SolveRaster over the in-memory model.
func TestOutOfCoreSolveEqualsInMemorySolve(t *testing.T) {
	cases := []struct {
		name             string
		m                *model.Model
		w, h             int
		core, halo, rnds int
	}{
		{"denoise", random.PottsDenoising(random.New(7), 48, 40, 4, 0.8, 4, 1.2), 48, 40, 16, 3, 3},
		{"denoise-tight", random.PottsDenoising(random.New(8), 33, 29, 3, 0.6, 4, 1.0), 33, 29, 10, 2, 2},
		{"potts-per-edge", random.PottsGrid(random.New(9), 20, 17, 2), 20, 17, 6, 2, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.grid")
			if err := grid.WriteModelFile(path, c.m, c.w, c.h, 8); err != nil {
				t.Fatal(err)
			}
			f, err := grid.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := f.Model() // the file's (float32) model is the reference
			if err != nil {
				t.Fatal(err)
			}
			shift := func(round int) int { return round * c.core / 2 }
			ref, err := partition.Solve(context.Background(), m, partition.Options{
				Plan:      func(round int) partition.Plan { return partition.GridPlan(c.w, c.h, c.core, c.halo, shift(round)) },
				MaxRounds: c.rnds, Workers: 2,
			})
			if err != nil {
				t.Fatal(err)
			}
			opt := partition.RasterOptions{Core: c.core, Halo: c.halo, MaxRounds: c.rnds, Workers: 3}
			file := partition.Raster{Width: c.w, Height: c.h, Window: f.Window}
			got, lab, res := solveRaster(t, file, opt, nil)
			if !slices.Equal(got, ref.Persistent) {
				t.Fatalf("out of core: %d proven, in memory %d; labels differ", proven(got), proven(ref.Persistent))
			}
			if !slices.Equal(lab, ref.Labeling) {
				t.Fatal("the labelings differ")
			}
			mem, _, _ := solveRaster(t, rasterOf(t, m, c.w, c.h), opt, nil)
			if !slices.Equal(mem, ref.Persistent) {
				t.Fatal("SolveRaster on the in-memory model differs from Solve")
			}
			if res.Rounds != ref.Rounds || int64(proven(got)) != res.Persistent {
				t.Errorf("rounds %d (Solve: %d), persistent count %d for %d labels", res.Rounds, ref.Rounds, res.Persistent, proven(got))
			}
			t.Logf("%d of %d proven in %d rounds, %d windows (%d solved)", proven(got), len(got), res.Rounds, res.Windows, res.Solved)
		})
	}
}

func proven(p []int) int {
	n := 0
	for _, l := range p {
		if l >= 0 {
			n++
		}
	}
	return n
}

// TestOutOfCoreSolveIsDeterministic: any worker count and any completion order (a
// jittery solver shuffles it) give the same stores.
func TestOutOfCoreSolveIsDeterministic(t *testing.T) {
	m := random.PottsDenoising(random.New(3), 40, 40, 4, 1.2, 4, 2)
	r := rasterOf(t, m, 40, 40)
	var first, firstLab []int
	for i, workers := range []int{1, 4, 3, 8} {
		p, l, _ := solveRaster(t, r, partition.RasterOptions{Core: 12, Halo: 3, MaxRounds: 2, Workers: workers,
			Persistency: persistency.Options{Solver: &jittery{rng: random.New(uint64(i))}}}, nil)
		if first == nil {
			first, firstLab = p, l
			continue
		}
		if !slices.Equal(first, p) || !slices.Equal(firstLab, l) {
			t.Fatalf("workers %d: a different result", workers)
		}
	}
}

// TestOutOfCoreResultsArePersistent: on small random grids, fixing the proven labels
// (on top of fixed ones given as evidence) keeps the optimum (brute force), and the
// labeling agrees with them.
func TestOutOfCoreResultsArePersistent(t *testing.T) {
	provenN, total := 0, 0
	for seed := uint64(0); seed < 60; seed++ {
		rng := random.New(seed)
		const w, h = 5, 4
		m := random.PottsGrid(rng, w, h, 2)
		if seed%2 == 1 {
			m = random.FrustratedGrid(rng, w, h)
		}
		var fixed []int
		if seed%3 == 0 { // evidence: one pixel fixed at its optimal label is kept
			fixed = slices.Repeat([]int{-1}, w*h)
			x, _, err := oracle.BruteForce(m, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			fixed[7] = x[7]
		}
		p, lab, _ := solveRaster(t, rasterOf(t, m, w, h), partition.RasterOptions{
			Core: 1 + int(seed%3), Halo: int(seed % 2), MaxRounds: 3, Workers: 1 + int(seed%2)}, fixed)
		if fixed != nil && p[7] != fixed[7] {
			t.Fatalf("seed %d: a fixed label was changed", seed)
		}
		ref := m
		if fixed != nil {
			c, err := m.Condition(fixed)
			if err != nil {
				t.Fatal(err)
			}
			ref = c.Model
		}
		_, opt, err := oracle.BruteForce(ref, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Condition(p)
		if err != nil {
			t.Fatal(err)
		}
		_, copt, err := oracle.BruteForce(c.Model, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(copt-opt) > 1e-6*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d: optimum %v, with the windowed labels fixed %v", seed, opt, copt)
		}
		for v, l := range p {
			if l >= 0 && lab[v] != l {
				t.Errorf("seed %d: labeling %d at a pixel proven %d", seed, lab[v], l)
			}
		}
		provenN += proven(p)
		total += len(p)
	}
	if provenN == 0 || provenN == total {
		t.Errorf("%d of %d proven: the test checks too little", provenN, total)
	}
}

// TestOutOfCoreSolveReportsFailures: a window that cannot be read fails the solve
// with an error naming it, and a cancelled context stops it.
func TestOutOfCoreSolveReportsFailures(t *testing.T) {
	m := random.PottsDenoising(random.New(1), 30, 30, 3, 1, 4, 1.5)
	r := rasterOf(t, m, 30, 30)
	bad := r
	bad.Model = nil // out of core: every window is read by Window
	bad.Window = func(x0, y0, w, h int) (*model.Model, error) {
		if x0 > 10 && y0 > 10 {
			return nil, errors.New("tile (1,1): checksum mismatch")
		}
		return r.Window(x0, y0, w, h)
	}
	st := func() partition.Store { return partition.NewMemStore(30, 30) }
	_, err := partition.SolveRaster(context.Background(), bad, st(), st(), st(), partition.RasterOptions{Core: 10, Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), "window") {
		t.Errorf("got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := partition.SolveRaster(ctx, r, st(), st(), st(), partition.RasterOptions{Core: 10}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
	if _, err := partition.SolveRaster(context.Background(), r, st(), st(), st(), partition.RasterOptions{Core: 0}); err == nil {
		t.Error("core 0 accepted")
	}
}

// TestRasterWindowProofsAreChecked: a window's result is accepted by
// CheckRasterWindow from the model and the fixed labels alone, and every forgery
// a worker could send is refused: a label claimed persistent that the proof does
// not prove, a persistent label changed, "every node persistent at label 0", a
// missing proof, another window's proof, or labels fixed otherwise than the
// round's.
func TestRasterWindowProofsAreChecked(t *testing.T) {
	const w, h = 24, 20
	m := random.PottsDenoising(random.New(11), w, h, 3, 0.9, 4, 1.3)
	r := rasterOf(t, m, w, h)
	fixed := partition.NewMemStore(w, h)
	for v := 0; v < w*h; v += 7 { // some labels fixed by an earlier round
		fixed.Values[v] = int32(v%3 + 1)
	}
	opt := persistency.Options{Solver: persistency.TRWS{}}
	wins := partition.RasterWindows(w, h, 8, 3, 0)
	checked, forged := 0, 0
	for i, win := range wins {
		res, err := partition.SolveWindow(context.Background(), r, win, fixed, opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := partition.CheckRasterWindow(r, win, fixed, res.Persistent, partition.ProofValue(res.Proof)); err != nil {
			t.Fatalf("window %d: the genuine result refused: %v", i, err)
		}
		checked++
		if res.Vars == 0 {
			continue
		}
		tamper := func(what string, change func(*partition.WindowResult), store partition.Store, win partition.RasterWindow) {
			t.Helper()
			f := *res
			f.Persistent = slices.Clone(res.Persistent)
			change(&f)
			if err := partition.CheckRasterWindow(r, win, store, f.Persistent, partition.ProofValue(f.Proof)); err == nil {
				t.Errorf("window %d: %s accepted", i, what)
			}
			forged++
		}
		unproven, proven := slices.Index(res.Persistent, 0), slices.IndexFunc(res.Persistent, func(l int32) bool { return l > 0 })
		if unproven >= 0 {
			tamper("an unproven node claimed", func(f *partition.WindowResult) { f.Persistent[unproven] = 1 }, fixed, win)
		}
		if proven >= 0 {
			tamper("a persistent label changed", func(f *partition.WindowResult) { f.Persistent[proven] = f.Persistent[proven]%3 + 1 }, fixed, win)
		}
		tamper("every node at label 0", func(f *partition.WindowResult) {
			for k := range f.Persistent {
				f.Persistent[k] = 1
			}
		}, fixed, win)
		tamper("no proof", func(f *partition.WindowResult) { f.Proof = nil }, fixed, win)
		tamper("another window", func(*partition.WindowResult) {}, fixed, wins[(i+1)%len(wins)])
		tamper("other fixed labels", func(*partition.WindowResult) {}, partition.NewMemStore(w, h), win)
	}
	if checked != len(wins) || forged < 4*len(wins) {
		t.Fatalf("%d windows checked, %d forgeries tried", checked, forged)
	}
}
