package model_test

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// energyTol is the relative tolerance of energy comparisons: structure detection may
// move values by model.DetectTolerance, and sums in different orders round differently.
const energyTol = 1e-9

// sameEnergy reports whether a and b agree within energyTol (relative, at least
// absolute for |values| < 1); +Inf only equals +Inf.
func sameEnergy(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return a == b
	}
	return math.Abs(a-b) <= energyTol*max(1, math.Abs(a), math.Abs(b))
}

// randomModels is the family the property tests run on: small models of every
// generator, several seeds each.
func randomModels() []namedModel {
	var ms []namedModel
	for seed := uint64(0); seed < 12; seed++ {
		ms = append(ms,
			namedModel{"PottsGrid", seed, random.PottsGrid(random.New(seed), 4, 3, 3)},
			namedModel{"DensePairwise", seed, random.DensePairwise(random.New(seed), 8, 4, 0.5)},
			namedModel{"HigherOrder", seed, random.HigherOrder(random.New(seed), 8, 3, 4, 25)},
		)
	}
	return ms
}

type namedModel struct {
	gen  string
	seed uint64
	m    *model.Model
}

// testLabeling returns a random labeling, half the time a perturbation of the all-zero
// labeling (which is feasible for generated models), so that finite energies are
// compared as well as +Inf ones.
func testLabeling(rng *rand.Rand, m *model.Model) []int {
	x := random.Labeling(rng, m)
	if rng.IntN(2) == 0 {
		for v := range x {
			if rng.IntN(4) != 0 {
				x[v] = 0
			}
		}
	}
	return x
}

// newRand returns the generator for test data of the model with this seed (distinct
// from the stream that built the model).
func newRand(seed uint64) *rand.Rand { return random.New(seed + 1<<32) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
