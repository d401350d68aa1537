// Package partition solves a model by windows: overlapping node sets, each solved by
// the persistency method with boundary potentials on every factor that leaves it, the
// persistent labelings merged, and rounds repeated on what is left (the scenario of
// the paper's last section).
//
// Typical use:
//
//	plan := partition.GridPlan(w, h, 512, 32, 0) // or RegionPlan(m, 5000, 2, 0)
//	res, err := partition.Solve(ctx, m, partition.Options{Plan: func(round int) partition.Plan {
//		return partition.GridPlan(w, h, 512, 32, round*256)
//	}, Workers: 4, MaxRounds: 3})
//	res.Persistent[v] // proven label or −1
//
// SolveRaster is the same computation out of core for raster grids: windows are read
// from a Raster (a .grid file through grid.Reader.Window, or RasterOf an in-memory
// model) and the labels live in Stores (labelfile.File on disk), so memory grows with
// the workers' windows, not with the model:
//
//	r, _ := grid.Open("big.grid")
//	h := r.Header()
//	res, err := partition.SolveRaster(ctx, partition.Raster{Width: h.Width, Height: h.Height,
//		Window: r.Window}, persistent, labeling, scratch, partition.RasterOptions{Core: 512,
//		Halo: 32, Workers: 4, MaxRounds: 3})
//
// EliminateRaster is label elimination by windows (Eliminate) out of core in the
// same way: the labels alive live in AliveLabels (alive planes; labelfile files on
// disk), read and written by rectangles and bands, and give Eliminate's result
// with the same tiles, byte for byte.
//
// # Soundness
//
// A window W (core plus halo) is solved on the model made of W, its outside
// neighbours and every factor touching W, with the persistent set restricted to W
// (persistency.Options.Candidates). Ê_{A,y} for A ⊆ W involves only factors touching
// A, so a window's persistent labels are persistent for the whole model (invariant 2).
// Moreover each window's result p (set A to y) is an improving mapping, E(p(x)) ≤ E(x)
// for every x (the proof of Theorem 1 with Lemma 1), so the composition of the
// windows' mappings in plan order is improving, and the merged labeling — each node
// labeled by the last window of the plan that proved it — is persistent (invariant
// 3). It depends only on the plan and the windows' results, never on the order in
// which they complete. A round conditions the model on the labels proven so far;
// persistency for the conditioned model is persistency for the model, because some
// optimum agrees with the fixed labels (invariant 4).
package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// Window is a node set of the model: Nodes are solved (and may become persistent);
// Core is the part the plan tiles the model with (Nodes minus the halo).
type Window struct {
	Core, Nodes []int // model variables, ascending
}

// Plan is an ordered list of windows; the order is the merge priority (later wins).
type Plan struct {
	Windows []Window
}

// GridPlan tiles a w×h raster grid (variable y·w+x) with core×core tiles, the first
// tile corner at (−shift, −shift) modulo core, each extended by halo pixels.
func GridPlan(w, h, core, halo, shift int) Plan {
	var p Plan
	for _, rw := range RasterWindows(w, h, core, halo, shift) {
		p.Windows = append(p.Windows, Window{Core: rw.Core.vars(w), Nodes: rw.Nodes.vars(w)})
	}
	return p
}

// RegionPlan covers a model of any structure with connected regions of about size
// variables, grown by breadth-first search from the lowest unassigned variable
// (rotated by shift, so that later rounds cut elsewhere), each extended by halo graph
// steps.
func RegionPlan(m *model.Model, size, halo, shift int) Plan {
	n := m.NumVars()
	region := make([]int, n)
	for v := range region {
		region[v] = -1
	}
	var p Plan
	for k := 0; k < n; k++ {
		seed := (k + shift) % n
		if region[seed] >= 0 {
			continue
		}
		id := len(p.Windows)
		core := []int{seed}
		region[seed] = id
		for q := 0; q < len(core) && len(core) < size; q++ {
			for _, u := range neighbours(m, core[q]) {
				if region[u] < 0 && len(core) < size {
					region[u] = id
					core = append(core, u)
				}
			}
		}
		slices.Sort(core)
		p.Windows = append(p.Windows, Window{Core: core, Nodes: grow(m, core, halo)})
	}
	return p
}

