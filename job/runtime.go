package job

import (
	"context"
	"io"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// A Runtime solves the windows of a job somewhere other than in this process's
// loops (partition.SolveRaster, partition.Solve): package service runs them over
// NATS, embedded or on a cluster. It must leave in the stores exactly what those
// loops would (the same plans, merged in plan order), and write each merged
// window's proof to Distributed.Proofs in that order, so that the outputs are
// the same byte for byte.
type Runtime interface {
	Windows(ctx context.Context, d *Distributed) (*Outcome, error)
}

// Distributed is a windowed job handed to a Runtime: its description for the
// cluster and what this process has open of it.
type Distributed struct {
	// Spec describes the job for the cluster (a fresh id; the model referred to
	// by its absolute path).
	Spec protocol.JobSpec
	// ModelPath is the model file, EvidencePath its evidence file when applied
	// (for workers without the file: a runtime uploads them).
	ModelPath, EvidencePath string
	Raster                  partition.Raster // a raster job's model
	Graph                   *model.Model     // a graph job's model, conditioned on the evidence
	// Plan and MaxLevel are an iri job's plans over Graph by round and level
	// (partition.EliminateOptions's).
	Plan     func(round, level int) partition.Plan
	MaxLevel int
	// Domains, if set, are an iri job's labels alive before its first round
	// over Graph (pbp+iri: what Algorithm 1's windows proved).
	Domains [][]int
	// A raster iri job (Spec.RasterIRI: a .grid eliminated out of core) has
	// Raster, its windows by round and level (Windows, with MaxLevel), and the
	// labels alive (Alive, from partition.InitAlive: every label, or what
	// pbp+iri's first stage proved; Prior the planes of each round's scratch
	// copy), on disk; its Labeling and Persistent end as
	// partition.EliminateRaster leaves them (Scratch is unused).
	Windows      func(round, level int) []partition.RasterWindow
	Alive, Prior partition.AliveLabels
	// The labels: the persistent map (label+1, or 0), the labeling, and the
	// labels fixed before a round. The persistent map holds the observed
	// pixels already.
	Persistent, Labeling, Scratch partition.Store
	// PNG renders the live persistency map of a raster job; nil for a graph job.
	PNG func(w io.Writer, maxSide int) error
	// Progress, when set, is called as windows are merged.
	Progress func(partition.RasterProgress)
	// Proofs receives every merged window's proof, in merge order (the run's
	// window certificates file).
	Proofs *partition.ProofWriter
}

// Outcome is what a Runtime reports of a windowed job.
type Outcome struct {
	partition.RasterResult
	Runtime string   // Provenance.Runtime: RuntimeEmbedded, RuntimeCluster
	Workers []string // the workers whose results were merged
	// Started is when the job began where it was submitted (zero: when this
	// run started): a report's seconds count from it, across coordinators.
	Started time.Time
	Lost    []string // windows lost (they prove nothing), e.g. "round 1 window 3" (rounds from 1)
	// Elimination is an iri job's merged result (without Proofs: the
	// coordinator checked each window's before merging it).
	Elimination *partition.Elimination
	// RasterElimination is a raster iri job's summary (its labels are in
	// Distributed's stores and planes).
	RasterElimination *partition.RasterEliminationResult
}

// add counts o's windows (but not Windows: an elimination counts its own) and
// reports, after out's: pbp+iri's two stages in one report.
func (out *Outcome) add(o *Outcome) {
	out.Solved += o.Solved
	out.WindowSeconds += o.WindowSeconds
	out.MaxWindowVars = max(out.MaxWindowVars, o.MaxWindowVars)
	out.PruningIterations += o.PruningIterations
	out.SolverIterations += o.SolverIterations
	out.Runtime = o.Runtime
	out.Workers = append(out.Workers, o.Workers...)
	if out.Started.IsZero() || !o.Started.IsZero() && o.Started.Before(out.Started) {
		out.Started = o.Started
	}
	out.Lost = append(out.Lost, o.Lost...)
}

// seconds is the report's wall time of a run that started at start: since the
// job's submission when the runtime knows it (out.Started).
func seconds(start time.Time, out *Outcome) float64 {
	if out != nil && !out.Started.IsZero() && out.Started.Before(start) {
		start = out.Started
	}
	return time.Since(start).Seconds()
}
