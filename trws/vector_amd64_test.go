//go:build !purego

package trws

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// pottsGraph is a Potts model on a random graph of n nodes with k labels:
// isolated nodes, nodes of high degree, edges in both directions of the
// order, weights from 0 up, unaries with ties and forbidden labels.
func pottsGraph(seed uint64, n, k int) *model.Model {
	rng := random.New(seed)
	unary := func(t []float64) {
		for i := range t {
			switch rng.IntN(6) {
			case 0:
				t[i] = math.Inf(1)
			case 1:
				t[i] = float64(rng.IntN(3))
			default:
				t[i] = rng.NormFloat64() * 3
			}
		}
		t[rng.IntN(k)] = 0 // some label allowed
	}
	var pairs [][2]int
	for range 3 * n {
		u, v := rng.IntN(n), rng.IntN(n)
		if rng.IntN(3) == 0 {
			v = rng.IntN(min(n, 4)) // a few nodes of high degree
		}
		if u != v {
			pairs = append(pairs, [2]int{u, v})
		}
	}
	return testModel(n, k, unary, pairs, func() model.Function {
		return model.Function{Kind: model.Potts, Shape: []int{k, k}, W: float64(rng.IntN(4)) * rng.Float64()}
	})
}

// TestAssemblyPottsPassesEqualTheGoOnes: the passes, the edge tests and the
// rounding written in assembly compute what the Go passes written out for the
// same label count and testEdges compute, bit for bit, on grids and on random graphs (any degree, earlier
// and later neighbours in any number, ties, forbidden labels); the forward
// pass that rounds computes the Go rounding followed by the Go forward pass.
func TestAssemblyPottsPassesEqualTheGoOnes(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	for _, k := range assemblyLabelCounts(t) {
		for seed := range uint64(6) {
			var m *model.Model
			switch seed % 3 {
			case 0:
				m = random.PottsDenoising(random.New(50+seed), 21, 13, k, 0.8, 4, 1.5)
			case 1:
				m = tiedPottsGrid(60+seed, 17, 11, k)
			default:
				m = pottsGraph(70+seed, 150, k)
			}
			asm, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			gol, _ := New(m)
			vector = false
			p := gol.unrolled()
			vector = true
			q := asm.unrolled()
			if p == nil || q == nil || q == p {
				t.Fatalf("K=%d: no assembly passes", k)
			}
			for it := range 20 {
				check := it%2 == 1
				if check {
					q.forwardRound(asm)
					p.primal(gol)
					p.forward(gol)
					if !slices.Equal(asm.primal, gol.primal) {
						t.Fatalf("K=%d seed %d iteration %d: the forward pass's rounding differs", k, seed, it)
					}
				} else {
					q.forward(asm)
					p.forward(gol)
				}
				la := q.backward(asm, check)
				lg := p.backward(gol, check)
				if la != lg || !slices.Equal(asm.msg, gol.msg) {
					t.Fatalf("K=%d seed %d iteration %d: bounds %v and %v, messages equal %v", k, seed, it, la, lg, slices.Equal(asm.msg, gol.msg))
				}
				if !check {
					continue
				}
				for _, r := range []struct {
					p *pottsPasses
					s *Solver
				}{{p, gol}, {q, asm}} {
					if r.p.edges != nil {
						r.p.edges(r.s)
					}
				}
				if !slices.Equal(asm.argmin, gol.argmin) || !slices.Equal(asm.consLabel, gol.consLabel) {
					t.Fatalf("K=%d seed %d iteration %d: unique argmins or consistency labels differ", k, seed, it)
				}
				q.primal(asm)
				p.primal(gol)
				if !slices.Equal(asm.primal, gol.primal) {
					t.Fatalf("K=%d seed %d iteration %d: rounded labelings differ", k, seed, it)
				}
			}
		}
	}
}

