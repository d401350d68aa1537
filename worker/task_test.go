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

// TestSolveThroughMessagesEqualsSolveWindow: a task solved by the worker, its result
// marshalled, unmarshalled and decoded, is exactly partition.SolveWindow's result, with
// fixed labels inline, in an object, or none.
func TestSolveThroughMessagesEqualsSolveWindow(t *testing.T) {
	const w, h, k = 30, 26, 3
	m := random.PottsDenoising(random.New(4), w, h, k, 0.9, 4, 1.3)
	raster, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	spec := protocol.JobSpec{Job: "j", Width: w, Height: h, Labels: k, Core: 10, Halo: 2, MaxRounds: 2, Variant: protocol.VariantInvariant}
	// Labels fixed by a first round, as a second round's windows see them.
	fixed := partition.NewMemStore(w, h)
	if _, err := partition.SolveRaster(context.Background(), raster, fixed, partition.NewMemStore(w, h), partition.NewMemStore(w, h),
		partition.RasterOptions{Core: 10, Halo: 2, Persistency: spec.Persistency()}); err != nil {
		t.Fatal(err)
	}
	whole := protocol.Rect{W: w, H: h}
	all := protocol.EncodeLabels(fixed.Values, k)
	proven := 0
	for i, win := range partition.RasterWindows(w, h, 10, 2, 5) {
		for _, mode := range []string{"none", "inline", "object"} {
			task := protocol.WindowTask{Job: "j", Round: 1, Window: i, Core: protocol.Rect(win.Core), Nodes: protocol.Rect(win.Nodes)}
			store, content := partition.Store(partition.NewMemStore(w, h)), []byte(nil)
			switch mode {
			case "inline":
				f := protocol.NewFixed(whole, all, "")
				task.Fixed, store = &f, fixed
			case "object":
				f := protocol.Fixed{Rect: whole, Width: all.Width, Data: protocol.Payload{Object: "j.fixed.1", Size: int64(len(all.Data)), CRC32C: protocol.CRC32C(all.Data)}}
				task.Fixed, store, content = &f, fixed, all.Data
			}
			want, err := partition.SolveWindow(context.Background(), raster, win, store, spec.Persistency())
			if err != nil {
				t.Fatal(err)
			}
			msg, err := worker.Solve(context.Background(), spec, task, raster, content, "w1")
			if err != nil {
				t.Fatalf("window %d, %s: %v", i, mode, err)
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
			if (len(back.Proof) > 0) != (want.Proof != nil) {
				t.Fatalf("window %d, %s: a proof of %d bytes, SolveWindow's %v", i, mode, len(back.Proof), want.Proof != nil)
			}
			if len(back.Proof) > 0 { // it travels with the result, and checks
				if got.Proof, err = persistency.ReadResult(bytes.NewReader(back.Proof)); err != nil {
					t.Fatal(err)
				}
				if err := partition.CheckRasterWindow(raster, win, store, got.Persistent, partition.ProofValue(got.Proof)); err != nil {
					t.Fatalf("window %d, %s: its proof: %v", i, mode, err)
				}
			}
			got.Proof, want.Proof = nil, nil // timings apart, the same result
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("window %d, %s: the result through messages differs from SolveWindow's", i, mode)
			}
			for _, p := range got.Persistent {
				if p > 0 {
					proven++
				}
			}
		}
	}
	if proven == 0 {
		t.Error("no window proved anything: the test checks too little")
	}
}

// TestSolveRejectsBadTasks: a task of another job, fixed labels that do not cover the
// window's reach, a corrupt object and out-of-range labels are errors, never results.
func TestSolveRejectsBadTasks(t *testing.T) {
	const w, h = 12, 12
	m := random.PottsDenoising(random.New(1), w, h, 2, 1, 4, 1)
	raster, err := partition.RasterOf(m, w, h)
	if err != nil {
		t.Fatal(err)
	}
	spec := protocol.JobSpec{Job: "j", Width: w, Height: h, Labels: 2, Core: 6, Variant: protocol.VariantInvariant}
	task := func() protocol.WindowTask {
		return protocol.WindowTask{Job: "j", Core: protocol.Rect{X0: 6, Y0: 6, W: 6, H: 6}, Nodes: protocol.Rect{X0: 6, Y0: 6, W: 6, H: 6}}
	}
	zeros := protocol.EncodeLabels(make([]int32, w*h), 2)
	cases := map[string]func() (protocol.WindowTask, []byte){
		"other job": func() (protocol.WindowTask, []byte) { tk := task(); tk.Job = "k"; return tk, nil },
		"fixed too small": func() (protocol.WindowTask, []byte) {
			tk := task()
			small := protocol.EncodeLabels(make([]int32, 36), 2)
			f := protocol.NewFixed(protocol.Rect{X0: 6, Y0: 6, W: 6, H: 6}, small, "")
			tk.Fixed = &f
			return tk, nil
		},
		"corrupt object": func() (protocol.WindowTask, []byte) {
			tk := task()
			f := protocol.Fixed{Rect: protocol.Rect{W: w, H: h}, Width: zeros.Width, Data: protocol.Payload{Object: "o", Size: int64(len(zeros.Data)), CRC32C: protocol.CRC32C(zeros.Data) + 1}}
			tk.Fixed = &f
			return tk, zeros.Data
		},
		"label out of range": func() (protocol.WindowTask, []byte) {
			tk := task()
			v := make([]int32, w*h)
			v[0] = 3 // K = 2: label+1 is at most 2
			f := protocol.NewFixed(protocol.Rect{W: w, H: h}, protocol.EncodeLabels(v, 3), "")
			tk.Fixed = &f
			return tk, nil
		},
	}
	want := map[string]string{"other job": "job k", "fixed too small": "do not cover", "corrupt object": "CRC32C", "label out of range": "fixed labels"}
	for name, c := range cases {
		tk, content := c()
		if _, err := worker.Solve(context.Background(), spec, tk, raster, content, "w"); err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: got %v, want an error about %q", name, err, want[name])
		}
	}
}
