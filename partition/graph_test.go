package partition_test

import (
	"context"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// solveGraphRounds is Solve with RegionPlan done as the distributed runtime does it:
// each window solved by SolveGraphWindow from the labels fixed before its round over
// its extent, merged by MergeGraphWindow into n×1 stores in plan order.
func solveGraphRounds(t *testing.T, m *model.Model, size, halo, rounds int, opt persistency.Options) (persistent, labeling []int, nrounds int) {
	t.Helper()
	n := m.NumVars()
	pers, lab, scratch := partition.NewMemStore(n, 1), partition.NewMemStore(n, 1), partition.NewMemStore(n, 1)
	ctx := context.Background()
	for round := 0; round < rounds; round++ {
		before, err := partition.CopyStore(scratch, pers, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		if before == int64(n) {
			break
		}
		added := int64(0)
		for _, win := range partition.RegionPlan(m, size, halo, partition.RegionShift(round, size)).Windows {
			ext := partition.WindowExtent(m, win.Nodes)
			fixed := make([]int32, len(ext))
			if err := partition.ReadVars(scratch, ext, fixed); err != nil {
				t.Fatal(err)
			}
			res, err := partition.SolveGraphWindow(ctx, m, win.Nodes, fixed, opt)
			if err != nil {
				t.Fatal(err)
			}
			checkGraphProof(t, m, win.Nodes, fixed, res)
			a, err := partition.MergeGraphWindow(win, res, pers, lab)
			if err != nil {
				t.Fatal(err)
			}
			added += a
		}
		nrounds++
		if added == 0 {
			break
		}
	}
	if err := partition.OverrideLabels(lab, pers, n, 1); err != nil {
		t.Fatal(err)
	}
	persistent, labeling = make([]int, n), make([]int, n)
	for v := range n {
		persistent[v], labeling[v] = int(pers.Values[v])-1, int(lab.Values[v])
	}
	return persistent, labeling, nrounds
}

// TestGraphWindowsEqualSolve: rounds of SolveGraphWindow and MergeGraphWindow give
// exactly Solve's persistent labels, labeling and round count, on pairwise and
// higher-order models, with and without a halo.
func TestGraphWindowsEqualSolve(t *testing.T) {
	cases := []struct {
		name       string
		m          *model.Model
		size, halo int
	}{
		{"dense pairwise", random.DensePairwise(random.New(1), 30, 4, 0.15), 6, 1},
		{"dense pairwise, no halo", random.DensePairwise(random.New(2), 40, 3, 0.1), 8, 0},
		{"sparse pairwise, wide halo", random.DensePairwise(random.New(3), 50, 3, 0.05), 5, 2},
		{"higher order", random.HigherOrder(random.New(1), 18, 3, 3, 40), 4, 1},
		{"higher order, second round conditions", random.HigherOrder(random.New(3), 18, 3, 3, 40), 4, 1},
		{"higher order, no halo", random.HigherOrder(random.New(5), 18, 2, 4, 30), 5, 0},
		{"potts grid as a graph", random.PottsGrid(random.New(6), 7, 6, 3), 9, 1},
	}
	proven := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opt := persistency.Options{Solver: persistency.Auto{Options: trws.DefaultOptions()}}
			want, err := partition.Solve(context.Background(), c.m, partition.Options{
				Plan: func(round int) partition.Plan {
					return partition.RegionPlan(c.m, c.size, c.halo, partition.RegionShift(round, c.size))
				},
				Persistency: opt, Workers: 2, MaxRounds: 3,
			})
			if err != nil {
				t.Fatal(err)
			}
			pers, lab, rounds := solveGraphRounds(t, c.m, c.size, c.halo, 3, opt)
			if !slices.Equal(pers, want.Persistent) || !slices.Equal(lab, want.Labeling) || rounds != want.Rounds {
				t.Fatalf("graph windows: persistent %v labeling %v rounds %d\nSolve:         persistent %v labeling %v rounds %d",
					pers, lab, rounds, want.Persistent, want.Labeling, want.Rounds)
			}
			k := 0
			for _, l := range pers {
				if l >= 0 {
					k++
				}
			}
			proven += k
			t.Logf("%d of %d variables proven in %d rounds, %d windows", k, c.m.NumVars(), rounds, want.Windows)
		})
	}
	if proven == 0 {
		t.Error("no variable proven: the test checks too little")
	}
}

