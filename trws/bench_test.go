package trws_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/trws"
)

// benchIterations times b.N TRW-S iterations (one forward and one backward pass each;
// the primal labeling and consistency are computed once, at the last) and reports
// node-updates/s = iterations × variables / seconds, the measure, and the
// solver's heap.
func benchIterations(b *testing.B, m *model.Model) {
	benchIterationsOn(b, m, 1)
}

// benchIterationsOn is benchIterations with the passes on threads goroutines.
func benchIterationsOn(b *testing.B, m *model.Model, threads int) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := trws.New(m)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// One untimed iteration first: it touches the freshly mapped message pages, a
	// one-time cost (about 2.7 ms/MiB on our VMs) that is not iteration speed.
	if _, err := s.Solve(context.Background(), trws.Options{MaxIterations: 1, GapTolerance: 0}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	r, err := s.Solve(context.Background(), trws.Options{MaxIterations: b.N, GapTolerance: 0, CheckEvery: math.MaxInt, Threads: threads})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(r.Iterations)*float64(m.NumVars())/b.Elapsed().Seconds()/1e6, "Mnode-updates/s")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "solver-MiB")
	runtime.KeepAlive(s)
}

// BenchmarkPotts1000x1000K8: the Potts speed target (Kolmogorov's C++ TRW-S
// does about 12 M node-updates/s on one core here).
func BenchmarkPotts1000x1000K8(b *testing.B) {
	benchIterations(b, random.PottsDenoising(random.New(1), 1000, 1000, 8, 1.2, 4, 2))
}

// BenchmarkPottsLabelCounts: the Potts passes at every label count from 2 to
// 8 (each written out) and one above (12: the general passes), 500×500
// denoising, no checks.
func BenchmarkPottsLabelCounts(b *testing.B) {
	for _, k := range []int{2, 3, 4, 5, 6, 7, 8, 12} {
		b.Run(fmt.Sprintf("K%d", k), func(b *testing.B) {
			benchIterations(b, random.PottsDenoising(random.New(1), 500, 500, k, 1.2, 4, 2))
		})
	}
}

// BenchmarkSpinGlass: two labels, Potts terms and explicit tables mixed (a
// frustrated grid: its repulsive couplings are tables), at the size of the
// UAI Grids_18 model (40×40) and large (500×500): the two-label passes.
func BenchmarkSpinGlass(b *testing.B) {
	for _, side := range []int{40, 500} {
		b.Run(fmt.Sprintf("%dx%d", side, side), func(b *testing.B) {
			benchIterations(b, random.FrustratedGrid(random.New(1), side, side))
		})
	}
}

// BenchmarkStripsSideBySide: the passes of a stereo grid (tsukuba's size,
// 384×288, and s96's, 96×96, 16 labels, truncated linear) and of a 500×500
// spin glass on one and two goroutines (pipeline.go).
func BenchmarkStripsSideBySide(b *testing.B) {
	stereo, small := stereoGrid(384, 288, 16), stereoGrid(96, 96, 16)
	glass := random.FrustratedGrid(random.New(1), 500, 500)
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("stereo384x288K16/threads%d", threads), func(b *testing.B) { benchIterationsOn(b, stereo, threads) })
		b.Run(fmt.Sprintf("stereo96x96K16/threads%d", threads), func(b *testing.B) { benchIterationsOn(b, small, threads) })
		b.Run(fmt.Sprintf("spinglass500x500/threads%d", threads), func(b *testing.B) { benchIterationsOn(b, glass, threads) })
	}
}

