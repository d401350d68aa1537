package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// GraphOpener loads a graph job's model into memory: the model the job's windows
// are planned on, i.e. the file's model conditioned on the job's evidence.
type GraphOpener func(ctx context.Context, spec protocol.JobSpec) (*model.Model, error)

// ObjectGraphs loads graph models from a shared filesystem path below one of
// roots (SharedPath) or, for an uploaded model, from the object store
// (downloaded into dir, read, removed), and conditions them on the job's
// evidence (spec.Evidence) as the coordinator does.
func ObjectGraphs(res *cluster.Resources, dir string, roots []string) GraphOpener {
	return func(ctx context.Context, spec protocol.JobSpec) (*model.Model, error) {
		ref := spec.Model
		path := ref.Path
		if ref.Path != "" {
			var err error
			if path, err = SharedPath(roots, ref.Path); err != nil {
				return nil, err
			}
		}
		if ref.Object != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			path = filepath.Join(dir, spec.Job+"-"+ref.FileName())
			defer os.Remove(path) // read into memory: the file is not needed after
			if err := Download(ctx, res, ref.Object, ref.Size, ref.CRC32C, path); err != nil {
				return nil, err
			}
		}
		m, err := modelfile.Read(path)
		if err != nil {
			return nil, err
		}
		var evidence []byte
		if e := spec.Evidence; e != nil {
			evidence = e.Inline
			if e.Object != "" {
				if evidence, err = res.GetBytes(ctx, e.Object, e.Size); err != nil {
					return nil, fmt.Errorf("evidence %s: %w", e.Object, err)
				}
			}
			if err := e.Verify(evidence); err != nil {
				return nil, fmt.Errorf("evidence: %w", err)
			}
		}
		return GraphModel(spec, m, evidence)
	}
}

// GraphModel is the model a graph job's windows are planned on: m (the job's model
// file) conditioned on the evidence file's content when there is one, as `partopt
// solve` conditions on MODEL.evid. It must have the job's spec.Width variables.
func GraphModel(spec protocol.JobSpec, m *model.Model, evidence []byte) (*model.Model, error) {
	name := spec.Model.FileName()
	p, err := job.Condition(name, m, evidence)
	if err != nil {
		return nil, err
	}
	m = p.Solved
	if m.NumVars() != spec.Width {
		return nil, fmt.Errorf("model %s has %d free variables, job %s says %d", name, m.NumVars(), spec.Job, spec.Width)
	}
	for v := range m.NumVars() {
		if m.NumLabels(v) > spec.Labels {
			return nil, fmt.Errorf("model %s: variable %d has %d labels, job %s says at most %d", name, v, m.NumLabels(v), spec.Job, spec.Labels)
		}
	}
	return m, nil
}

// SolveGraph solves task, a window of spec's graph model m (GraphModel), conditioned
// on task.Graph.Fixed (nothing fixed when nil): nodes and fixed are the contents of
// their objects, fetched from the object store and checked here (ignored when
// inline). The result is what partition.SolveGraphWindow computes, as the message
// the coordinator merges: Persistent and Relaxed over the window's nodes.
func SolveGraph(ctx context.Context, spec protocol.JobSpec, task protocol.WindowTask, m *model.Model, nodes, fixed []byte, worker string) (protocol.WindowResult, error) {
	out := protocol.WindowResult{Job: task.Job, Round: task.Round, Window: task.Window, Worker: worker}
	if err := task.Validate(); err != nil {
		return out, err
	}
	g := task.Graph
	if g == nil || spec.Layout != protocol.LayoutGraph {
		return out, fmt.Errorf("worker: task %s/%d/%d is not a graph window of a graph job", task.Job, task.Round, task.Window)
	}
	if task.Job != spec.Job || m.NumVars() != spec.Width {
		return out, fmt.Errorf("worker: task of job %s for job %s (%d variables), model of %d variables", task.Job, spec.Job, spec.Width, m.NumVars())
	}
	win, err := protocol.DecodeNodes(spec, *g, nodes)
	if err != nil {
		return out, fmt.Errorf("worker: %w", err)
	}
	ext := partition.WindowExtent(m, win)
	vals := make([]int32, len(ext))
	if g.Fixed != nil {
		if g.Fixed.Count != len(ext) {
			return out, fmt.Errorf("worker: %d fixed labels for a window extent of %d variables", g.Fixed.Count, len(ext))
		}
		if vals, err = g.Fixed.Decode(fixed, spec.Labels); err != nil {
			return out, fmt.Errorf("worker: fixed labels: %w", err)
		}
	}
	res, err := partition.SolveGraphWindow(ctx, m, win, vals, spec.Persistency())
	if err != nil {
		return out, err
	}
	return out, fill(&out, res, spec.Labels)
}