// truncLinearGrid is a w×h stereo-like grid: k labels, random unaries (some
// forbidden), truncated-linear edges with random weights and truncations T;
// with ties, unaries 0, 1 or 2 and weights 0.5 or 1 (first minima, unique
// argmins).
func truncLinearGrid(seed uint64, w, h, k int, ts []float64, ties bool) *model.Model {
	rng := random.New(seed)
	unary := func(t []float64) {
		for i := range t {
			t[i] = float64(rng.IntN(20)) + rng.Float64()
			if ties {
				t[i] = float64(rng.IntN(3))
			}
			if rng.IntN(30) == 0 {
				t[i] = math.Inf(1)
			}
		}
		t[rng.IntN(k)] = 0
	}
	return testModel(w*h, k, unary, gridPairs(w, h), func() model.Function {
		f := model.Function{Kind: model.TruncatedLinear, Shape: []int{k, k}, W: 0.5 + 3*rng.Float64(), T: ts[rng.IntN(len(ts))]}
		if ties {
			f.W = 0.5 * float64(1+rng.IntN(2))
		}
		return f
	})
}

// TestTruncLinearPassesEqualTheGeneralOnes: the stereo passes (one assembly
// call a message) compute the general passes' messages, bounds, consistency
// labels and labelings bit for bit; they apply only where every edge has
// 1 < T ≤ 2 and the label count is a multiple of eight.
func TestTruncLinearPassesEqualTheGeneralOnes(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	for _, c := range []struct {
		k     int
		ts    []float64
		apply bool
		ties  bool
	}{
		{8, []float64{2}, true, false}, {16, []float64{2, 1.5}, true, false}, {24, []float64{1.25, 2}, true, false},
		{8, []float64{2}, true, true}, {16, []float64{2}, true, true},
		{16, []float64{2, 3}, false, false}, {12, []float64{2}, false, false},
	} {
		m := truncLinearGrid(uint64(80+c.k), 13, 9, c.k, c.ts, c.ties)
		fast, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		if fast.tl2 != c.apply {
			t.Fatalf("K=%d T %v: the stereo passes apply %v, want %v", c.k, c.ts, fast.tl2, c.apply)
		}
		if !c.apply {
			continue
		}
		general, _ := New(m)
		general.tl2 = false
		for it := range 20 {
			samePasses(t, fmt.Sprintf("K=%d iteration %d", c.k, it), fast, general, it%2 == 1)
		}
	}
}

// TestTruncLinearSendEqualsTheGoLoops: the one-call truncated-linear message
// (1 < T ≤ 2, label counts that are multiples of eight) computes what
// reparamScalar and truncLinearNear's Go loop compute: the same h, message and
// normalisation, bit for bit.
func TestTruncLinearSendEqualsTheGoLoops(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	defer func() { vector = true }()
	rng := random.New(11)
	for trial := range 2000 {
		k := 8 * (1 + rng.IntN(8))
		d, back := make([]float32, k), make([]float32, k)
		for i := range d {
			d[i], back[i] = float32(rng.NormFloat64()*10), float32(rng.Float64()*5)
			if rng.IntN(10) == 0 {
				d[i] = 1e20
			}
			if trial%3 == 0 {
				d[i] = float32(rng.IntN(3)) // ties
			}
		}
		g, w, T := float32(0.25+0.75*rng.Float64()), float32(4*rng.Float64()), float32(1+rng.Float64())
		if trial%5 == 0 {
			T = 2
		}
		hGot, got := make([]float32, k), make([]float32, k)
		hWant, want := make([]float32, k), make([]float32, k)
		vector = true
		lo := truncLinear2SendAVX2(d, back, hGot, got, g, w, T)
		vector = false
		hmin := reparamScalar(hWant, d, back, g)
		loWant := truncLinearNear(hWant, want, hmin, w, T)
		if lo != loWant || !slices.Equal(hGot, hWant) || !slices.Equal(got, want) {
			t.Fatalf("trial %d, %d labels, T %v: vector %v (%v), Go %v (%v)", trial, k, T, got, lo, want, loWant)
		}
	}
}

// TestAssemblyForwardRoundingAfterANaN: where a node's rounding sum has no
// minimum (a NaN in a message into it), the forward pass that rounds leaves
// the labeling to the rounding alone from that node on: the labels are those
// of the rounding before the pass.
func TestAssemblyForwardRoundingAfterANaN(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	for _, k := range assemblyLabelCounts(t) {
		m := random.PottsDenoising(random.New(80), 19, 11, k, 0.8, 4, 1.5)
		fused, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		apart, _ := New(m)
		q := fused.unrolled()
		for _, s := range []*Solver{fused, apart} {
			for range 3 {
				q.forward(s)
				q.backward(s, false)
			}
			i := int32(s.n / 2)
			a := s.astart[i] + s.nbwd[i] // an edge to a later node
			s.msg[s.ain[a]+int32(k)-1] = float32(math.NaN())
		}
		q.forwardRound(fused)
		q.primal(apart)
		q.forward(apart)
		if !slices.Equal(fused.primal, apart.primal) {
			t.Fatalf("K=%d: the labelings differ", k)
		}
	}
}

