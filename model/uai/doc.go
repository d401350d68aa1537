// Package uai reads and writes the model files of the UAI inference competitions and
// of toulbar2, and their evidence and solution files.
//
// Formats, chosen by file name (a trailing .gz or .xz is decompressed transparently):
//
//   - .uai: MARKOV or BAYES networks; a table entry p becomes the energy −ln p, and
//     p = 0 a forbidden state (+Inf).
//   - .LG: the same layout with natural logarithms; an entry v becomes the energy −v.
//   - .wcsp: toulbar2's weighted CSP; costs are energies, and a cost at or above the
//     declared upper bound is a forbidden state.
//   - .evid: evidence, "n v₁ l₁ … vₙ lₙ" (UAI 2014) or with a leading sample count of 1
//     (UAI 2010); apply it with model.Condition (see Evidence.Fixed).
//   - solutions: "MPE" or "MAP" followed by "n x₀ … xₙ₋₁", or a plain labeling.
//
// Typical use:
//
//	m, err := uai.ReadFile("grid.uai.xz")
//	ev, err := uai.ReadEvidenceFile("grid.uai.evid")
//	fixed, err := ev.Fixed(m.NumVars())
//	c, err := m.Condition(fixed)
//
// Errors name the file, the line and what was expected. Declared sizes are never
// trusted for allocation: memory grows with what the file actually contains, so a
// 40-byte file that declares 10⁹ variables fails at its end instead of allocating.
package uai