// neighbours lists the variables sharing a factor with v (with repetitions).
func neighbours(m *model.Model, v int) []int {
	var out []int
	for _, f := range m.VarFactors(v) {
		for _, u := range m.FactorVars(int(f)) {
			if int(u) != v {
				out = append(out, int(u))
			}
		}
	}
	return out
}

// grow returns nodes plus everything within steps factor steps of them, ascending.
// It costs O(NumVars) plus the factors it walks: a window's problem is grown on
// every window solve and check.
func grow(m *model.Model, nodes []int, steps int) []int {
	in := make([]bool, m.NumVars())
	frontier := slices.Clone(nodes)
	count := 0
	for _, v := range nodes {
		if !in[v] {
			in[v] = true
			count++
		}
	}
	for s := 0; s < steps; s++ {
		var next []int
		for _, v := range frontier {
			for _, f := range m.VarFactors(v) {
				for _, u := range m.FactorVars(int(f)) {
					if !in[u] {
						in[u] = true
						next = append(next, int(u))
					}
				}
			}
		}
		count += len(next)
		frontier = next
	}
	out := make([]int, 0, count)
	for v, ok := range in {
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// Options configure Solve.
type Options struct {
	// Plan returns the plan of a round (0, 1, …), over the variables of the model
	// given to Solve; variables already proven are left out of later rounds' windows.
	Plan func(round int) Plan
	// Persistency configures each window's solve (Candidates is set by Solve).
	Persistency persistency.Options
	// Workers is the number of windows solved at once (default 1); a round of
	// fewer windows gives them the idle workers' cores (spare).
	Workers int
	// MaxRounds bounds the rounds (default 1); rounds also stop when one proves nothing new.
	MaxRounds int
	// Progress, if set, is called after every window (serially).
	Progress func(Progress)
}

// Progress reports a finished window.
type Progress struct {
	Round, WindowsDone, Windows int
	Persistent                  int // variables proven so far
}

// Result is the merged outcome of all rounds.
type Result struct {
	Persistent []int // proven label per variable, or −1
	// Labeling is complete: the proven labels, and elsewhere the relaxed labeling of
	// the last window (in round and plan order) that held the variable in its core.
	Labeling []int
	Rounds   int
	Windows  int
	// Proofs holds every window's result, in order (round, plan order), with the
	// variables it was solved over; Check re-verifies them.
	Proofs []Proof
}

// Proof is one window's certified result over the variables Vars of the model that
// was conditioned on the labels proven before its round (Fixed).
type Proof struct {
	Round  int
	Fixed  []int // labels fixed before the round (−1 free), over the whole model
	Nodes  []int // the window's nodes
	Vars   []int // the window model's variables, as variables of the whole model
	Result *persistency.Result
}

// Solve runs the rounds. The merged result depends only on the plans and the
// windows' results: any worker count and completion order give the same result.
func Solve(ctx context.Context, m *model.Model, opt Options) (*Result, error) {
	n := m.NumVars()
	res := &Result{Persistent: make([]int, n), Labeling: make([]int, n)}
	for v := range res.Persistent {
		res.Persistent[v] = -1
	}
	rounds := max(opt.MaxRounds, 1)
	for round := 0; round < rounds; round++ {
		fixed := slices.Clone(res.Persistent)
		cond, err := m.Condition(fixed)
		if err != nil {
			return nil, err
		}
		if cond.Model.NumVars() == 0 {
			break
		}
		local := make([]int, n) // model variable → conditioned variable, or −1
		for v := range local {
			local[v] = -1
		}
		for i, v := range cond.Vars {
			local[v] = i
		}
		plan := opt.Plan(round)
		popt := opt.Persistency
		popt.Solver = spare(popt.Solver, len(plan.Windows), opt.Workers)
		proofs := make([]Proof, len(plan.Windows))
		errs := make([]error, len(plan.Windows))
		done, proven := 0, persistency.Count(res.Persistent)
		err = forEachWindow(ctx, len(plan.Windows), opt.Workers, func(i int) {
			proofs[i], errs[i] = solveWindow(ctx, cond, local, plan.Windows[i], popt)
		}, func(i int) {
			if opt.Progress == nil {
				return
			}
			done++
			if errs[i] == nil {
				proven += persistency.Count(proofs[i].Result.Persistent)
			}
			opt.Progress(Progress{Round: round, WindowsDone: done, Windows: len(plan.Windows), Persistent: proven})
		})
		if err != nil {
			return nil, err
		}
		// Merge in plan order: later windows win on overlaps (composition).
		before := persistency.Count(res.Persistent)
		for i, pr := range proofs {
			if errs[i] != nil {
				return nil, fmt.Errorf("partition: round %d, window %d: %w", round, i, errs[i])
			}
			pr.Round, pr.Fixed, pr.Nodes = round, fixed, plan.Windows[i].Nodes
			for j, l := range pr.Result.Persistent {
				v := pr.Vars[j]
				if l >= 0 {
					res.Persistent[v] = l
				}
				if _, core := slices.BinarySearch(plan.Windows[i].Core, v); core {
					res.Labeling[v] = pr.Result.Labeling[j]
				}
			}
			res.Proofs = append(res.Proofs, pr)
		}
		res.Rounds, res.Windows = round+1, res.Windows+len(plan.Windows)
		if persistency.Count(res.Persistent) == before {
			break
		}
	}
	for v, l := range res.Persistent {
		if l >= 0 {
			res.Labeling[v] = l
		}
	}
	return res, nil
}

// windowOptions are opt for a window's sub-problem, A⁰ within its candidates
// cand: where the sub-problem reaches outside the window (nodes that are no
// candidates), the erosion from the window's edges drops every node whose
// label changes (persistency.Options.DropChanged); later rounds prove what
// it drops.
func windowOptions(opt persistency.Options, cand []bool) persistency.Options {
	opt.Candidates, opt.DropChanged = cand, slices.Contains(cand, false)
	return opt
}

// spare is solver r for a round of windows solved by workers goroutines at
// once: with fewer windows than workers, each window's TRW-S passes take the
// idle workers' cores (persistency.WithThreads: the same results on any
// number), so that a model held by one window is solved on all the cores
// given to the job.
func spare(r persistency.Relaxation, windows, workers int) persistency.Relaxation {
	if windows == 0 || windows >= workers {
		return r
	}
	return persistency.WithThreads(r, workers/windows)
}

// forEachWindow runs solve(i) for windows 0..n−1 on workers goroutines (at least
// one), then after(i) serially; it stops handing out windows when ctx ends and
// returns ctx's error then.
func forEachWindow(ctx context.Context, n, workers int, solve, after func(i int)) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range jobs {
				solve(i)
				mu.Lock()
				after(i)
				mu.Unlock()
			}
		})
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return ctx.Err()
}

