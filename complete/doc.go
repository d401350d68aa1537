// Package complete turns a partial optimality result into a provably optimal
// labeling: it solves exactly what persistency and label elimination leave.
//
// Persistency fixes variables to labels that some optimal labeling takes, and
// label elimination removes labels that no optimal labeling needs: a minimum of
// the model over the labels still alive is a minimum of the whole model. What
// is left undecided — the variables with more than one alive label — usually
// falls apart into a few small components once the decided variables are fixed
// (CombiLP's idea: Haller, Swoboda, Savchynskyy, AAAI 2018). Each component is
// solved by the cheapest exact method its Budget allows: enumeration of its
// labelings, dynamic programming (variable elimination along a greedy order,
// exact on trees and other graphs of small treewidth), or an external Engine
// such as toulbar2; a component none of them finishes stays open, with the best
// labeling found, and the result is then not optimal.
//
//	res, err := complete.Complete(ctx, m, alive, test, complete.DefaultBudget)
//	// res.Optimal: res.Labeling minimises m; res.Components say how each part was solved
//	checked, err := complete.Check(ctx, m, alive, res.Labeling, complete.DefaultBudget)
//
// alive must be proven (a checked certificate's): Complete trusts it. Split,
// the pure part, builds the components; Check re-solves them to re-check a
// completed labeling from the model alone.
package complete
