package oracle

import (
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/enumerate"
)

// NumLabelings returns the number of labelings of m, or an error when it exceeds limit;
// it is enumerate.Count, kept here so that tests have one package for exact answers.
func NumLabelings(m *model.Model, limit int) (int, error) {
	return enumerate.Count(m, limit)
}

// BruteForce returns a labeling of minimum energy and its energy by enumerating all
// labelings, failing when m has more than limit labelings; it is enumerate.Minimize
// (first minimum in lexicographic order, the all-zero labeling and +Inf when every
// labeling is forbidden), kept here so that tests have one package for exact answers.
func BruteForce(m *model.Model, limit int) (labeling []int, energy float64, err error) {
	return enumerate.Minimize(m, limit)
}
