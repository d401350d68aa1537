// Package enumerate solves tiny models exactly by visiting every labeling.
//
// Count checks that a model is small enough, Minimize finds its minimum:
//
//	n, err := enumerate.Count(m, 1<<20)        // error if m has more than 2^20 labelings
//	x, e, err := enumerate.Minimize(m, 1<<20) // x minimises m, e = m.Energy(x)
//
// The time grows with the product of the label counts, so it suits models of a dozen
// variables or so: the exhaustive relaxation of small sub-problems in persistency, and
// the reference that tests compare solvers against (through package oracle). The
// limit is how callers keep an accidental large model from running for ever.
package enumerate