// assemblyLabelCounts are the label counts with Potts passes in assembly on
// this CPU (K = 3, 5, 6, 7 need AVX-512), logged.
func assemblyLabelCounts(t *testing.T) []int {
	var ks []int
	for k, p := range assemblyPotts {
		if p.forward != nil {
			ks = append(ks, k)
		}
	}
	t.Logf("assembly Potts passes for K = %v", ks)
	return ks
}

// TestLocalStereoPassesEqualTheGeneralOnes: a Local on a stereo solver (tl2)
// settles its regions with the whole problem's assembly passes, run by run of
// consecutive nodes; after the same kills, unary changes and settles it holds
// the general passes' messages into every survivor, consistency labels and
// iteration counts, bit for bit, and its survivors' solver is theirs.
func TestLocalStereoPassesEqualTheGeneralOnes(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	for _, c := range []struct {
		k    int
		ts   []float64
		ties bool
	}{{16, []float64{2}, false}, {16, []float64{2, 1.5}, false}, {24, []float64{1.25, 2}, false}, {8, []float64{2}, true}} {
		m := truncLinearGrid(uint64(300+c.k), 31, 23, c.k, c.ts, c.ties)
		fast, general := solvedLocal(t, m), solvedLocal(t, m)
		if !fast.s.tl2 {
			t.Fatalf("K=%d: the stereo passes do not apply", c.k)
		}
		general.s.tl2 = false
		fast.Stable, general.Stable = 1, 1 // as the pruning iterations settle
		rng := rand.New(rand.NewPCG(uint64(c.k), 5))
		settled := 0
		for round := range 30 {
			changed := pruneStep(t, rng, 6, 0.3, fast, general)
			okF, okG := fast.Settle(context.Background(), changed), general.Settle(context.Background(), changed)
			what := fmt.Sprintf("K=%d round %d", c.k, round)
			if okF != okG || fast.Iterations != general.Iterations || !slices.Equal(fast.cons, general.cons) {
				t.Fatalf("%s: settled %v/%v after %d/%d iterations, labels equal %v", what, okF, okG,
					fast.Iterations, general.Iterations, slices.Equal(fast.cons, general.cons))
			}
			rf, keep, err := fast.Solver()
			if err != nil {
				t.Fatal(err)
			}
			rg, _, err := general.Solver()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rf.msg, rg.msg) || !slices.Equal(rf.gamma, rg.gamma) {
				t.Fatalf("%s: the survivors' (%d) messages differ", what, len(keep))
			}
			if !okF {
				break
			}
			settled++
		}
		if settled < 10 {
			t.Errorf("K=%d: only %d settles: the test compares little", c.k, settled)
		}
		t.Logf("K=%d T %v: %d settles, %d iterations", c.k, c.ts, settled, fast.Iterations)
	}
}

// TestUniqueArgminOfSixteenEqualsTheLoop: the sixteen-label unique argmin in
// two registers decides as the loop does, on random values with ties, zeros
// of both signs, infinities and NaNs.
func TestUniqueArgminOfSixteenEqualsTheLoop(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(16, 17))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-7, -3}
	d := make([]float32, 16)
	unique := 0
	for it := range 200000 {
		for x := range d {
			switch r := rng.IntN(10); {
			case r == 0 && it%4 == 0:
				d[x] = special[rng.IntN(len(special))]
			case r < 5:
				d[x] = float32(rng.IntN(8)) * 0.5 // ties
			default:
				d[x] = float32(rng.NormFloat64() * 100)
			}
		}
		got, want := uniqueArgmin(d), uniqueArgminLoop(d)
		if got != want {
			t.Fatalf("%v: %d, the loop %d", d, got, want)
		}
		if got >= 0 {
			unique++
		}
	}
	if unique < 10000 {
		t.Fatalf("only %d of the vectors had a unique minimum: the test compares little", unique)
	}
}

