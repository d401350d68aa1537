package worker_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
)

// graphTask is the task of a graph window with its node list and fixed labels
// inline or in objects (returned as their contents).
func graphTask(round, window int, nodes []int, fixed []int32, labels int, inline bool) (task protocol.WindowTask, nodesContent, fixedContent []byte) {
	vals := make([]int32, len(nodes))
	for i, v := range nodes {
		vals[i] = int32(v)
	}
	limit := protocol.InlineLimit
	if !inline {
		limit = 0
	}
	nl := protocol.EncodeLabels(vals, 1<<20)
	g := &protocol.GraphWindow{Nodes: protocol.NewValues(nl, protocol.NodesObject("j", round, window), limit)}
	if !inline {
		nodesContent = nl.Data
	}
	any := false
	for _, v := range fixed {
		any = any || v != 0
	}
	if any {
		fl := protocol.EncodeLabels(fixed, labels)
		f := protocol.NewValues(fl, protocol.FixedObject("j", round, window), limit)
		g.Fixed = &f
		if !inline {
			fixedContent = fl.Data
		}
	}
	return protocol.WindowTask{Job: "j", Round: round, Window: window, Graph: g}, nodesContent, fixedContent
}

// TestSolveGraphThroughMessagesEqualsSolveGraphWindow: a graph task solved by the
// worker, its result marshalled, unmarshalled and decoded, is exactly
// partition.SolveGraphWindow's result, with the lists inline or in objects.
func TestSolveGraphThroughMessagesEqualsSolveGraphWindow(t *testing.T) {
	for _, c := range []struct {
		name       string
		seed       uint64
		higher     bool
		size, halo int
	}{{"pairwise", 3, false, 6, 1}, {"higher order", 1, true, 4, 1}} {
		t.Run(c.name, func(t *testing.T) {
			m := random.DensePairwise(random.New(c.seed), 30, 4, 0.15)
			if c.higher {
				m = random.HigherOrder(random.New(c.seed), 18, 3, 3, 40)
			}
			n := m.NumVars()
			spec := protocol.JobSpec{Job: "j", Layout: protocol.LayoutGraph, Width: n, Height: 1, Labels: 4,
				Core: c.size, Halo: c.halo, MaxRounds: 2, Variant: protocol.VariantInvariant}
			// Labels fixed by a first round, as a second round's windows see them.
			fixed := partition.NewMemStore(n, 1)
			for _, win := range partition.RegionPlan(m, c.size, c.halo, 0).Windows {
				res, err := partition.SolveGraphWindow(context.Background(), m, win.Nodes, make([]int32, len(partition.WindowExtent(m, win.Nodes))), spec.Persistency())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := partition.MergeGraphWindow(win, res, fixed, partition.NewMemStore(n, 1)); err != nil {
					t.Fatal(err)
				}
			}
			proven := 0
			for round, before := range []partition.Store{partition.NewMemStore(n, 1), fixed} {
				for i, win := range partition.RegionPlan(m, c.size, c.halo, partition.RegionShift(round, c.size)).Windows {
					ext := partition.WindowExtent(m, win.Nodes)
					vals := make([]int32, len(ext))
					if err := partition.ReadVars(before, ext, vals); err != nil {
						t.Fatal(err)
					}
					want, err := partition.SolveGraphWindow(context.Background(), m, win.Nodes, vals, spec.Persistency())
					if err != nil {
						t.Fatal(err)
					}
					for _, inline := range []bool{true, false} {
						task, nc, fc := graphTask(round, i, win.Nodes, vals, spec.Labels, inline)
						msg, err := worker.SolveGraph(context.Background(), spec, task, m, nc, fc, "w1")
						if err != nil {
							t.Fatalf("window %d: %v", i, err)
						}
						data, err := protocol.Marshal(msg)
						if err != nil {
							t.Fatal(err)
						}
						back, err := protocol.Decode[protocol.WindowResult](data, protocol.MaxMessageBytes)
						if err != nil {
							t.Fatal(err)
						}
						got, err := protocol.DecodeResult(spec, task, back)
						if err != nil {
							t.Fatal(err)
						}
						got.Seconds, want.Seconds = 0, 0
						if len(back.Proof) > 0 { // it travels with the result, and checks
							if got.Proof, err = persistency.ReadResult(bytes.NewReader(back.Proof)); err != nil {
								t.Fatal(err)
							}
							if err := partition.CheckGraphWindow(m, win.Nodes, vals, got.Persistent, partition.ProofValue(got.Proof)); err != nil {
								t.Fatalf("window %d: its proof: %v", i, err)
							}
						} else if want.Proof != nil {
							t.Fatalf("window %d: its proof did not travel", i)
						}
						wantProof := want.Proof
						got.Proof, want.Proof = nil, nil // timings apart, the same result
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("window %d (inline %v): the result through messages differs from SolveGraphWindow's:\n%+v\n%+v", i, inline, got, want)
						}
						want.Proof = wantProof
						for _, p := range got.Persistent {
							if p > 0 {
								proven++
							}
						}
					}
				}
			}
			if proven == 0 {
				t.Error("no window proved anything: the test checks too little")
			}
		})
	}
}

