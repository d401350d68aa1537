//go:build !purego

package trws

import (
	"math"
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
	labels := make([]int, n)
	for v := range labels {
		labels[v] = k
	}
	b := model.NewBuilder(labels)
	t := make([]float64, k)
	for v := range labels {
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
		if err := b.AddTable([]int{v}, t); err != nil {
			panic(err)
		}
	}
	for range 3 * n {
		u, v := rng.IntN(n), rng.IntN(n)
		if rng.IntN(3) == 0 {
			v = rng.IntN(min(n, 4)) // a few nodes of high degree
		}
		if u == v {
			continue
		}
		fn, err := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{k, k}, W: float64(rng.IntN(4)) * rng.Float64()})
		if err == nil {
			err = b.AddFactor(fn, u, v)
		}
		if err != nil {
			panic(err)
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// TestAssemblyPottsPassesEqualTheGoOnes: the passes, the edge tests and the
// rounding written in assembly compute what the Go passes written out for the
// same label count and testEdges compute, bit for bit, on grids and on random graphs (any degree, earlier
// and later neighbours in any number, ties, forbidden labels).
func TestAssemblyPottsPassesEqualTheGoOnes(t *testing.T) {
	if !vector {
		t.Skip("no AVX2 on this CPU")
	}
	for _, k := range []int{2, 4, 8} {
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
				q.forward(asm)
				la := q.backward(asm, check)
				p.forward(gol)
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