// TestTightOfSixteenEqualsTheLoop: the sixteen-label tightness test in two
// registers decides as the loop does, on random D, messages and rows with
// ties, zeros of both signs, infinities and NaNs.
func TestTightOfSixteenEqualsTheLoop(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(18, 19))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), 1e-7}
	value := func(it int) float32 {
		switch r := rng.IntN(10); {
		case r == 0 && it%4 == 0:
			return special[rng.IntN(len(special))]
		case r < 4:
			return float32(rng.IntN(6)) * 0.25
		default:
			return float32(rng.NormFloat64() * 10)
		}
	}
	d, fwd, r, h := make([]float32, 16), make([]float32, 16), make([]float32, 16), make([]float32, 16)
	tight := 0
	for it := range 200000 {
		for y := range 16 {
			d[y], fwd[y], r[y] = value(it), value(it), value(it)
		}
		l := int32(rng.IntN(16))
		g := []float32{1, 0.5, 0.25, 1.0 / 3}[rng.IntN(4)]
		want := tightLoop(d, fwd, r, h, l, g)
		if got := tightRow(d, fwd, r, h, l, g); got != want {
			t.Fatalf("d %v fwd %v r %v l %d γ %v: %v, the loop %v", d, fwd, r, l, g, got, want)
		}
		if want {
			tight++
		}
	}
	if tight < 5000 {
		t.Fatalf("only %d tight edges: the test compares little", tight)
	}
}

// TestLocalPottsPassesEqualTheGeneralOnes: a Local on a Potts grid whose
// passes run in strips settles its regions with the whole problem's assembly
// passes, run by run of consecutive nodes, while no node is killed; after the
// same unary changes and settles it holds the general passes' messages,
// consistency labels and iteration counts, bit for bit — its check sums the
// region's D again, the general backward pass left them — and after a kill
// both go on the general passes alike.
func TestLocalPottsPassesEqualTheGeneralOnes(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	for _, k := range []int{2, 4, 8} {
		m := random.PottsDenoising(random.New(uint64(400+k)), 80, 60, k, 0.9, 4, 1.5)
		fast, general := solvedLocal(t, m), solvedLocal(t, m)
		if fast.s.stripedPotts() == nil {
			t.Fatalf("K=%d: the Potts passes do not run in strips", k)
		}
		general.killed = true // the general passes, with nothing killed
		if k == 2 {
			fast.Stable, general.Stable = 1, 1 // as the pruning iterations settle; the others as Solve does
		}
		rng := rand.New(rand.NewPCG(uint64(k), 9))
		settled := 0
		for round := range 25 {
			var changed []int
			if round == 20 {
				changed = pruneStep(t, rng, 4, 0.5, fast, general) // from here both general
			} else {
				for range 1 + rng.IntN(6) {
					v := rng.IntN(m.NumVars())
					u := slices.Clone(fast.s.u64[fast.s.uoff[v]:fast.s.uoff[v+1]])
					for i := range u {
						u[i] += 2 * rng.Float64()
					}
					for _, l := range []*Local{fast, general} {
						if err := l.SetUnary(v, u); err != nil {
							t.Fatal(err)
						}
					}
					changed = append(changed, v)
				}
				slices.Sort(changed)
				changed = slices.Compact(changed)
			}
			okF, okG := fast.Settle(context.Background(), changed), general.Settle(context.Background(), changed)
			what := fmt.Sprintf("K=%d round %d", k, round)
			if okF != okG || fast.Iterations != general.Iterations || !slices.Equal(fast.cons, general.cons) {
				t.Fatalf("%s: settled %v/%v after %d/%d iterations, labels equal %v", what, okF, okG,
					fast.Iterations, general.Iterations, slices.Equal(fast.cons, general.cons))
			}
			if !slices.Equal(fast.s.msg, general.s.msg) {
				t.Fatalf("%s: the messages differ", what)
			}
			if !okF {
				break
			}
			settled++
		}
		if settled < 15 {
			t.Errorf("K=%d: only %d settles: the test compares little", k, settled)
		}
		t.Logf("K=%d: %d settles, %d iterations", k, settled, fast.Iterations)
	}
}
