package partition

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// Label elimination by windows: each window W of a plan runs persistency.Eliminate
// on the model of W's undecided nodes, their outside neighbours and every factor
// touching them, restricted to the labels alive before the round (Domains), with
// the map the identity outside W (Candidates). A window's map is improving for the
// whole model restricted to those labels — the verification problem of a map that
// moves labels of W only lives on the factors touching W — and maps applied in
// plan order compose to an improving map, so the merged domains, each variable's
// image under the composition, keep an optimum (invariants 2 and 3, per label).
// A round restricts the model to what the earlier rounds left (invariant 4).

// EliminateOptions configure Eliminate.
type EliminateOptions struct {
	// Plan returns the plan of a round (0, 1, …) at a level (0, 1, …, MaxLevel)
	// over the model's variables; variables left with one label are left out of
	// the windows. The level is how many earlier rounds eliminated nothing or
	// little (Grows): a caller gives larger windows at a higher level, so that
	// what small windows
	// cannot decide — regions whose proof needs more than a window, eroded from
	// the window's free outside — gets windows that hold it, over the few
	// variables still undecided.
	Plan func(round, level int) Plan
	// MaxLevel is the highest level (default 0): a round at MaxLevel that
	// eliminates nothing or little (Grows) ends the rounds.
	MaxLevel int
	// Solver solves the windows' verification problems (default persistency.Auto).
	Solver persistency.Relaxation
	// Workers is the number of windows solved at once (default 1); a round of
	// fewer windows gives them the idle workers' cores (spare).
	Workers int
	// MaxRounds bounds the rounds (default 1); rounds also stop when one at
	// MaxLevel eliminates nothing or little, or when no variable is left undecided.
	MaxRounds int
	// Progress, if set, is called after every window (serially); Persistent
	// counts the variables left with one label so far.
	Progress func(Progress)
	// Domains, if set, are the labels alive before the first round, per
	// variable (ascending): what an earlier proof left, e.g. Algorithm 1's
	// persistent labels. nil: every label.
	Domains [][]int
}

// Elimination is the merged outcome of all rounds of Eliminate.
type Elimination struct {
	// Alive[v] are the labels of v that some optimal labeling may take,
	// ascending; Persistent[v] is the label of a variable left with one, else −1.
	Alive      [][]int
	Persistent []int
	// Labeling is complete: each variable's test label in the last window (in
	// round and plan order) that held it in its core, within its alive labels.
	Labeling []int
	Rounds   int
	Windows  int
	Level    int // the level of the last round (see EliminateOptions.Plan)
	// Initial are the domains before the first round (EliminateOptions.Domains),
	// nil for every label: CheckElimination composes the windows' maps from them.
	Initial [][]int
	// Proofs holds every window's elimination, in order (round, plan order), with
	// the variables it was solved over and the domains before its round;
	// CheckElimination re-verifies them.
	Proofs []EliminationProof
}

// EliminationProof is one window's certified elimination over the variables Vars
// of the model restricted to Prior, the domains before its round.
type EliminationProof struct {
	Round       int
	Prior       [][]int // over the whole model
	Nodes, Vars []int   // the variables whose labels it may eliminate, and their extent
	Result      *persistency.Elimination
}