// solveWindow solves one window of the conditioned model c: the window's free nodes,
// their outside neighbours and every factor touching the nodes, with A⁰ ⊆ the nodes.
func solveWindow(ctx context.Context, c *model.Conditioned, local []int, win Window, opt persistency.Options) (Proof, error) {
	p, err := problemOf(c, local, win.Nodes)
	if err != nil || p.sub == nil {
		return Proof{Result: &persistency.Result{}}, err
	}
	r, err := persistency.Run(ctx, p.sub, windowOptions(opt, p.candidates))
	if err != nil {
		return Proof{}, err
	}
	return Proof{Vars: p.vars, Result: r}, nil
}

// windowProblem is the problem Algorithm 1 solves for a window: its free nodes,
// their outside neighbours and every factor touching the nodes (sub, nil when no
// node is free), its variables as those of the model before conditioning (vars)
// and which of them are nodes (candidates).
type windowProblem struct {
	sub        *model.Model
	vars       []int
	candidates []bool
}

// problemOf is the problem of the window nodes (variables of the model c
// conditions; local maps them to c's, −1 for a fixed one).
func problemOf(c *model.Conditioned, local []int, nodes []int) (windowProblem, error) {
	var free []int
	for _, v := range nodes {
		if l := local[v]; l >= 0 {
			free = append(free, l)
		}
	}
	if len(free) == 0 {
		return windowProblem{}, nil
	}
	ext := grow(c.Model, free, 1)
	sub, err := c.Model.Induced(ext)
	if err != nil {
		return windowProblem{}, err
	}
	p := windowProblem{sub: sub.Model, vars: make([]int, len(ext)), candidates: make([]bool, len(ext))}
	for i, v := range ext {
		p.vars[i] = c.Vars[v]
		_, p.candidates[i] = slices.BinarySearch(free, v)
	}
	return p, nil
}

