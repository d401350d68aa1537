// Package trws solves the local-polytope (LP) relaxation of pairwise MAP inference with
// Kolmogorov's sequential tree-reweighted message passing (TRW-S, PAMI 2006), and says
// for every variable whether the relaxation is provably integral there.
//
// Typical use:
//
//	s, err := trws.New(m)                  // m: a pairwise *model.Model
//	res, err := s.Solve(ctx, trws.DefaultOptions())
//	res.LowerBound                         // valid lower bound on min E
//	res.Labeling, res.Energy               // best labeling found and its energy
//	res.Consistent[v]                      // consistency label of v, or -1
//	cert := s.Certificate(res.Consistent)  // when res.Agreement: proof of optimality
//	mm, err := s.Model()                   // the solver's current problem
//	v, err := cert.Check(mm)               // recomputed independently, in float64
//
// # Algorithm
//
// Variables are processed in index order (raster order for grids). One iteration is a
// forward pass (increasing order) and a backward pass (decreasing order); each node i
// forms its reparametrised unary D_i = θ_i + Σ messages into i, and sends to every
// neighbour later in the pass the message m(x_j) = min_{x_i} γ_i·D_i(x_i) − m_{j→i}(x_i)
// + θ_ij(x_i,x_j), normalised to minimum 0, with γ_i = 1/max(#later, #earlier
// neighbours). Messages are float32 and stored in both directions; bounds and energies
// are accumulated in float64. Each pairwise kind has its own message kernel, chosen per
// edge outside the label loops: Potts O(K), truncated linear O(K) and truncated
// quadratic O(K) by distance transforms, explicit tables O(K²); label elimination's
// verification terms (model.Difference) by two distance transforms, or, for small
// Potts ones, as a weight times a unit table shared by the edges whose label maps
// are alike (pattern.go: the table kernel's messages, without a table per edge to
// stream). Where the CPU has
// AVX2 (amd64, not built with -tags purego) the table messages, node sums,
// reparametrisations, normalisations and truncated-linear messages with 1 < T ≤ 2 run in
// assembly, eight labels an instruction, computing the Go loops' numbers bit for bit.
//
// Lower bound: during the backward pass, as in Kolmogorov's MRFEnergy, the bound is
// Σ_i min D_i + Σ_e c_e, where c_e is the normalisation constant of the backward
// message of e. It is the value of the decomposition of the current reparametrisation
// into one subproblem per edge, θ̃_e(x_i,x_j) + γ_j·D_j(x_j) (j the later node), plus
// (1 − γ_j·#earlier(j))·D_j per node, so it is valid whatever the messages are.
//
// Forbidden states: +Inf entries become a finite penalty P (Penalty) larger than twice
// the sum of all finite energy ranges and magnitudes, so no arithmetic produces NaN
// and no finite value reaches it. The relaxed model with P
// is a lower bound of the model with +Inf entry by entry, so its bound is valid for the
// original, and its optimum is feasible whenever a feasible labeling exists.
//
// # Consistency and integral correctness
//
// On check iterations the backward pass of a Potts model also records every D_i
// as it reaches node i — every message into i is final for the iteration by then
// — with its unique minimiser; the check itself then tests the edges whose ends
// have different minimisers (equal ones pass whatever the values) and rounds the
// labeling, the same values as a separate pass over the stored messages (tested).
// Variable i gets the consistency label l when
//
//  1. l is the unique minimiser of D_i: D_i(x) − D_i(l) > τ·max(1, |D_i(l)|) for x ≠ l;
//  2. every edge e = (j, i) to a neighbour j that also has a unique minimiser x_j is
//     tight at (x_j, l) in its subproblem: with h = γ_i·D_i − m_{j→i} (i the later
//     node), h(l) + θ(x_j, l) − min_y [h(y) + θ(x_j, y)] ≤ τ·max(1, |h(l)+θ(x_j,l)|);
//     and the same for edges to later neighbours, from their side.
//
// An edge that is not tight removes the consistency label of both its endpoints. τ is
// ConsistencyTolerance (1e-5), chosen above float32 rounding (6·10⁻⁸) of sums of a few
// dozen terms. When every variable is consistent, the duality gap of the backward
// decomposition is Σ_e (edge slack) + Σ_i (node slack), each at most τ·scale, so the
// labeling is optimal for the LP (and hence for the model) up to that tolerance: the
// solver is integrally correct in the sense of the paper (§4). When the gap closes
// without node-wise agreement (ties, or an early gap stop), Solve certifies the best
// labeling (below) and, if the certificate holds, makes it every variable's
// consistency label: an LP-optimal integral labeling is what the criterion needs.
//
// The Certificate makes this checkable without trusting the solver: it carries the
// messages, the share weights and the labeling, and Check recomputes in float64, from
// the model alone, the decomposition bound Σ_e min_{x_e} S_e + Σ_i w_i·min D_i and the
// energy; the labeling is certified optimal when Energy − Bound ≤ GapTolerance·
// max(1, |Energy|) (1e-9). The bound is valid for any message values, so a wrong
// solver can only fail the check, never pass it falsely. Before a certificate is
// made, the float32 messages are polished by one float64 iteration with exact
// energies, so the gap of a truly optimal labeling is float64 rounding (~1e-12).
//
// # Warm start
//
// A Solver keeps its messages between calls to Solve. AddUnary changes unary terms
// (boundary potentials) and Restrict returns a solver on a node subset that keeps the
// messages of the surviving edges, so each pruning iteration of the persistency method
// starts from the previous solution; SetTable replaces an edge's table (label
// elimination rewrites the factors whose map changed between its rounds), and
// Options.HasTarget ends a solve at its first labeling below a target energy. Any
// messages define a valid reparametrisation, so warm starts never affect soundness,
// only speed.
//
// # Settling
//
// A Local re-runs the passes over a region of nodes only, growing the region while
// its changes reach its edge, until the region and its neighbours are consistent
// again (Local.Settle): nodes further away keep their D and their edges, so their
// labels still hold. The persistency method's pruning iterations settle near the
// nodes they drop, and Solve itself settles its last disagreements
// (Options.SettleBelow, 0.1% of the nodes by default): on segmentation models nearly
// every node agrees after a few iterations while the whole problem would be iterated
// for tens more on account of a few. A settled agreement is the agreement a whole
// check of the same messages finds (tested); a Settle that runs out of its budget
// (the node updates of half an iteration) leaves valid messages, and the solve goes
// on whole.
package trws