// Eliminate runs the rounds of windowed label elimination on m. The merged result
// depends only on the plans and the windows' results, never on the worker count
// or completion order.
func Eliminate(ctx context.Context, m *model.Model, opt EliminateOptions) (*Elimination, error) {
	g, err := NewMergerFrom(m, opt.Domains)
	if err != nil {
		return nil, err
	}
	g.KeepProofs = true
	level := 0
	for round := range max(opt.MaxRounds, 1) {
		g.StartRound(round)
		plan := opt.Plan(round, level)
		solver := spare(opt.Solver, len(plan.Windows), opt.Workers)
		works := make([]WindowWork, len(plan.Windows))
		results := make([]*persistency.Elimination, len(plan.Windows))
		errs := make([]error, len(plan.Windows))
		finished, persistent := 0, g.Persistent()
		err := forEachWindow(ctx, len(plan.Windows), opt.Workers, func(i int) {
			works[i] = g.Window(plan.Windows[i])
			if len(works[i].Nodes) > 0 {
				results[i], errs[i] = EliminateWindow(ctx, m, works[i], solver)
			}
		}, func(i int) {
			if opt.Progress == nil {
				return
			}
			finished++
			if errs[i] == nil && results[i] != nil {
				persistent += persistency.Count(results[i].Persistent)
			}
			opt.Progress(Progress{Round: round, WindowsDone: finished, Windows: len(plan.Windows), Persistent: persistent})
		})
		if err != nil {
			return nil, err
		}
		// Merge in plan order: each window's map applied to what the earlier ones left.
		for i := range results {
			if errs[i] != nil {
				return nil, fmt.Errorf("partition: round %d, window %d: %w", round, i, errs[i])
			}
			g.Merge(plan.Windows[i], works[i], results[i])
		}
		if !g.EndRound(len(plan.Windows), level, opt.MaxLevel) {
			break
		}
		if g.Grow() { // below MaxLevel: at MaxLevel EndRound ended the rounds
			level++
		}
	}
	return g.Result(), nil
}

// Merger holds the state of windowed label elimination between windows — the
// labels alive per variable, the labeling, the counts — and merges windows' maps
// into it in plan order: Eliminate's loop, and a coordinator's, whose windows are
// eliminated elsewhere (EliminateWindow) and arrive in any order.
//
//	g := partition.NewMerger(m)
//	level := 0
//	for round := 0; ; round++ {
//		g.StartRound(round)
//		wins := plan(round, level).Windows
//		for _, win := range wins { // in plan order
//			w := g.Window(win)
//			e, err := partition.EliminateWindow(ctx, m, w, solver) // when w has Nodes
//			g.Merge(win, w, e)
//		}
//		if !g.EndRound(len(wins), level, maxLevel) {
//			break
//		}
//		if g.Grow() {
//			level++
//		}
//	}
//	res := g.Result()
type Merger struct {
	// KeepProofs keeps every window's elimination in the result, for
	// CheckElimination.
	KeepProofs bool

	m          *model.Model
	res        *Elimination
	prior      [][]int // the domains before the current round
	round      int
	eliminated int // labels eliminated in the current round
	before     int // labels eliminated in the rounds before it
	persistent int // variables left with one label
}

// NewMerger starts the elimination of m: every label alive.
func NewMerger(m *model.Model) *Merger {
	g, _ := NewMergerFrom(m, nil) // nil domains are valid
	return g
}

// NewMergerFrom starts the elimination of m from domains (nil: every label
// alive), which must be non-empty ascending labels of each variable.
func NewMergerFrom(m *model.Model, domains [][]int) (*Merger, error) {
	alive, err := startDomains(m, domains)
	if err != nil {
		return nil, err
	}
	n := m.NumVars()
	res := &Elimination{Alive: alive, Persistent: make([]int, n), Labeling: make([]int, n), Initial: domains}
	g := &Merger{m: m, res: res}
	for _, ls := range alive {
		if len(ls) == 1 {
			g.persistent++
		}
	}
	return g, nil
}

// startDomains is a copy of domains, checked (nil: every label of m's variables):
// where an elimination starts.
func startDomains(m *model.Model, domains [][]int) ([][]int, error) {
	alive := make([][]int, m.NumVars())
	if domains == nil {
		for v := range alive {
			alive[v] = allLabels(m.NumLabels(v))
		}
		return alive, nil
	}
	if err := checkDomains(m, domains); err != nil {
		return nil, err
	}
	for v, ls := range domains {
		alive[v] = slices.Clone(ls)
	}
	return alive, nil
}

