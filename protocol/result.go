package protocol

import (
	"fmt"

	"github.com/partopt/partopt/partition"
)

// DecodeResult decodes the result message msg of task back into the partition.WindowResult that
// partition.MergeWindow (a graph window's: partition.MergeGraphWindow) merges, checking its
// sizes and labels against the task.
func DecodeResult(spec JobSpec, task WindowTask, msg WindowResult) (*partition.WindowResult, error) {
	if msg.Job != task.Job || msg.Round != task.Round || msg.Window != task.Window {
		return nil, fmt.Errorf("protocol: result %s/%d/%d for task %s/%d/%d", msg.Job, msg.Round, msg.Window, task.Job, task.Round, task.Window)
	}
	res := &partition.WindowResult{Vars: msg.Vars, PruningIterations: msg.PruningIterations, SolverIterations: msg.SolverIterations, Seconds: msg.Seconds}
	if msg.Vars == 0 {
		return res, nil
	}
	var err error
	if res.Persistent, err = msg.Persistent.DecodeMax(spec.Labels); err != nil {
		return nil, fmt.Errorf("protocol: result %s/%d/%d: persistent labels: %w", msg.Job, msg.Round, msg.Window, err)
	}
	if res.Labeling, err = msg.Relaxed.DecodeMax(spec.Labels); err != nil {
		return nil, fmt.Errorf("protocol: result %s/%d/%d: relaxed labels: %w", msg.Job, msg.Round, msg.Window, err)
	}
	if g := task.Graph; g != nil {
		if len(res.Persistent) != g.Nodes.Count || len(res.Labeling) != g.Nodes.Count {
			return nil, fmt.Errorf("protocol: result %s/%d/%d: %d and %d labels for a graph window of %d nodes", msg.Job, msg.Round, msg.Window, len(res.Persistent), len(res.Labeling), g.Nodes.Count)
		}
	} else if len(res.Persistent) != task.Nodes.Pixels() || len(res.Labeling) != task.Core.Pixels() {
		return nil, fmt.Errorf("protocol: result %s/%d/%d: %d and %d labels for %d nodes and %d core pixels", msg.Job, msg.Round, msg.Window, len(res.Persistent), len(res.Labeling), task.Nodes.Pixels(), task.Core.Pixels())
	}
	for i, l := range res.Labeling {
		res.Labeling[i] = l - 1
	}
	return res, nil
}
