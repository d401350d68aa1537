package partition

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// Graph windows out of Solve: what a distributed run needs to solve one window of a
// RegionPlan away from the whole model's conditioning, and to merge it into Stores of
// n×1 (variable v at x = v). SolveGraphWindow gives exactly the window result of
// Solve, so rounds of SolveGraphWindow and MergeGraphWindow in plan order give
// Solve's labels (tested).

// RegionShift is the shift of round's RegionPlan in a windowed solve of regions of
// size variables: half a region per round, so that later rounds cut elsewhere.
func RegionShift(round, size int) int { return round * size / 2 }

// WindowExtent lists, ascending, the variables of m within two factor steps of
// nodes: every factor touching a node or an outside neighbour lies inside it, so
// the model it induces, conditioned on the fixed labels over it, holds exactly the
// factors and folded unaries that conditioning the whole model gives the window.
func WindowExtent(m *model.Model, nodes []int) []int { return grow(m, nodes, 2) }

// SolveGraphWindow solves the window nodes (ascending variables of m) conditioned
// on fixed, the labels fixed before the round over WindowExtent(m, nodes) in its
// order (label+1, or 0 for free): the model induced by the extent is conditioned
// and solved like a window of Solve. The result's Persistent and Labeling are both
// over nodes (Labeling −1 for a fixed node); a window without a free node is
// skipped (Vars 0).
func SolveGraphWindow(ctx context.Context, m *model.Model, nodes []int, fixed []int32, opt persistency.Options) (*WindowResult, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ext := WindowExtent(m, nodes)
	if len(fixed) != len(ext) {
		return nil, fmt.Errorf("partition: %d fixed labels for a window extent of %d variables", len(fixed), len(ext))
	}
	labels := make([]int, len(ext))
	var local []int // the free nodes as variables of the extent
	j := 0
	for i, v := range ext {
		labels[i] = int(fixed[i]) - 1
		for j < len(nodes) && nodes[j] < v {
			j++
		}
		if j < len(nodes) && nodes[j] == v && fixed[i] == 0 {
			local = append(local, i)
		}
	}
	out := &WindowResult{}
	if len(local) == 0 {
		return out, nil
	}
	sub, err := m.Induced(ext)
	if err != nil {
		return nil, err
	}
	pr, err := solveConditioned(ctx, sub.Model, labels, local, opt)
	if err != nil {
		return nil, err
	}
	out.Proof = pr.Result
	out.Persistent = make([]int32, len(nodes))
	out.Labeling = make([]int32, len(nodes))
	for i := range out.Labeling {
		out.Labeling[i] = -1
	}
	for k, v := range pr.Vars { // extent variables, ascending
		i, isNode := slices.BinarySearch(nodes, ext[v])
		if !isNode {
			if pr.Result.Persistent[k] >= 0 {
				return nil, fmt.Errorf("partition: variable %d outside the window proved persistent", ext[v])
			}
			continue
		}
		if l := pr.Result.Persistent[k]; l >= 0 {
			out.Persistent[i] = int32(l + 1)
		}
		out.Labeling[i] = int32(pr.Result.Labeling[k])
	}
	out.Vars = len(pr.Vars)
	out.PruningIterations = pr.Result.PruningIterations
	out.SolverIterations = pr.Result.SolverIterations
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// CheckGraphWindow re-checks a graph window's result against the model, as a
// coordinator does for a result from the network: the persistent labels it
// claims over the nodes (WindowResult.Persistent) must be exactly those its
// proof proves (ProvenGraphWindow). A window without a free node must claim
// nothing.
func CheckGraphWindow(m *model.Model, nodes []int, fixed []int32, claimed []int32, proof ProofSource) error {
	want, err := ProvenGraphWindow(m, nodes, fixed, proof)
	if err != nil {
		return err
	}
	return sameClaim(claimed, want)
}

// ProvenGraphWindow rebuilds the window problem of nodes conditioned on fixed
// (SolveGraphWindow's arguments) from m, checks the proof's certificate on it,
// and returns what it proves over the nodes: label+1 where proven, else 0. A
// proof that makes a variable outside the nodes persistent is refused.
func ProvenGraphWindow(m *model.Model, nodes []int, fixed []int32, proof ProofSource) ([]int32, error) {
	ext := WindowExtent(m, nodes)
	if len(fixed) != len(ext) {
		return nil, fmt.Errorf("partition: %d fixed labels for a window extent of %d variables", len(fixed), len(ext))
	}
	labels := make([]int, len(ext))
	var local []int // the free nodes as variables of the extent
	for i, v := range ext {
		labels[i] = int(fixed[i]) - 1
		if _, node := slices.BinarySearch(nodes, v); node && fixed[i] == 0 {
			local = append(local, i)
		}
	}
	want := make([]int32, len(nodes))
	if len(local) > 0 {
		sub, err := m.Induced(ext)
		if err != nil {
			return nil, err
		}
		p, err := conditionedProblem(sub.Model, labels, local)
		if err != nil {
			return nil, err
		}
		proven, err := checkProof(p, proof)
		if err != nil {
			return nil, err
		}
		for k, v := range p.vars { // extent variables
			i, node := slices.BinarySearch(nodes, ext[v])
			switch {
			case node:
				want[i] = proven[k]
			case proven[k] != 0:
				return nil, fmt.Errorf("partition: the proof makes variable %d, outside the window, persistent", ext[v])
			}
		}
	}
	return want, nil
}

// MergeGraphWindow writes a graph window's result (SolveGraphWindow's) into stores
// of n×1 and returns the number of variables it proved that were not proven
// before: the proven labels of its nodes, the relaxed labels of its core. Windows
// must be merged in plan order (later windows win on overlaps), as Solve does.
func MergeGraphWindow(win Window, out *WindowResult, persistent, labeling Store) (int64, error) {
	if out == nil || out.Vars == 0 {
		return 0, nil
	}
	n := win.Nodes
	if len(out.Persistent) != len(n) || len(out.Labeling) != len(n) {
		return 0, fmt.Errorf("partition: a result of %d and %d labels for a window of %d nodes", len(out.Persistent), len(out.Labeling), len(n))
	}
	cur := make([]int32, len(n))
	if err := ReadVars(persistent, n, cur); err != nil {
		return 0, err
	}
	var added int64
	for i, p := range out.Persistent {
		if p > 0 {
			if cur[i] == 0 {
				added++
			}
			cur[i] = p
		}
	}
	if err := WriteVars(persistent, n, cur); err != nil {
		return 0, err
	}
	lab := cur[:len(win.Core)]
	if err := ReadVars(labeling, win.Core, lab); err != nil {
		return 0, err
	}
	for i, v := range win.Core {
		j, ok := slices.BinarySearch(n, v)
		if !ok {
			return 0, fmt.Errorf("partition: core variable %d is not a node of its window", v)
		}
		if l := out.Labeling[j]; l >= 0 {
			lab[i] = l
		}
	}
	return added, WriteVars(labeling, win.Core, lab)
}

// ReadVars reads the values of the ascending variables vars from an n×1 store
// into dst, one ReadRect per run of consecutive variables.
func ReadVars(s Store, vars []int, dst []int32) error {
	return varRuns(vars, func(i, j int) error { return s.ReadRect(vars[i], 0, j-i, 1, dst[i:j]) })
}

// WriteVars writes src to the ascending variables vars of an n×1 store.
func WriteVars(s Store, vars []int, src []int32) error {
	return varRuns(vars, func(i, j int) error { return s.WriteRect(vars[i], 0, j-i, 1, src[i:j]) })
}

// varRuns calls f(i, j) for each maximal run vars[i:j] of consecutive variables.
func varRuns(vars []int, f func(i, j int) error) error {
	for i := 0; i < len(vars); {
		j := i + 1
		for j < len(vars) && vars[j] == vars[j-1]+1 {
			j++
		}
		if err := f(i, j); err != nil {
			return err
		}
		i = j
	}
	return nil
}