// checkDomains checks that domains hold, for each variable of m, some of its
// labels, strictly ascending.
func checkDomains(m *model.Model, domains [][]int) error {
	if len(domains) != m.NumVars() {
		return fmt.Errorf("partition: %d domains for a model of %d variables", len(domains), m.NumVars())
	}
	for v, ls := range domains {
		if len(ls) == 0 {
			return fmt.Errorf("partition: variable %d: no label alive", v)
		}
		for i, l := range ls {
			if l < 0 || l >= m.NumLabels(v) || (i > 0 && l <= ls[i-1]) {
				return fmt.Errorf("partition: variable %d: domain %v: want ascending labels below %d", v, ls, m.NumLabels(v))
			}
		}
	}
	return nil
}

// StartRound starts round: its windows work on the domains alive now.
func (g *Merger) StartRound(round int) {
	g.round, g.before, g.eliminated = round, g.before+g.eliminated, 0
	g.prior = make([][]int, len(g.res.Alive))
	for v, ls := range g.res.Alive {
		g.prior[v] = slices.Clone(ls)
	}
}

// Persistent is the number of variables left with one label.
func (g *Merger) Persistent() int { return g.persistent }

// RoundEliminated is the number of labels the current round eliminated so far.
func (g *Merger) RoundEliminated() int { return g.eliminated }

// Grow says whether, after the current round, the windows grow: see Grows.
func (g *Merger) Grow() bool { return Grows(int64(g.eliminated), int64(g.before)) }

// Grows says whether a round that eliminated roundEliminated labels, after rounds
// that eliminated before, raises the level of the next: when it eliminated
// nothing, or less than 1/16 of what came before. Such a round's windows have
// done most of what their size allows — what is left erodes from their free
// outside — and larger windows see farther, where more rounds of the same size
// would each eliminate a little for the price of a full round.
func Grows(roundEliminated, before int64) bool {
	return roundEliminated == 0 || roundEliminated*16 < before
}

// WindowWork is what a window of a round eliminates over: Nodes, its nodes with
// more than one label alive before the round (the variables its map may move),
// and Vars, those and their neighbours, ascending, with their Domains before the
// round (one list per Vars entry). A window without Nodes has nothing to do.
type WindowWork struct {
	Nodes, Vars []int
	Domains     [][]int
}

// LabelCounts is the label count in m of each of w.Vars.
func (w WindowWork) LabelCounts(m *model.Model) []int {
	counts := make([]int, len(w.Vars))
	for i, v := range w.Vars {
		counts[i] = m.NumLabels(v)
	}
	return counts
}

// Window is the work of window win of the current round. Safe to call from
// several goroutines between StartRound and the round's first Merge.
func (g *Merger) Window(win Window) WindowWork {
	var w WindowWork
	for _, v := range win.Nodes {
		if len(g.prior[v]) > 1 {
			w.Nodes = append(w.Nodes, v)
		}
	}
	if len(w.Nodes) == 0 {
		return w
	}
	w.Vars = EliminationExtent(g.m, w.Nodes)
	w.Domains = make([][]int, len(w.Vars))
	for i, v := range w.Vars {
		w.Domains[i] = g.prior[v]
	}
	return w
}

// EliminationExtent is the variables a window with nodes eliminates over: the
// nodes and their neighbours, ascending. Every factor touching a node lies in it.
func EliminationExtent(m *model.Model, nodes []int) []int { return grow(m, nodes, 1) }

