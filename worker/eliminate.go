package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
)

// SolveElimination solves task, a window of spec's iri job over its model m (the
// job's graph model, GraphModel): label elimination on the task's nodes over
// their extent, restricted to the task's domains. nodes and domains are the
// contents of their objects, fetched from the object store and checked here
// (ignored when inline). The result carries the window's elimination with its
// certificate (WindowResult.Elimination), what partition.EliminateWindow
// computes; the coordinator re-checks it before merging.
func SolveElimination(ctx context.Context, spec protocol.JobSpec, task protocol.WindowTask, m *model.Model, nodes, domains []byte, worker string) (protocol.WindowResult, error) {
	out := protocol.WindowResult{Job: task.Job, Round: task.Round, Window: task.Window, Worker: worker}
	if err := task.Validate(); err != nil {
		return out, err
	}
	g := task.Graph
	if g == nil || g.Domains == nil || !spec.IRI() {
		return out, fmt.Errorf("worker: task %s/%d/%d is not a window of an iri job with its domains", task.Job, task.Round, task.Window)
	}
	if task.Job != spec.Job || m.NumVars() != spec.Width {
		return out, fmt.Errorf("worker: task of job %s for job %s (%d variables), model of %d variables", task.Job, spec.Job, spec.Width, m.NumVars())
	}
	win, err := protocol.DecodeNodes(spec, *g, nodes)
	if err != nil {
		return out, fmt.Errorf("worker: %w", err)
	}
	w := partition.WindowWork{Nodes: win, Vars: partition.EliminationExtent(m, win)}
	counts := w.LabelCounts(m)
	if g.Domains.Object == "" {
		domains = g.Domains.Inline
	}
	if err := g.Domains.Verify(domains); err != nil {
		return out, fmt.Errorf("worker: domains: %w", err)
	}
	if w.Domains, err = protocol.DecodeDomains(domains, counts); err != nil {
		return out, fmt.Errorf("worker: %w", err)
	}
	start := time.Now()
	e, err := partition.EliminateWindow(ctx, m, w, spec.Persistency().Solver)
	if err != nil {
		return out, err
	}
	if out.Elimination, err = persistency.EncodeElimination(e); err != nil {
		return out, err
	}
	out.Vars, out.SolverIterations, out.Seconds = len(w.Vars), e.SolverIterations, time.Since(start).Seconds()
	return out, nil
}

// solveElimination fetches an iri window's objects (its node list and domains,
// when too large for the task) and solves it.
func (w *server) solveElimination(ctx context.Context, spec protocol.JobSpec, task protocol.WindowTask, m *model.Model) (protocol.WindowResult, error) {
	g := task.Graph
	if g == nil || g.Domains == nil || m == nil {
		return protocol.WindowResult{}, fmt.Errorf("task %s/%d/%d: not a window of an iri job with its domains", task.Job, task.Round, task.Window)
	}
	nodes, err := w.graphObject(ctx, g.Nodes.Data, int64(spec.Width)*int64(g.Nodes.Width), "node list")
	if err != nil {
		return protocol.WindowResult{}, err
	}
	// One bit per label: the extent has at most every variable, each at most spec.Labels.
	domains, err := w.graphObject(ctx, *g.Domains, (int64(spec.Width)*int64(spec.Labels)+7)/8, "domains")
	if err != nil {
		return protocol.WindowResult{}, err
	}
	return SolveElimination(ctx, spec, task, m, nodes, domains, w.o.ID)
}

// SolveRasterElimination solves task, a window of spec's raster iri job (a
// .grid eliminated out of core) over raster, the job's model read by
// rectangles: label elimination on the window's nodes (the pixels of its
// Nodes rectangle with more than one label alive) over the model of their
// extent read from raster, restricted to the task's domains — what
// partition.EliminateRasterWindow computes, so memory grows with the window.
// domains is the content of their object, fetched from the object store and
// checked here (ignored when inline). The coordinator re-checks the result
// before merging it.
func SolveRasterElimination(ctx context.Context, spec protocol.JobSpec, task protocol.WindowTask, raster partition.Raster, domains []byte, worker string) (protocol.WindowResult, error) {
	out, err := rasterTask(spec, task, raster, worker)
	if err != nil {
		return out, err
	}
	doms, ext, err := protocol.DecodeRasterDomains(spec, task, domains)
	if err != nil {
		return out, fmt.Errorf("worker: %w", err)
	}
	w := partition.RasterWork{Window: partition.RasterWindow{Core: partition.Rect(task.Core), Nodes: partition.Rect(task.Nodes)},
		Extent: partition.Rect(ext), Domains: doms, Nodes: protocol.RasterWindowNodes(spec.Width, task.Nodes, ext, doms)}
	if len(w.Nodes) == 0 {
		return out, fmt.Errorf("worker: window %d/%d of job %s has no undecided pixel: nothing to eliminate", task.Round, task.Window, task.Job)
	}
	start := time.Now()
	e, err := partition.EliminateRasterWindow(ctx, raster, w, spec.Persistency().Solver)
	if err != nil {
		return out, err
	}
	if out.Elimination, err = persistency.EncodeElimination(e.Result); err != nil {
		return out, err
	}
	out.Vars, out.SolverIterations, out.Seconds = len(e.Vars), e.Result.SolverIterations, time.Since(start).Seconds()
	return out, nil
}

// solveRasterElimination fetches a raster iri window's domains (when too
// large for the task), refusing an object of another size than its extent
// needs before the download, and solves it.
func (w *server) solveRasterElimination(ctx context.Context, spec protocol.JobSpec, task protocol.WindowTask, raster partition.Raster) (protocol.WindowResult, error) {
	if task.Domains == nil || raster.Window == nil {
		return protocol.WindowResult{}, fmt.Errorf("task %s/%d/%d: not a window of a raster iri job with its domains", task.Job, task.Round, task.Window)
	}
	var domains []byte
	if p := *task.Domains; p.Object != "" {
		if n := task.Nodes; n.X0+n.W > spec.Width || n.Y0+n.H > spec.Height {
			return protocol.WindowResult{}, fmt.Errorf("window %+v outside the %d×%d raster", n, spec.Width, spec.Height)
		}
		size := protocol.RasterDomainsSize(protocol.RasterExtent(spec, task.Nodes), spec.Labels)
		if p.Size != size {
			return protocol.WindowResult{}, fmt.Errorf("domains %s of %d bytes, the window's extent needs %d", p.Object, p.Size, size)
		}
		var err error
		if domains, err = w.res.GetBytes(ctx, p.Object, p.Size); err != nil {
			return protocol.WindowResult{}, fmt.Errorf("domains %s: %w", p.Object, err)
		}
	}
	return SolveRasterElimination(ctx, spec, task, raster, domains, w.o.ID)
}
