package worker_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
)

// TestSolveRasterEliminationEqualsEliminateRasterWindow: a raster iri window
// solved by the worker from its task — rectangles and domains, inline or from
// an object — its result marshalled and unmarshalled, is exactly
// partition.EliminateRasterWindow's elimination of the coordinator's work, and
// passes the coordinator's check (ProvenRasterElimination); the second
// round's windows start from the first round's merged domains.
func TestSolveRasterEliminationEqualsEliminateRasterWindow(t *testing.T) {
	const w, h, k = 14, 11, 4
	m := random.PottsDenoising(random.New(8), w, h, k, 0.9, 4, 1.3)
	raster, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	spec := protocol.JobSpec{Job: "j", Method: protocol.MethodIRI, Width: w, Height: h, Labels: k, Core: 5, Halo: 1, MaxRounds: 2, Variant: protocol.VariantInvariant}
	alive, prior := partition.NewMemAlive(w, h, k), partition.NewMemAlive(w, h, k)
	if _, err := partition.InitAlive(alive, w, h, nil); err != nil {
		t.Fatal(err)
	}
	g, err := partition.NewRasterMerger(w, h, alive, prior, partition.NewMemStore(w, h))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	solved := 0
	for round := range 2 {
		if err := g.StartRound(round); err != nil {
			t.Fatal(err)
		}
		for i, win := range partition.RasterWindows(w, h, 5, 1, round*5/2) {
			work, err := g.Window(win)
			if err != nil {
				t.Fatal(err)
			}
			if len(work.Nodes) == 0 {
				continue
			}
			want, err := partition.EliminateRasterWindow(ctx, raster, work, spec.Persistency().Solver)
			if err != nil {
				t.Fatal(err)
			}
			data := protocol.EncodeRasterDomains(work.Domains, k)
			for _, object := range []bool{false, true} {
				d := protocol.Payload{Inline: data}
				content := []byte(nil)
				if object {
					d, content = protocol.Payload{Object: protocol.DomainsObject("j", round, i), Size: int64(len(data)), CRC32C: protocol.CRC32C(data)}, data
				}
				task := protocol.WindowTask{Job: "j", Round: round, Window: i, Core: protocol.Rect(win.Core), Nodes: protocol.Rect(win.Nodes), Domains: &d}
				raw, err := protocol.Marshal(task)
				if err != nil {
					t.Fatal(err)
				}
				task, err = protocol.Decode[protocol.WindowTask](raw, protocol.MaxMessageBytes)
				if err != nil {
					t.Fatal(err)
				}
				msg, err := worker.SolveRasterElimination(ctx, spec, task, raster, content, "w")
				if err != nil {
					t.Fatalf("round %d window %d: %v", round, i, err)
				}
				if raw, err = protocol.Marshal(msg); err == nil {
					msg, err = protocol.Decode[protocol.WindowResult](raw, protocol.MaxMessageBytes)
				}
				if err != nil {
					t.Fatal(err)
				}
				got, err := partition.ProvenRasterElimination(raster, work, partition.ProofBytes(msg.Elimination))
				if err != nil {
					t.Fatalf("round %d window %d: the coordinator's check: %v", round, i, err)
				}
				if msg.Vars != len(want.Vars) || !reflect.DeepEqual(got.Vars, want.Vars) || !reflect.DeepEqual(got.Result.Alive, want.Result.Alive) || !reflect.DeepEqual(got.Result.Test, want.Result.Test) {
					t.Fatalf("round %d window %d: the worker's elimination differs from EliminateRasterWindow's", round, i)
				}
			}
			if _, err := g.Merge(work, want); err != nil {
				t.Fatal(err)
			}
			solved++
		}
	}
	if solved == 0 {
		t.Fatal("no window to eliminate")
	}
}

// TestSolveRasterEliminationRejectsBadTasks: a task of another job or method,
// domains of the wrong size, a corrupt domains object, and a window without an
// undecided pixel are refused before any elimination.
func TestSolveRasterEliminationRejectsBadTasks(t *testing.T) {
	const w, h, k = 6, 5, 3
	m := random.PottsDenoising(random.New(2), w, h, k, 0.9, 4, 1.3)
	raster, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	spec := protocol.JobSpec{Job: "j", Method: protocol.MethodIRI, Width: w, Height: h, Labels: k, Core: 3, Halo: 0, MaxRounds: 1, Variant: protocol.VariantInvariant}
	nodes := protocol.Rect{X0: 0, Y0: 0, W: 3, H: 3}
	ext := protocol.RasterExtent(spec, nodes)
	all, single := make([][]int, ext.Pixels()), make([][]int, ext.Pixels())
	for i := range all {
		all[i], single[i] = []int{0, 1, 2}, []int{1}
	}
	data := protocol.EncodeRasterDomains(all, k)
	task := func(d protocol.Payload) protocol.WindowTask {
		return protocol.WindowTask{Job: "j", Core: nodes, Nodes: nodes, Domains: &d}
	}
	pbp := spec
	pbp.Method = ""
	obj := protocol.Payload{Object: protocol.DomainsObject("j", 0, 0), Size: int64(len(data)), CRC32C: protocol.CRC32C(data) + 1}
	for _, tc := range []struct {
		name    string
		spec    protocol.JobSpec
		task    protocol.WindowTask
		content []byte
		want    string
	}{
		{"another job", spec, protocol.WindowTask{Job: "x", Core: nodes, Nodes: nodes, Domains: &protocol.Payload{Inline: data}}, nil, "task of job x"},
		{"a pbp job", pbp, task(protocol.Payload{Inline: data}), nil, "not a window of a raster iri job"},
		{"short domains", spec, task(protocol.Payload{Inline: data[1:]}), nil, "domains of"},
		{"corrupt object", spec, task(obj), data, "CRC32C"},
		{"nothing undecided", spec, task(protocol.Payload{Inline: protocol.EncodeRasterDomains(single, k)}), nil, "no undecided pixel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := worker.SolveRasterElimination(context.Background(), tc.spec, tc.task, raster, tc.content, "w")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SolveRasterElimination = %v, want %q", err, tc.want)
			}
		})
	}
}