// Merge applies window win's elimination e (nil: it proved nothing) over its work
// w to the domains, and takes the test labels of its core; the windows of a round
// must be merged in plan order. It returns the labels eliminated.
func (g *Merger) Merge(win Window, w WindowWork, e *persistency.Elimination) int {
	res := g.res
	if g.KeepProofs {
		res.Proofs = append(res.Proofs, EliminationProof{Round: g.round, Prior: g.prior, Nodes: w.Nodes, Vars: w.Vars, Result: e})
	}
	if e == nil {
		return 0
	}
	eliminated := 0
	for j, v := range w.Vars {
		before := len(res.Alive[v])
		res.Alive[v] = e.Image(j, res.Alive[v])
		eliminated += before - len(res.Alive[v])
		if before > 1 && len(res.Alive[v]) == 1 {
			g.persistent++
		}
		if _, core := slices.BinarySearch(win.Core, v); core {
			res.Labeling[v] = e.Test[j]
		}
	}
	g.eliminated += eliminated
	return eliminated
}

// EndRound ends the current round, of windows windows at level, and says whether
// another is due: some variable is undecided, and a level above it remains or the
// round eliminated more than a little (Grows) — at the top level a round that
// eliminated little ends the rounds, as one that eliminated nothing did before.
// (The caller raises the level when Grow says so.)
func (g *Merger) EndRound(windows, level, maxLevel int) bool {
	g.res.Rounds, g.res.Windows, g.res.Level = g.round+1, g.res.Windows+windows, level
	return g.persistent < len(g.res.Alive) && (level < maxLevel || !g.Grow())
}

// Result is the merged elimination, with Persistent set and every variable's
// label in Labeling alive.
func (g *Merger) Result() *Elimination {
	res := g.res
	for v, ls := range res.Alive {
		res.Persistent[v] = -1
		if len(ls) == 1 {
			res.Persistent[v] = ls[0]
		}
		if !slices.Contains(ls, res.Labeling[v]) {
			res.Labeling[v] = ls[0]
		}
	}
	return res
}

// EliminateWindow runs persistency.Eliminate for a window's work w (Merger.Window)
// on m: on the model of w.Vars induced by m and restricted to w.Domains, with the
// map moving labels of w.Nodes only.
func EliminateWindow(ctx context.Context, m *model.Model, w WindowWork, solver persistency.Relaxation) (*persistency.Elimination, error) {
	sub, err := windowModel(m, w)
	if err != nil {
		return nil, err
	}
	cand := make([]bool, len(w.Vars))
	for i, v := range w.Vars {
		_, cand[i] = slices.BinarySearch(w.Nodes, v)
	}
	return persistency.Eliminate(ctx, sub, persistency.EliminateOptions{Solver: solver, Candidates: cand, Domains: w.Domains})
}

// CheckWindow re-verifies a window's elimination e over its work w against m
// (persistency.VerifyElimination on the model EliminateWindow builds), and that
// only w.Nodes lose labels: what a coordinator does before it merges a window
// a worker sent.
func CheckWindow(m *model.Model, w WindowWork, e *persistency.Elimination) error {
	sub, err := windowModel(m, w)
	if err != nil {
		return err
	}
	return checkWindowOn(sub, w, e)
}

// ProvenWindowElimination decodes a window's elimination from proof (a result
// with its elimination), within what one of the window's model can hold, and
// checks it as CheckWindow does.
func ProvenWindowElimination(m *model.Model, w WindowWork, proof ProofSource) (*persistency.Elimination, error) {
	sub, err := windowModel(m, w)
	if err != nil {
		return nil, err
	}
	res, err := proof(sub)
	if err != nil {
		return nil, err
	}
	if res == nil || res.Elimination == nil {
		return nil, errors.New("partition: a window result without its elimination")
	}
	return res.Elimination, checkWindowOn(sub, w, res.Elimination)
}

