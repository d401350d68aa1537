// Package persistency finds persistent (partially optimal) labels of a discrete
// graphical model: labels that agree with some optimal labeling, proven by the
// pruning method of Swoboda et al., "Partial Optimality by Pruning for MAP-Inference
// with General Graphical Models" (TPAMI 2016; ../shared/PAPER.md).
//
// Typical use:
//
//	res, err := persistency.Run(ctx, m, persistency.Options{Variant: persistency.Invariant})
//	res.Persistent[v]                 // proven label of v, or −1
//	res.Score                         // the paper's score (label-space weighted)
//	_, err = persistency.Verify(m, res) // re-check from scratch, e.g. after loading a result
//
// # Method
//
// For a node set A and a test labeling y, Ê_{A,y} is the model restricted to A plus,
// for every factor e that leaves A, a boundary potential over e's inside variables
// (BoundaryPotential; both the paper's eq. 3.4 "Original" and the reparametrisation-
// invariant "Invariant" of §6, for factors of any order). If y minimises the LP
// relaxation of Ê_{A,y}, y is persistent on A (Theorem 1, Corollary 1). Run is
// Algorithm 1: relax on V, keep the integral nodes, and prune until the relaxed
// solution of Ê_{A,y} conforms on the boundary and is integral everywhere.
//
// # Soundness
//
// The relaxation is solved by any integrally correct Relaxation (Auto, the default:
// TRWS for pairwise problems and SRMP for higher-order ones; Exhaustive for tiny ones
// of any order, which decides Theorem 1's integer criterion directly). Proposition 2 makes the result sound whatever the solver's
// accuracy; the final solve's Certificate is checked before any label is reported,
// and Verify rebuilds Ê_{A*,x*} from the model to check it again. With forbidden
// states (+Inf), a boundary potential that would encourage leaving y without bound
// (−Inf) drops the nodes concerned before any solve.
//
// # Label elimination
//
// Eliminate is the follow-up method, iterative relaxed inference (Shekhovtsov,
// Swoboda, Savchynskyy, TPAMI 2018): it finds labels that a map to a test labeling
// proves unnecessary, certified by the dual of a verification problem; a variable
// left with one label is persistent.
//
//	el, err := persistency.Eliminate(ctx, m, persistency.EliminateOptions{})
//	el.Alive[v]                                // labels some optimal labeling may take
//	_, err = persistency.VerifyElimination(m, el) // every stage's certificate re-checked
//
// PruneAfter runs Algorithm 1 after it, on what it left undecided, and proves
// what that adds as one more stage: one elimination that proves what each
// proves alone on the random and real models of its tests, but not always
// (a 400² stereo raster: 97.7% against Algorithm 1's 100%).
package persistency
