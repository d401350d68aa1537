package partition

import (
	"context"
	"fmt"
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
	// the windows. The level is how many earlier rounds eliminated nothing: a
	// caller gives larger windows at a higher level, so that what small windows
	// cannot decide — regions whose proof needs more than a window, eroded from
	// the window's free outside — gets windows that hold it, over the few
	// variables still undecided.
	Plan func(round, level int) Plan
	// MaxLevel is the highest level (default 0): a round at MaxLevel that
	// eliminates nothing ends the rounds.
	MaxLevel int
	// Solver solves the windows' verification problems (default persistency.Auto).
	Solver persistency.Relaxation
	// Workers is the number of windows solved at once (default 1).
	Workers int
	// MaxRounds bounds the rounds (default 1); rounds also stop when one at
	// MaxLevel eliminates nothing, or when no variable is left undecided.
	MaxRounds int
	// Progress, if set, is called after every window (serially); Persistent
	// counts the variables left with one label so far.
	Progress func(Progress)
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
	// Proofs holds every window's elimination, in order (round, plan order), with
	// the variables it was solved over and the domains before its round;
	// CheckElimination re-verifies them.
	Proofs []EliminationProof
}

// EliminationProof is one window's certified elimination over the variables Vars
// of the model restricted to Prior, the domains before its round.
type EliminationProof struct {
	Round  int
	Prior  [][]int // over the whole model
	Vars   []int
	Result *persistency.Elimination
}

// Eliminate runs the rounds of windowed label elimination on m. The merged result
// depends only on the plans and the windows' results, never on the worker count
// or completion order.
func Eliminate(ctx context.Context, m *model.Model, opt EliminateOptions) (*Elimination, error) {
	n := m.NumVars()
	res := &Elimination{Alive: make([][]int, n), Persistent: make([]int, n), Labeling: make([]int, n)}
	for v := range n {
		res.Alive[v] = allLabels(m.NumLabels(v))
	}
	done := func() int {
		c := 0
		for _, ls := range res.Alive {
			if len(ls) == 1 {
				c++
			}
		}
		return c
	}
	level := 0
	for round := range max(opt.MaxRounds, 1) {
		prior := make([][]int, n)
		for v, ls := range res.Alive {
			prior[v] = slices.Clone(ls)
		}
		restricted, err := m.Restrict(prior)
		if err != nil {
			return nil, err
		}
		plan := opt.Plan(round, level)
		proofs := make([]EliminationProof, len(plan.Windows))
		errs := make([]error, len(plan.Windows))
		finished, persistent := 0, done()
		err = forEachWindow(ctx, len(plan.Windows), opt.Workers, func(i int) {
			proofs[i], errs[i] = eliminateWindow(ctx, restricted, prior, plan.Windows[i], opt.Solver)
		}, func(i int) {
			if opt.Progress == nil {
				return
			}
			finished++
			if errs[i] == nil && proofs[i].Result != nil {
				persistent += persistency.Count(proofs[i].Result.Persistent)
			}
			opt.Progress(Progress{Round: round, WindowsDone: finished, Windows: len(plan.Windows), Persistent: persistent})
		})
		if err != nil {
			return nil, err
		}
		// Merge in plan order: each window's map applied to what the earlier ones left.
		eliminated := 0
		for i, pr := range proofs {
			if errs[i] != nil {
				return nil, fmt.Errorf("partition: round %d, window %d: %w", round, i, errs[i])
			}
			pr.Round, pr.Prior = round, prior
			if pr.Result != nil {
				for j, v := range pr.Vars {
					before := len(res.Alive[v])
					res.Alive[v] = pr.Result.Image(j, res.Alive[v])
					eliminated += before - len(res.Alive[v])
					if _, core := slices.BinarySearch(plan.Windows[i].Core, v); core {
						res.Labeling[v] = pr.Result.Test[j]
					}
				}
			}
			res.Proofs = append(res.Proofs, pr)
		}
		res.Rounds, res.Windows, res.Level = round+1, res.Windows+len(plan.Windows), level
		if done() == n {
			break
		}
		if eliminated == 0 {
			if level == opt.MaxLevel {
				break
			}
			level++
		}
	}
	for v, ls := range res.Alive {
		res.Persistent[v] = -1
		if len(ls) == 1 {
			res.Persistent[v] = ls[0]
		}
		if !slices.Contains(ls, res.Labeling[v]) {
			res.Labeling[v] = ls[0]
		}
	}
	return res, nil
}

// eliminateWindow runs the elimination of one window of the restricted model:
// its undecided nodes, their outside neighbours and every factor touching the
// nodes, with the map moving labels of the nodes only.
func eliminateWindow(ctx context.Context, restricted *model.Model, prior [][]int, win Window, solver persistency.Relaxation) (EliminationProof, error) {
	var nodes []int
	for _, v := range win.Nodes {
		if len(prior[v]) > 1 {
			nodes = append(nodes, v)
		}
	}
	if len(nodes) == 0 {
		return EliminationProof{}, nil
	}
	ext := grow(restricted, nodes, 1)
	sub, err := restricted.Induced(ext)
	if err != nil {
		return EliminationProof{}, err
	}
	cand := make([]bool, len(ext))
	domains := make([][]int, len(ext))
	for i, v := range ext {
		_, cand[i] = slices.BinarySearch(nodes, v)
		domains[i] = prior[v]
	}
	r, err := persistency.Eliminate(ctx, sub.Model, persistency.EliminateOptions{Solver: solver, Candidates: cand, Domains: domains})
	if err != nil {
		return EliminationProof{}, err
	}
	return EliminationProof{Vars: ext, Result: r}, nil
}

// CheckElimination re-verifies every window's elimination against the model: each
// window model is rebuilt from m restricted to the domains before its round, the
// elimination checked with persistency.VerifyElimination, and the merged domains
// must be the composition of the windows' maps.
func CheckElimination(m *model.Model, res *Elimination) error {
	n := m.NumVars()
	alive := make([][]int, n)
	for v := range n {
		alive[v] = allLabels(m.NumLabels(v))
	}
	var restricted *model.Model
	var last [][]int
	for i, pr := range res.Proofs {
		if pr.Result == nil {
			continue
		}
		if len(pr.Prior) != n {
			return fmt.Errorf("partition: proof %d: domains of %d variables, the model has %d", i, len(pr.Prior), n)
		}
		if restricted == nil || !sameDomains(pr.Prior, last) {
			var err error
			if restricted, err = m.Restrict(pr.Prior); err != nil {
				return err
			}
			last = pr.Prior
		}
		sub, err := restricted.Induced(pr.Vars)
		if err != nil {
			return err
		}
		e := *pr.Result
		e.Prior = make([][]int, len(pr.Vars))
		for j, v := range pr.Vars {
			e.Prior[j] = pr.Prior[v]
		}
		if _, err := persistency.VerifyElimination(sub.Model, &e); err != nil {
			return fmt.Errorf("partition: proof %d (round %d): %w", i, pr.Round, err)
		}
		for j, v := range pr.Vars {
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

// sameDomains says whether a and b are the same domains slice (the windows of a
// round share their prior), so that one restriction of the model serves them all.
func sameDomains(a, b [][]int) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// allLabels is 0, …, k−1.
func allLabels(k int) []int {
	ls := make([]int, k)
	for l := range ls {
		ls[l] = l
	}
	return ls
}
