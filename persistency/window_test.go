package persistency_test

import (
	"context"
	"testing"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// TestWindowProofsHoldForTheWholeModel: Algorithm 1 run on a window — the core W, its
// outside neighbours and every factor touching W, with A⁰ restricted to W — proves
// labels that are persistent for the whole model (ARCHITECTURE invariant 2), checked
// by brute force on the whole model; A* stays inside the core. The same with
// DropChanged, the erosion windows use.
func TestWindowProofsHoldForTheWholeModel(t *testing.T) {
	windows, proven := 0, 0
	for seed := uint64(0); seed < 150; seed++ {
		rng := random.New(7000 + seed)
		const w, h = 4, 3
		m := random.PottsGrid(rng, w, h, 3)
		if seed%3 == 0 {
			m = random.FrustratedGrid(rng, w, h)
		}
		_, minE := minEnergy(t, m)
		// The core: a random rectangle; the window model: core plus its neighbours.
		x0, y0 := rng.IntN(w-1), rng.IntN(h-1)
		cw, ch := 1+rng.IntN(w-x0), 1+rng.IntN(h-y0)
		inCore := make([]bool, m.NumVars())
		for y := y0; y < y0+ch; y++ {
			for x := x0; x < x0+cw; x++ {
				inCore[y*w+x] = true
			}
		}
		inWindow := append([]bool(nil), inCore...)
		for v := range inCore {
			if inCore[v] {
				for _, f := range m.VarFactors(v) {
					for _, u := range m.FactorVars(int(f)) {
						inWindow[u] = true
					}
				}
			}
		}
		var nodes []int
		for v, in := range inWindow {
			if in {
				nodes = append(nodes, v)
			}
		}
		win, err := m.Induced(nodes)
		must(t, err)
		cand := make([]bool, len(nodes))
		for i, v := range nodes {
			cand[i] = inCore[v]
		}
		for i := range 2 * len(variants) {
			v, drop := variants[i/2], i%2 == 1
			res, err := persistency.Run(context.Background(), win.Model, persistency.Options{Variant: v, Candidates: cand, DropChanged: drop})
			must(t, err)
			if _, err := persistency.Verify(win.Model, res); err != nil {
				t.Fatalf("seed %d %v drop %v: %v", seed, v, drop, err)
			}
			global := make([]int, m.NumVars())
			for i := range global {
				global[i] = -1
			}
			for i, l := range res.Persistent {
				if l >= 0 && !cand[i] {
					t.Fatalf("seed %d %v: variable %d outside the core proven", seed, v, nodes[i])
				}
				if l >= 0 {
					global[nodes[i]] = l
					proven++
				}
			}
			windows++
			if ok, e := isPersistent(t, m, global, minE); !ok {
				t.Errorf("seed %d %v drop %v: window labels %v not persistent for the whole model (min %v, with them fixed %v)", seed, v, drop, global, minE, e)
			}
		}
	}
	// Small cores behind Potts boundaries prove little; what matters is that what
	// they prove holds, but enough must be proven for that to be checked.
	if proven < 50 {
		t.Errorf("only %d labels proven in %d windows: the test checks too little", proven, windows)
	}
	t.Logf("%d labels proven in %d windows, all persistent for the whole model", proven, windows)
}

// TestDroppingChangedNodesErodesAWindowInFewerIterations: on windows of
// parametric grids (truncated linear and quadratic terms, the stereo kind)
// whose outside is taken as adversarial, dropping every node whose label
// changes reaches a certified A in fewer pruning iterations in all than
// Algorithm 1's one ring of boundary nodes an iteration, and every result
// verifies on the window's model.
func TestDroppingChangedNodesErodesAWindowInFewerIterations(t *testing.T) {
	const w, h, core = 24, 24, 16 // the core 16×16 in the middle, 4 pixels of outside each side
	iterations := [2]int{}
	proven := [2]int{}
	for seed := range uint64(12) {
		m := random.ParametricGrid(random.New(9100+seed), w, h, 6)
		cand := make([]bool, m.NumVars())
		for y := (h - core) / 2; y < (h+core)/2; y++ {
			for x := (w - core) / 2; x < (w+core)/2; x++ {
				cand[y*w+x] = true
			}
		}
		for i, drop := range []bool{false, true} {
			res, err := persistency.Run(context.Background(), m, persistency.Options{Candidates: cand, DropChanged: drop})
			must(t, err)
			if _, err := persistency.Verify(m, res); err != nil {
				t.Fatalf("seed %d drop %v: %v", seed, drop, err)
			}
			iterations[i] += res.PruningIterations
			proven[i] += persistency.Count(res.Persistent)
		}
	}
	t.Logf("Algorithm 1: %d pruning iterations, %d proven; dropping changed nodes: %d, %d", iterations[0], proven[0], iterations[1], proven[1])
	if iterations[1] >= iterations[0] {
		t.Errorf("dropping changed nodes took %d pruning iterations, Algorithm 1 %d", iterations[1], iterations[0])
	}
	if proven[1] == 0 {
		t.Error("nothing proven by dropping changed nodes: the test checks too little")
	}
}