// checkWindowOn is CheckWindow on the window's model sub.
func checkWindowOn(sub *model.Model, w WindowWork, e *persistency.Elimination) error {
	if len(e.Alive) != len(w.Vars) {
		return fmt.Errorf("partition: an elimination of %d variables for a window of %d", len(e.Alive), len(w.Vars))
	}
	// Only the nodes' labels may move: the window's model lacks the factors
	// between its other variables and the rest of the model.
	for i, v := range w.Vars {
		if _, node := slices.BinarySearch(w.Nodes, v); node {
			continue
		}
		for _, st := range append(slices.Clip(e.Earlier), persistency.Stage{Alive: e.Alive}) {
			if len(st.Alive) == len(w.Vars) && !slices.Equal(st.Alive[i], w.Domains[i]) {
				return fmt.Errorf("partition: variable %d, outside the window's nodes, loses labels", v)
			}
		}
	}
	c := *e
	c.Prior = w.Domains
	_, err := persistency.VerifyElimination(sub, &c)
	return err
}

// windowModel is the model of w.Vars induced by m, restricted to w.Domains.
func windowModel(m *model.Model, w WindowWork) (*model.Model, error) {
	sub, err := m.Induced(w.Vars)
	if err != nil {
		return nil, err
	}
	return sub.Model.Restrict(w.Domains)
}

// CheckElimination re-verifies every window's elimination against the model: each
// window model is rebuilt from m restricted to the domains before its round
// (CheckWindow, the windows checked in parallel), those domains must be what the
// earlier rounds left, and the merged domains the composition of the windows'
// maps applied to res.Initial — whose own proof, when set, is the caller's.
func CheckElimination(m *model.Model, res *Elimination) error {
	n := m.NumVars()
	works := make([]WindowWork, len(res.Proofs))
	for i, pr := range res.Proofs {
		if pr.Result == nil {
			continue
		}
		if len(pr.Prior) != n {
			return fmt.Errorf("partition: proof %d: domains of %d variables, the model has %d", i, len(pr.Prior), n)
		}
		w := WindowWork{Nodes: pr.Nodes, Vars: pr.Vars, Domains: make([][]int, len(pr.Vars))}
		for j, v := range pr.Vars {
			if v < 0 || v >= n {
				return fmt.Errorf("partition: proof %d: variable %d of a model of %d", i, v, n)
			}
			w.Domains[j] = pr.Prior[v]
		}
		works[i] = w
	}
	errs := make([]error, len(res.Proofs))
	forEachWindow(context.Background(), len(res.Proofs), runtime.GOMAXPROCS(0), func(i int) {
		if pr := res.Proofs[i]; pr.Result != nil {
			if err := CheckWindow(m, works[i], pr.Result); err != nil {
				errs[i] = fmt.Errorf("partition: proof %d (round %d): %w", i, pr.Round, err)
			}
		}
	}, func(int) {})
	for _, err := range errs {
		if err != nil {
			return err // the first, in order
		}
	}
	alive, err := startDomains(m, res.Initial)
	if err != nil {
		return err
	}
	// A window's map is proven on the domains before its round: they must be
	// what the earlier rounds' maps left of the initial ones.
	round, start := -1, alive
	for i, pr := range res.Proofs {
		if pr.Round < round {
			return fmt.Errorf("partition: proof %d of round %d after round %d", i, pr.Round, round)
		}
		if pr.Round > round {
			round, start = pr.Round, slices.Clone(alive) // Image never changes a list in place
		}
		if pr.Result == nil {
			continue
		}
		for j, v := range pr.Vars {
			if !slices.Equal(pr.Prior[v], start[v]) {
				return fmt.Errorf("partition: proof %d (round %d): variable %d: proven on labels %v, alive before the round %v", i, pr.Round, v, pr.Prior[v], start[v])
			}
			alive[v] = pr.Result.Image(j, alive[v])
		}
	}
	for v := range n {
		if !slices.Equal(alive[v], res.Alive[v]) {
			return fmt.Errorf("partition: variable %d: alive labels %v, the proofs give %v", v, res.Alive[v], alive[v])
		}
	}
	return nil
}

// allLabels is 0, …, k−1.
func allLabels(k int) []int {
	ls := make([]int, k)
	for l := range ls {
		ls[l] = l
	}
	return ls
}