// TestSolveGraphRejectsBadTasks: a node list out of range, unsorted, repeated or
// longer than the model, fixed labels that do not match the window's extent or are
// corrupt, and a raster window of a graph job are errors that say so.
func TestSolveGraphRejectsBadTasks(t *testing.T) {
	m := random.DensePairwise(random.New(2), 20, 3, 0.2)
	n := m.NumVars()
	spec := protocol.JobSpec{Job: "j", Layout: protocol.LayoutGraph, Width: n, Height: 1, Labels: 3,
		Core: 5, Halo: 1, MaxRounds: 1, Variant: protocol.VariantInvariant}
	long := make([]int, n+1)
	for i := range long {
		long[i] = i
	}
	okNodes := []int{2, 3, 4}
	ext := len(partition.WindowExtent(m, okNodes))
	oneFixed := func(k int) []int32 { v := make([]int32, k); v[0] = 1; return v }
	for _, c := range []struct {
		name   string
		nodes  []int
		fixed  []int32
		inline bool
		edit   func(task *protocol.WindowTask, nc, fc []byte) ([]byte, []byte)
		want   string
	}{
		{name: "out of range", nodes: []int{1, 5, n}, inline: true, want: "outside the model's 20 variables"},
		{name: "unsorted", nodes: []int{1, 7, 5}, inline: true, want: "not strictly ascending: 5 after 7"},
		{name: "repeated", nodes: []int{1, 5, 5}, inline: true, want: "not strictly ascending"},
		{name: "too long", nodes: long, inline: true, want: "21 nodes in a model of 20 variables"},
		{name: "too long, in an object", nodes: long, want: "21 nodes in a model of 20 variables"},
		{name: "fixed of another extent", nodes: okNodes, fixed: oneFixed(ext + 1), inline: true, want: "for a window extent of"},
		{name: "fixed label out of range", nodes: okNodes, fixed: append(oneFixed(ext-1), 9), inline: true, want: "exceeds 3"},
		{name: "corrupt node object", nodes: okNodes, edit: func(_ *protocol.WindowTask, nc, fc []byte) ([]byte, []byte) {
			nc = append([]byte(nil), nc...)
			nc[0]++
			return nc, fc
		}, want: "CRC32C"},
		{name: "raster window", nodes: okNodes, inline: true, edit: func(task *protocol.WindowTask, nc, fc []byte) ([]byte, []byte) {
			task.Graph = nil
			task.Core, task.Nodes = protocol.Rect{W: 1, H: 1}, protocol.Rect{W: 1, H: 1}
			return nc, fc
		}, want: "not a graph window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fixed := c.fixed
			if fixed == nil {
				fixed = make([]int32, 1)
			}
			task, nc, fc := graphTask(0, 0, c.nodes, fixed, 9, c.inline)
			if c.edit != nil {
				nc, fc = c.edit(&task, nc, fc)
			}
			_, err := worker.SolveGraph(context.Background(), spec, task, m, nc, fc, "w1")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("SolveGraph = %v, want an error containing %q", err, c.want)
			}
		})
	}
}
