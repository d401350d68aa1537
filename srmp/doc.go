// Package srmp solves the local-polytope (LP) relaxation of MAP inference on factor
// graphs of any order with Kolmogorov's sequential reweighted message passing (SRMP,
// "A new look at reweighted message passing", TPAMI 2015), and says for every variable
// whether the relaxation is provably integral there. It has the contract of package
// trws — the same Options, stopping rules, Progress and Result (trws.Drive runs
// both) — and on pairwise models it is TRW-S, computed in float64.
//
// Typical use:
//
//	s, err := srmp.New(m)                  // m: a *model.Model of any order
//	res, err := s.Solve(ctx, trws.DefaultOptions())
//	res.LowerBound                         // valid lower bound on min E
//	res.Labeling, res.Energy               // best labeling found and its energy
//	res.Consistent[v]                      // consistency label of v, or -1
//	cert := s.Certificate(res.Consistent)  // when res.Agreement: proof of optimality
//	v, err := cert.Check(m)                // recomputed from m alone
//	w, err := srmp.Warm(sub, s, vars)      // warm start on a sub-problem
//
// # Algorithm
//
// Every factor of order ≥ 2 keeps one message per argument, m_{f→v}; the
// reparametrisation is θ_f − Σ_v m_{f→v} on factors and θ_v + Σ_f m_{f→v} on variables
// (unary factors are summed into θ_v). Variables are processed in index order, forward
// then backward. At variable v a pass (1) recomputes the messages of the factors that
// have a variable processed before v in this pass, as min-marginals of their
// reparametrised tables (normalised to minimum 0), (2) forms D_v = θ_v + Σ messages,
// and (3) gives each factor with a variable still to come the share ω_v·D_v
// (m_{f→v} −= ω_v·D_v), with ω_v = 1/max(#factors with an earlier variable, #with a
// later one). A min-marginal scans the factor's table once with running sums of the
// other arguments' messages: O(|table|) whatever the order. Tables are read where the
// model keeps them (never copied); memory is the messages, Σ_f Σ_{v∈f} K_v values. A
// factor whose function has more than model.MaxTableSize entries (2^28; a Potts term
// on 2^15 labels, say) is refused with ErrTooLarge before anything is allocated.
//
// Lower bound: after the backward pass the reparametrisation splits into the
// factors' tables and w_v·D_v per variable (w_v = 1 − ω_v·#earlier), whose minima sum
// to the bound; each factor's minimum is the normalisation constant of its last
// message, so the bound costs nothing extra. It is the plain LP dual of the current
// messages, valid whatever they are.
//
// Forbidden states: +Inf entries count as trws.Penalty(m), a finite value above every
// finite energy and twice the ranges, so no arithmetic produces NaN; the bound stays
// valid for the model with +Inf.
//
// # Consistency and integral correctness
//
// On check iterations (after a backward pass) variable v gets the consistency label l
// when l is D_v's unique minimiser (by more than ConsistencyTolerance·max(1, |min|),
// 1e-9) and every factor whose variables all have such labels is minimised at them up
// to the same tolerance; a factor that is not clears its variables' labels. When every
// variable is consistent the duality gap is the sum of the factors' slacks, and the
// labels are kept only if it is within trws.GapTolerance (else the worst factor's
// variables lose theirs): full agreement is an optimal labeling whose Certificate
// checks. The primal labeling is rounded in index order (each variable minimises its
// unary plus, per factor, the factor's minimum at the labels already chosen minus the
// later variables' messages), trying labels best first, skipping those that a fully
// labeled factor forbids and backtracking within a budget.
//
// A Certificate is the messages and a labeling; Check recomputes from the model alone
// the dual bound offset + Σ_f min (θ_f − Σ m_{f→v}) + Σ_v min (θ_v + Σ m_{f→v}) (with
// +Inf as it is) and the energy, and certifies the labeling when the gap is within
// trws.GapTolerance. A wrong solver can only fail the check.
//
// # Warm start
//
// Warm builds a solver for a sub-problem that takes over the messages of every factor
// it shares with the previous solver (same variables, same function): the persistency
// method's pruning iterations keep the inside factors and change unary and boundary
// terms. Any messages are a valid reparametrisation, so warm starts affect speed
// only.
package srmp