// TestGraphWindowBadInput: a fixed-label list of the wrong length, a fixed label out
// of range and a store too short are errors, not panics.
func TestGraphWindowBadInput(t *testing.T) {
	m := random.DensePairwise(random.New(7), 12, 3, 0.3)
	nodes := []int{0, 1, 2}
	ext := partition.WindowExtent(m, nodes)
	ctx := context.Background()
	if _, err := partition.SolveGraphWindow(ctx, m, nodes, make([]int32, len(ext)+1), persistency.Options{}); err == nil {
		t.Error("a fixed list longer than the extent was accepted")
	}
	bad := make([]int32, len(ext))
	bad[len(bad)-1] = 100
	if _, err := partition.SolveGraphWindow(ctx, m, nodes, bad, persistency.Options{}); err == nil {
		t.Error("a fixed label out of range was accepted")
	}
	res := &partition.WindowResult{Vars: 3, Persistent: []int32{1, 0}, Labeling: []int32{0, 0}}
	if _, err := partition.MergeGraphWindow(partition.Window{Core: nodes, Nodes: nodes}, res, partition.NewMemStore(12, 1), partition.NewMemStore(12, 1)); err == nil {
		t.Error("a result shorter than the window was merged")
	}
}

func TestVarRuns(t *testing.T) {
	s := partition.NewMemStore(10, 1)
	vars := []int{0, 1, 2, 5, 7, 8, 9}
	if err := partition.WriteVars(s, vars, []int32{1, 2, 3, 4, 5, 6, 7}); err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 2, 3, 0, 0, 4, 0, 5, 6, 7}; !slices.Equal(s.Values, want) {
		t.Fatalf("store %v, want %v", s.Values, want)
	}
	got := make([]int32, 3)
	if err := partition.ReadVars(s, []int{2, 7, 9}, got); err != nil || !slices.Equal(got, []int32{3, 5, 7}) {
		t.Fatalf("read %v, %v", got, err)
	}
}

// checkGraphProof: a window's result is accepted by CheckGraphWindow, and refused
// with a persistent label changed or dropped, or without its proof.
func checkGraphProof(t *testing.T, m *model.Model, nodes []int, fixed []int32, res *partition.WindowResult) {
	t.Helper()
	if err := partition.CheckGraphWindow(m, nodes, fixed, res.Persistent, partition.ProofValue(res.Proof)); err != nil {
		t.Fatalf("a genuine window result refused: %v", err)
	}
	k := slices.IndexFunc(res.Persistent, func(l int32) bool { return l > 0 })
	if k < 0 {
		return
	}
	for _, change := range []func(f *partition.WindowResult){
		func(f *partition.WindowResult) { f.Persistent[k] = f.Persistent[k]%int32(m.NumLabels(nodes[k])) + 1 },
		func(f *partition.WindowResult) { f.Persistent[k] = 0 },
		func(f *partition.WindowResult) { f.Proof = nil },
	} {
		f := *res
		f.Persistent = slices.Clone(res.Persistent)
		change(&f)
		if slices.Equal(f.Persistent, res.Persistent) && f.Proof != nil {
			continue // one label: nothing else to claim
		}
		if err := partition.CheckGraphWindow(m, nodes, fixed, f.Persistent, partition.ProofValue(f.Proof)); err == nil {
			t.Fatalf("a forged window result accepted: persistent %v, proof %v", f.Persistent, f.Proof != nil)
		}
	}
}