// stereoGrid is a w×h grid of k labels with random unaries and one
// truncated-linear term (W 1, T 2) on every edge: a stereo model's shape.
func stereoGrid(w, h, k int) *model.Model {
	rng := random.New(3)
	labels := make([]int, w*h)
	for v := range labels {
		labels[v] = k
	}
	b := model.NewBuilder(labels)
	for v := range labels {
		u := make([]float64, k)
		for l := range u {
			u[l] = 10 * rng.Float64()
		}
		b.AddTable([]int{v}, u)
	}
	id, _ := b.AddFunction(model.Function{Kind: model.TruncatedLinear, Shape: []int{k, k}, W: 1, T: 2})
	for y := range h {
		for x := range w {
			if x+1 < w {
				b.AddFactor(id, y*w+x, y*w+x+1)
			}
			if y+1 < h {
				b.AddFactor(id, y*w+x, (y+1)*w+x)
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// BenchmarkTable256x256K8: explicit 8×8 tables on every edge (the C++ original does
// about 1.1 M node-updates/s).
func BenchmarkTable256x256K8(b *testing.B) {
	benchIterations(b, denoisingWithTables(256, 256, 8))
}

// denoisingWithTables is the denoising model with a random explicit K×K table (shared,
// not of any recognised kind) in place of the Potts term.
func denoisingWithTables(w, h, k int) *model.Model {
	potts := random.PottsDenoising(random.New(1), w, h, k, 1.2, 4, 2)
	rng := random.New(2)
	tab := make([]float64, k*k)
	for i := range tab {
		tab[i] = 2 * rng.Float64()
	}
	labels := make([]int, potts.NumVars())
	for v := range labels {
		labels[v] = k
	}
	b := model.NewBuilder(labels)
	id, _ := b.AddFunction(model.Function{Kind: model.Explicit, Shape: []int{k, k}, Table: tab})
	for f := 0; f < potts.NumFactors(); f++ {
		vars := potts.FactorVars(f)
		if len(vars) == 1 {
			b.AddTable([]int{int(vars[0])}, potts.FactorFunction(f).Table)
		} else {
			b.AddFactor(id, int(vars[0]), int(vars[1]))
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// BenchmarkResolveAfterBoundaryUnaries: a solved 256×256×8 denoising model gets random
// unary terms (as boundary potentials would) on 5% of its nodes; "warm" re-solves
// from the kept messages, "cold" solves the changed model from zero. Each runs until
// its bound is within 1e-5 relative of the bound that 1000 cold iterations reach on
// the changed model (stopping rules measure the slow tail, not the restart);
// iterations/op is how many iterations that took.
func BenchmarkResolveAfterBoundaryUnaries(b *testing.B) {
	base := random.PottsDenoising(random.New(2), 256, 256, 8, 1.2, 4, 2)
	perturb := func(s *trws.Solver) {
		rng := random.New(7)
		for v := 0; v < base.NumVars(); v++ {
			if rng.IntN(20) != 0 {
				continue
			}
			delta := make([]float64, base.NumLabels(v))
			for l := range delta {
				delta[l] = 4 * rng.Float64()
			}
			if err := s.AddUnary(v, delta); err != nil {
				b.Fatal(err)
			}
		}
	}
	solved := func() *trws.Solver {
		s, err := trws.New(base)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Solve(context.Background(), trws.DefaultOptions()); err != nil {
			b.Fatal(err)
		}
		perturb(s)
		return s
	}
	changed, err := solved().Model()
	if err != nil {
		b.Fatal(err)
	}
	ref, err := trws.New(changed)
	if err != nil {
		b.Fatal(err)
	}
	long, err := ref.Solve(context.Background(), trws.Options{MaxIterations: 1000, GapTolerance: 0, CheckEvery: 1000})
	if err != nil {
		b.Fatal(err)
	}
	target := long.LowerBound - 1e-5*math.Abs(long.LowerBound)
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			iters := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := solved()
				if mode == "cold" {
					var err error
					if s, err = trws.New(changed); err != nil {
						b.Fatal(err)
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				o := trws.Options{MaxIterations: 2000, GapTolerance: 0, CheckEvery: 1, Progress: func(p trws.Progress) {
					if p.LowerBound >= target {
						cancel()
					}
				}}
				b.StartTimer()
				r, _ := s.Solve(ctx, o)
				cancel()
				iters += r.Iterations
			}
			b.ReportMetric(float64(iters)/float64(b.N), "iterations/op")
		})
	}
}

// BenchmarkPottsVerification160x160K8: the verification problem of a 160×160
// window of an 8-label segmentation (a 128+16 window: Potts with a weight per
// edge, test labels in patches, every other label movable but one in every 16th
// variable — in coffee.png's windows 50,000 edges share about 100 patterns), its
// terms held as pattern edges ("patterns") against one explicit table per edge
// ("tables", what label elimination built before): the same messages, without
// 12 MB of tables to stream every pass.
func BenchmarkPottsVerification160x160K8(b *testing.B) {
	const w, h, k = 160, 160, 8
	rng := random.New(3)
	maps := make([]*model.LabelMap, w*h)
	for v := range maps {
		y := (v%w/20 + v/w/20) % k // test labels in 20×20 patches
		mp := &model.LabelMap{Labels: make([]int, k), Images: make([]int, k)}
		kept := -1 // an immovable label besides y
		if rng.IntN(16) == 0 {
			kept = rng.IntN(k)
		}
		for l := range k {
			mp.Labels[l], mp.Images[l] = l, y
			if l == kept {
				mp.Images[l] = l
			}
		}
		maps[v] = mp
	}
	build := func(tables bool) *model.Model {
		labels := make([]int, w*h)
		for v := range labels {
			labels[v] = k
		}
		bd := model.NewBuilder(labels)
		unary := make([]float64, k)
		for v := range maps {
			for l := range unary {
				unary[l] = rng.NormFloat64()
			}
			if err := bd.AddTable([]int{v}, unary); err != nil {
				b.Fatal(err)
			}
			for _, u := range []int{v + 1, v + w} {
				if (u == v+1 && u%w == 0) || u >= w*h {
					continue
				}
				fn := model.Function{Kind: model.Difference, Base: model.Potts, Shape: []int{k, k}, W: 0.5 + rng.Float64(), Args: [2]*model.LabelMap{maps[v], maps[u]}}
				if tables {
					t := make([]float64, k*k)
					for a := range k {
						for c := range k {
							t[a*k+c] = fn.Pairwise(a, c)
						}
					}
					fn = model.Function{Kind: model.Explicit, Shape: []int{k, k}, Table: t}
				}
				id, err := bd.AddOwnedFunction(fn)
				if err != nil {
					b.Fatal(err)
				}
				if err := bd.AddFactor(id, v, u); err != nil {
					b.Fatal(err)
				}
			}
		}
		m, err := bd.Build()
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	b.Run("patterns", func(b *testing.B) { benchIterations(b, build(false)) })
	b.Run("tables", func(b *testing.B) { benchIterations(b, build(true)) })
}

// BenchmarkDefaultChecks: iterations with the default checks (every 5: the
// primal labeling, its energy, the consistency labels) on the Potts benchmark
// model at K = 2, 4, 8, against the same iterations without checks: the checks'
// cost is the ratio (the throughput issue asks ≤ 1.10).
func BenchmarkDefaultChecks(b *testing.B) {
	for _, k := range []int{2, 4, 8} {
		m := random.PottsDenoising(random.New(1), 1000, 1000, k, 1.2, 4, 2)
		for _, c := range []struct {
			name  string
			every int
		}{{"none", math.MaxInt}, {"default", trws.DefaultOptions().CheckEvery}} {
			b.Run(fmt.Sprintf("K%d/%s", k, c.name), func(b *testing.B) {
				s, err := trws.New(m)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Solve(context.Background(), trws.Options{MaxIterations: 1, GapTolerance: 0}); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				r, err := s.Solve(context.Background(), trws.Options{MaxIterations: b.N, GapTolerance: 0, CheckEvery: c.every})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.Iterations)*float64(m.NumVars())/b.Elapsed().Seconds()/1e6, "Mnode-updates/s")
			})
		}
	}
}