// conditionedProblem is the problem of the window nodes (variables of m, free in
// labels) of m conditioned on labels (−1: free).
func conditionedProblem(m *model.Model, labels, nodes []int) (windowProblem, error) {
	c, err := m.Condition(labels)
	if err != nil {
		return windowProblem{}, fmt.Errorf("fixed labels: %w", err)
	}
	local := make([]int, len(labels)) // m's variable → conditioned variable, or −1
	for v := range local {
		local[v] = -1
	}
	for i, v := range c.Vars {
		local[v] = i
	}
	return problemOf(c, local, nodes)
}

// checkProof checks a window's proof on its problem p: persistency.Verify, then
// the persistent labels it proves, label+1 by variable of p.vars (0: unproven).
func checkProof(p windowProblem, src ProofSource) ([]int32, error) {
	if src == nil {
		return nil, errors.New("partition: a window result without its proof")
	}
	proof, err := src(p.sub)
	if err != nil {
		return nil, fmt.Errorf("partition: the window's proof: %w", err)
	}
	if proof == nil {
		return nil, errors.New("partition: a window result without its proof")
	}
	if len(proof.Persistent) != len(p.vars) {
		return nil, fmt.Errorf("partition: a proof over %d variables for a window problem of %d", len(proof.Persistent), len(p.vars))
	}
	if _, err := persistency.Verify(p.sub, proof); err != nil {
		return nil, err
	}
	out := make([]int32, len(p.vars))
	for j, l := range proof.Persistent {
		out[j] = int32(l + 1)
	}
	return out, nil
}

// Check re-verifies every window's proof against the model: each window model is
// rebuilt from m conditioned on the labels fixed before its round, and its result
// checked with persistency.Verify; the merged labels must come from the proofs.
func Check(m *model.Model, res *Result) error {
	want := make([]int, m.NumVars())
	for v := range want {
		want[v] = -1
	}
	for i, pr := range res.Proofs {
		c, err := m.Condition(pr.Fixed)
		if err != nil {
			return err
		}
		local := make(map[int]int, len(c.Vars))
		for j, v := range c.Vars {
			local[v] = j
		}
		ext := make([]int, len(pr.Vars))
		for j, v := range pr.Vars {
			l, ok := local[v]
			if !ok {
				return fmt.Errorf("partition: proof %d: variable %d was fixed before its round", i, v)
			}
			ext[j] = l
		}
		if len(ext) == 0 {
			continue
		}
		sub, err := c.Model.Induced(ext)
		if err != nil {
			return err
		}
		if _, err := persistency.Verify(sub.Model, pr.Result); err != nil {
			return fmt.Errorf("partition: proof %d: %w", i, err)
		}
		for j, l := range pr.Result.Persistent {
			if l >= 0 {
				want[pr.Vars[j]] = l
			}
		}
	}
	if !slices.Equal(want, res.Persistent) {
		return fmt.Errorf("partition: the merged labels are not those of the proofs")
	}
	return nil
}
