package persistency_test

import (
	"math"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// TestPaperScore checks the paper's persistency score 1 − Σ_{u∉A} ln|X_u| / Σ_u ln|X_u|
// (§9) and the plain fraction of variables: 1-label variables weigh nothing in the
// score but count in the fraction; all persistent gives 1, none 0 (unless every
// variable has one label: then the score is 1, nothing being undecided); random
// label counts and sets match the formula.
func TestPaperScore(t *testing.T) {
	build := func(labels []int) *model.Model {
		m, err := model.NewBuilder(labels).Build()
		must(t, err)
		return m
	}
	m := build([]int{1, 1, 3, 2})
	for _, c := range []struct {
		name            string
		m               *model.Model
		persistent      []int
		score, fraction float64
	}{
		{"only the 1-label variables", m, []int{0, 0, -1, -1}, 0, 0.5},
		{"all", m, []int{0, 0, 2, 1}, 1, 1},
		{"none", m, []int{-1, -1, -1, -1}, 0, 0},
		{"the 3-label variable", m, []int{-1, -1, 1, -1}, math.Log(3) / math.Log(6), 0.25},
		{"the 2-label variable and a 1-label one", m, []int{0, -1, -1, 0}, math.Log(2) / math.Log(6), 0.5},
		{"every variable has one label, none persistent", build([]int{1, 1}), []int{-1, -1}, 1, 0},
		{"no variables", build(nil), nil, 1, 1},
		{"300 labels beside 3 and 2", build([]int{300, 3, 2, 300}), []int{5, -1, 1, -1},
			1 - (math.Log(3)+math.Log(300))/(2*math.Log(300)+math.Log(6)), 0.5},
	} {
		s, f := persistency.Score(c.m, c.persistent)
		if math.Abs(s-c.score) > 1e-12 || math.Abs(f-c.fraction) > 1e-12 {
			t.Errorf("%s: Score = %v, %v; want %v, %v", c.name, s, f, c.score, c.fraction)
		}
	}

	rng := random.New(11)
	for range 500 {
		m := random.DensePairwise(rng, 1+rng.IntN(12), 6, 0.3)
		p := make([]int, m.NumVars())
		total, missing, count := 0.0, 0.0, 0
		for v := range p {
			p[v] = -1
			w := math.Log(float64(m.NumLabels(v)))
			total += w
			if rng.IntN(2) == 0 {
				p[v] = rng.IntN(m.NumLabels(v))
				count++
			} else {
				missing += w
			}
		}
		want := 1.0
		if total > 0 {
			want = 1 - missing/total
		}
		s, f := persistency.Score(m, p)
		if math.Abs(s-want) > 1e-12 || math.Abs(f-float64(count)/float64(len(p))) > 1e-12 {
			t.Errorf("labels %v, persistent %v: Score = %v, %v; want %v, %v", labelCounts(m), p, s, f, want, float64(count)/float64(len(p)))
		}
		if s < 0 || s > 1 {
			t.Errorf("score %v outside [0, 1]", s)
		}
	}
}
