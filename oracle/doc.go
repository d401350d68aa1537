// Package oracle computes exact MAP labelings of small models, the reference that
// tests of solvers and persistency compare against.
//
//	x, e, err := oracle.BruteForce(m, 1<<20) // error if m has more than 2^20 labelings
//
// BruteForce enumerates every labeling; it is exact and slow, meant for models of a
// dozen variables or so.
package oracle
