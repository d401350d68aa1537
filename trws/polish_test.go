package trws

import (
	"context"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// TestPottsPolishEqualsTheRows: the float64 polish's Potts messages, computed
// as min(h(y), min h + w), equal those of the rows of the same terms as
// explicit tables, number for number, on Potts models of several label counts
// with ties and per-edge weights.
func TestPottsPolishEqualsTheRows(t *testing.T) {
	for name, m := range map[string]*model.Model{
		"K=2": random.PottsDenoising(random.New(41), 20, 15, 2, 0.8, 4, 1.5),
		"K=3": random.PottsGrid(random.New(42), 17, 13, 3),
		"K=8": random.PottsGrid(random.New(43), 12, 9, 8),
	} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Solve(context.Background(), Options{MaxIterations: 7, GapTolerance: 0, CheckEvery: 7}); err != nil {
			t.Fatal(err)
		}
		fast := s.polish(s.messages())
		potts := s.fn
		s.fn = make([]*model.Function, len(potts))
		for e, fn := range potts {
			k := int(s.labels[s.tail[e]])
			tab := make([]float64, k*k)
			for a := range k {
				for b := range k {
					tab[a*k+b] = fn.Pairwise(a, b)
				}
			}
			s.fn[e] = &model.Function{Kind: model.Explicit, Shape: []int{k, k}, Table: tab}
		}
		rows := s.polish(s.messages())
		s.fn = potts
		for i := range fast {
			if fast[i] != rows[i] {
				t.Fatalf("%s: message entry %d: %v by min h + w, %v by rows", name, i, fast[i], rows[i])
			}
		}
	}
}
