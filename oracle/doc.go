// Package oracle computes exact MAP labelings, the reference that tests of solvers and
// persistency compare against.
//
//	x, e, err := oracle.BruteForce(m, 1<<20) // error if m has more than 2^20 labelings
//
// BruteForce enumerates every labeling; it is exact and slow, meant for models of a
// dozen variables or so. It wraps package model/enumerate, which solver code uses
// directly so as not to depend on this test package.
//
// For larger models, Toulbar2 runs the exact branch-and-bound solver toulbar2 (Debian
// package toulbar2, version 1.1.1) as a separate process:
//
//	tb := oracle.Toulbar2{Timeout: time.Minute} // toulbar2 from $PATH
//	r, err := tb.Solve(ctx, m, ev)              // ev: uai.Evidence, possibly empty
//	if err == nil && r.Optimal {
//		// r.Labeling is a minimiser of m under ev, up to r.Tolerance;
//		// r.Energy = m.Energy(r.Labeling), +Inf if every labeling is forbidden.
//	}
//
// toulbar2 minimises integer costs, the energies rounded at 10^-Precision, so its
// optimum is exact only up to Result.Tolerance (about 10^-12 per factor for small
// energies, see AutoPrecision). Solve works around the bugs of toulbar2 1.1.1 that
// it knows of and checks every answer against m.Energy; see its documentation. Tests
// that use it should skip when FindToulbar2 fails.
package oracle
