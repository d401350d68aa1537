package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/replica"
)

// jobTable is where the coordinator records its jobs: the key-value bucket
// (one coordinator) or the raft-replicated table (replicas).
type jobTable interface {
	// add records a new job; an existing id is an error.
	add(ctx context.Context, spec protocol.JobSpec) error
	// end records how a job ended.
	end(ctx context.Context, sum coordinator.Summary) error
	// unfinished lists the jobs to resume.
	unfinished(ctx context.Context) ([]protocol.JobSpec, error)
	// phase is a job's phase in the table (an error for an unknown job).
	phase(ctx context.Context, job string) (string, error)
	// remove deletes an ended job from the table, its spec and status with it.
	remove(ctx context.Context, job string) error
}

// errNoJob is the table's error for a job it does not hold.
func errNoJob(job string) error { return fmt.Errorf("no job %s", job) }

// removeKeys deletes a job's keys from the job bucket.
func removeKeys(ctx context.Context, res *cluster.Resources, job string) error {
	for _, key := range []string{protocol.JobSpecKey(job), protocol.JobStatusKey(job), protocol.JobLoadsKey(job)} {
		if err := res.Jobs.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
	}
	return nil
}

// kvTable keeps the jobs in the key-value bucket: the specs the workers read and
// the statuses the clients read.
type kvTable struct{ res *cluster.Resources }

func (t kvTable) add(ctx context.Context, spec protocol.JobSpec) error {
	if _, err := t.res.Jobs.Get(ctx, protocol.JobSpecKey(spec.Job)); err == nil {
		return fmt.Errorf("job %s exists", spec.Job)
	}
	return t.res.PutJobSpec(ctx, spec)
}

func (kvTable) end(context.Context, coordinator.Summary) error { return nil } // the status is the record

func (t kvTable) phase(ctx context.Context, job string) (string, error) {
	e, err := t.res.Jobs.Get(ctx, protocol.JobStatusKey(job))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if _, err := t.res.Jobs.Get(ctx, protocol.JobSpecKey(job)); err == nil {
			return replica.PhaseSubmitted, nil
		}
		return "", errNoJob(job)
	}
	if err != nil {
		return "", err
	}
	var sum coordinator.Summary
	if err := json.Unmarshal(e.Value(), &sum); err != nil {
		return "", fmt.Errorf("job %s: status: %w", job, err)
	}
	return sum.Phase, nil
}

func (t kvTable) remove(ctx context.Context, job string) error { return removeKeys(ctx, t.res, job) }

func (t kvTable) unfinished(ctx context.Context) ([]protocol.JobSpec, error) {
	var out []protocol.JobSpec
	err := jobStatuses(ctx, t.res, func(job string, _ jetstream.KeyValueEntry, sum coordinator.Summary, err error) error {
		if err != nil {
			return fmt.Errorf("job %s: status: %w", job, err)
		}
		// A job done but not uploaded (stopped in between) is finished again.
		if replica.Finished(sum.Phase) && (sum.Phase != replica.PhaseDone || len(sum.Outputs) > 0) {
			return nil
		}
		spec, err := t.res.JobSpec(ctx, job)
		if err != nil {
			return err
		}
		out = append(out, spec)
		return nil
	})
	return out, err
}

// jobStatuses calls each for every job with a stored status in the job
// bucket: its id, the status entry and the status decoded (err when it could
// not be read or decoded); an error from each ends the walk.
func jobStatuses(ctx context.Context, res *cluster.Resources, each func(job string, e jetstream.KeyValueEntry, sum coordinator.Summary, err error) error) error {
	keys, err := statusKeys(ctx, res)
	if err != nil {
		return err
	}
	for _, key := range keys {
		job, _ := strings.CutSuffix(key, ".status")
		e, err := res.Jobs.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted since, or a delete marker's subject
		}
		var sum coordinator.Summary
		if err == nil {
			err = json.Unmarshal(e.Value(), &sum)
		}
		if err := each(job, e, sum, err); err != nil {
			return err
		}
	}
	return nil
}

// statusKeys are the job bucket's status keys, sorted, from its stream's
// state: the subjects that hold messages, as the server counts them at one
// moment (a deleted key's marker among them). KeyValue.Keys watches the bucket
// instead, and on a loaded server stopped early: `jobs` right after two
// submissions listed one of them or none (TestJobLifecycle, 1 run in 20 beside
// another package's tests).
func statusKeys(ctx context.Context, res *cluster.Resources) ([]string, error) {
	bucket := res.Jobs.Bucket()
	st, err := res.JS.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + bucket + "."
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+"*.status"))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		keys = append(keys, strings.TrimPrefix(subject, prefix))
	}
	slices.Sort(keys)
	return keys, nil
}

// raftTable keeps the jobs in the replicated table (and the specs in the
// key-value bucket too, for the workers).
type raftTable struct {
	rep *replica.Replica
	res *cluster.Resources
}

func (t raftTable) add(ctx context.Context, spec protocol.JobSpec) error {
	if err := t.rep.Submit(spec); err != nil {
		if errors.Is(err, replica.ErrExists) {
			return fmt.Errorf("job %s exists", spec.Job)
		}
		return err
	}
	return t.res.PutJobSpec(ctx, spec)
}

func (t raftTable) end(_ context.Context, sum coordinator.Summary) error {
	return t.rep.Update(replica.Update{Job: sum.Job, Phase: sum.Phase, Err: sum.Err, Outputs: sum.Outputs})
}

func (t raftTable) phase(_ context.Context, job string) (string, error) {
	j, ok := t.rep.Job(job)
	if !ok {
		return "", errNoJob(job)
	}
	return j.Phase, nil
}

func (t raftTable) remove(ctx context.Context, job string) error {
	if err := t.rep.Delete(job); err != nil && !errors.Is(err, replica.ErrNoJob) {
		return err
	}
	return removeKeys(ctx, t.res, job)
}

func (t raftTable) unfinished(context.Context) ([]protocol.JobSpec, error) {
	var out []protocol.JobSpec
	for _, j := range t.rep.Jobs() {
		if !replica.Finished(j.Phase) {
			out = append(out, j.Spec)
		}
	}
	return out, nil
}
