// Package worker solves window tasks for the coordinator: Solve is one task, from the
// task message and the window's fixed labels to the result message, with no NATS in
// it; the JetStream loop (pull one task per slot, heartbeat, store, ack) drives it.
package worker

import (
	"context"
	"fmt"

	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
)

// Solve solves task, a window of spec's raster, conditioned on task.Fixed (nothing
// fixed when nil): fixed is the content of its object, fetched from the object store
// and checked here (ignored for inline labels). The result
// is what partition.SolveWindow computes, as the message the coordinator merges
// (protocol.DecodeResult decodes it back).
func Solve(ctx context.Context, spec protocol.JobSpec, task protocol.WindowTask, raster partition.Raster, fixed []byte, worker string) (protocol.WindowResult, error) {
	out, err := rasterTask(spec, task, raster, worker)
	if err != nil {
		return out, err
	}
	win := partition.RasterWindow{Core: partition.Rect(task.Core), Nodes: partition.Rect(task.Nodes)}
	if n := task.Nodes; n.X0+n.W > spec.Width || n.Y0+n.H > spec.Height {
		return out, fmt.Errorf("worker: window %+v outside the %d×%d raster", n, spec.Width, spec.Height)
	}
	store, err := fixedStore(spec, task, fixed)
	if err != nil {
		return out, err
	}
	res, err := partition.SolveWindow(ctx, raster, win, store, spec.Persistency())
	if err != nil {
		return out, err
	}
	return out, fill(&out, res, spec.Labels)
}

// fill puts a window's result into the result message: its counts, and unless no
// variable was free its persistent and relaxed labels (relaxed shifted by one, so
// that a fixed variable's −1 travels as 0) and its proof.
func fill(out *protocol.WindowResult, res *partition.WindowResult, labels int) error {
	out.Vars, out.PruningIterations, out.SolverIterations, out.Seconds = res.Vars, res.PruningIterations, res.SolverIterations, res.Seconds
	if res.Vars == 0 {
		return nil
	}
	if res.Proof != nil {
		var err error
		if out.Proof, err = persistency.EncodeResult(res.Proof); err != nil {
			return err
		}
	}
	relaxed := make([]int32, len(res.Labeling))
	for i, l := range res.Labeling {
		relaxed[i] = l + 1
	}
	out.Persistent = protocol.EncodeLabels(res.Persistent, labels)
	out.Relaxed = protocol.EncodeLabels(relaxed, labels)
	return nil
}

// fixedStore is the task's fixed labels as a Store over the whole raster that
// answers for the window's rectangle grown by two pixels (what SolveWindow reads).
func fixedStore(spec protocol.JobSpec, task protocol.WindowTask, content []byte) (partition.Store, error) {
	n := task.Nodes
	need := protocol.Rect{X0: max(n.X0-2, 0), Y0: max(n.Y0-2, 0)}
	need.W, need.H = min(n.X0+n.W+2, spec.Width)-need.X0, min(n.Y0+n.H+2, spec.Height)-need.Y0
	if task.Fixed == nil {
		return rectStore{rect: need, values: make([]int32, need.Pixels())}, nil
	}
	f := task.Fixed
	if !f.Rect.Contains(need) {
		return nil, fmt.Errorf("worker: fixed labels over %+v do not cover %+v, the nodes grown by 2 pixels", f.Rect, need)
	}
	if f.Data.Object == "" {
		content = f.Data.Inline
	}
	if err := f.Data.Verify(content); err != nil {
		return nil, fmt.Errorf("worker: fixed labels: %w", err)
	}
	values, err := f.Labels(content).DecodeMax(spec.Labels)
	if err != nil {
		return nil, fmt.Errorf("worker: fixed labels: %w", err)
	}
	return rectStore{rect: f.Rect, values: values}, nil
}

// rectStore is a read-only Store that holds the values of one rectangle.
type rectStore struct {
	rect   protocol.Rect
	values []int32
}

func (s rectStore) ReadRect(x0, y0, w, h int, dst []int32) error {
	if !s.rect.Contains(protocol.Rect{X0: x0, Y0: y0, W: w, H: h}) || len(dst) != w*h {
		return fmt.Errorf("worker: read of %d×%d at (%d,%d) outside the fixed labels %+v", w, h, x0, y0, s.rect)
	}
	for j := range h {
		copy(dst[j*w:(j+1)*w], s.values[(y0+j-s.rect.Y0)*s.rect.W+x0-s.rect.X0:])
	}
	return nil
}

func (s rectStore) WriteRect(int, int, int, int, []int32) error {
	return fmt.Errorf("worker: the fixed labels are read-only")
}

// rasterTask checks a raster window task against its job's spec and the
// raster the worker opened, and returns the result message to fill.
func rasterTask(spec protocol.JobSpec, task protocol.WindowTask, raster partition.Raster, worker string) (protocol.WindowResult, error) {
	out := protocol.WindowResult{Job: task.Job, Round: task.Round, Window: task.Window, Worker: worker}
	if err := task.Validate(); err != nil {
		return out, err
	}
	if task.Job != spec.Job || raster.Width != spec.Width || raster.Height != spec.Height {
		return out, fmt.Errorf("worker: task of job %s for job %s (%d×%d), raster %d×%d", task.Job, spec.Job, spec.Width, spec.Height, raster.Width, raster.Height)
	}
	return out, nil
}
