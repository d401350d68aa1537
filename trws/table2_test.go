package trws

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// TestTable2PassesEqualTheGeneralOnes: on models of two labels a variable
// whose edges are Potts terms and explicit tables (spin glasses, forbidden
// states, a pair in either order) the two-label passes compute the general
// passes' messages, bounds, consistency labels and labelings bit for bit,
// through SetTable rewrites too; an all-Potts model keeps the Potts passes,
// one with three labels somewhere the general ones.
func TestTable2PassesEqualTheGeneralOnes(t *testing.T) {
	withInf := func(seed uint64) *model.Model {
		rng := random.New(seed)
		m := random.FrustratedGrid(rng, 9, 7)
		b := model.NewBuilder(slices.Repeat([]int{2}, m.NumVars()))
		for f := range m.NumFactors() {
			vars := m.FactorVars(f)
			tab := make([]float64, 1<<len(vars))
			for i := range tab {
				x := []int{i & 1, i >> 1 & 1}[:len(vars)]
				if len(vars) == 2 {
					x = []int{i >> 1, i & 1}
				}
				scope := make([]int, len(vars))
				lab := make([]int, m.NumVars())
				for j, v := range vars {
					scope[j] = int(v)
					lab[v] = x[j]
				}
				tab[i] = m.FactorValue(f, lab)
				if rng.IntN(12) == 0 {
					tab[i] = math.Inf(1)
				}
			}
			scope := make([]int, len(vars))
			for j, v := range vars {
				scope[j] = int(v)
			}
			if len(scope) == 2 && rng.IntN(2) == 0 { // the pair in the other order
				scope[0], scope[1] = scope[1], scope[0]
				tab[1], tab[2] = tab[2], tab[1]
			}
			if err := b.AddTable(scope, tab); err != nil {
				t.Fatal(err)
			}
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for name, c := range map[string]struct {
		m     *model.Model
		apply bool
	}{
		"spin glass":              {random.FrustratedGrid(random.New(1), 14, 11), true},
		"spin glass, big":         {random.FrustratedGrid(random.New(2), 30, 30), true},
		"forbidden, either order": {withInf(3), true},
		"K=2 Potts":               {random.PottsGrid(random.New(4), 12, 9, 2), false},
		"mixed labels":            {random.DensePairwise(random.New(5), 30, 3, 0.2), false},
	} {
		fast, err := New(c.m)
		if err != nil {
			t.Fatal(err)
		}
		if fast.table2 != c.apply {
			t.Fatalf("%s: the two-label table passes apply %v, want %v", name, fast.table2, c.apply)
		}
		if !c.apply {
			continue
		}
		general, _ := New(c.m)
		general.table2 = false
		for it := range 30 {
			if it == 15 { // a round's rewrite: the same table slots, new values
				for e := range fast.fn {
					tab := []float64{float64(it % 3), 1, 2, -1}
					if err := fast.SetTable(e, tab); err != nil {
						t.Fatal(err)
					}
					if err := general.SetTable(e, tab); err != nil {
						t.Fatal(err)
					}
					if e > 3 {
						break
					}
				}
				if !fast.table2 {
					t.Fatalf("%s: a table rewrite turned the passes off", name)
				}
				general.table2 = false
			}
			samePasses(t, fmt.Sprintf("%s, iteration %d", name, it), fast, general, it%2 == 1)
		}
	}
}

// samePasses runs an iteration (a check's when check) of fast and general and
// fails unless their bounds, messages and, after a check, consistency labels
// and labelings are the same bit for bit.
func samePasses(t *testing.T, what string, fast, general *Solver, check bool) {
	t.Helper()
	fast.forward()
	lf := fast.backward(check)
	general.forward()
	lg := general.backward(check)
	if lf != lg || !slices.Equal(fast.msg, general.msg) {
		t.Fatalf("%s: bounds %v and %v, messages equal %v", what, lf, lg, slices.Equal(fast.msg, general.msg))
	}
	if !check {
		return
	}
	cf, pf := engine{fast}.Check()
	cf, pf = slices.Clone(cf), slices.Clone(pf)
	cg, pg := engine{general}.Check()
	if !slices.Equal(cf, cg) || !slices.Equal(pf, pg) {
		t.Fatalf("%s: consistency labels or labelings differ", what)
	}
}
