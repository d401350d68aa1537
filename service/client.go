package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/protocol"
)

// requestTimeout bounds a request to the coordinator.
const requestTimeout = 10 * time.Second

// SubmitOptions are how a job is submitted.
type SubmitOptions struct {
	// ID is the job id; empty draws one.
	ID string
	// Shared refers to the model by its absolute path, which every worker and
	// the coordinator must see, instead of uploading it (MODEL.evid is uploaded
	// all the same).
	Shared bool
}

// submitReply answers a submission.
type submitReply struct {
	Job   string `json:"job,omitempty"`
	Error string `json:"error,omitempty"`
}

// Submit submits the windowed job s (its Output is not used: the coordinator
// keeps the outputs for Fetch) to the coordinator of the cluster at conn and
// returns its id. The model is read before the cluster is reached, so that bad
// input fails first.
func Submit(ctx context.Context, conn cluster.ConnOptions, s job.Spec, o SubmitOptions) (string, error) {
	if o.ID != "" {
		if err := protocol.ValidateSubmitted(o.ID); err != nil {
			return "", err
		}
	}
	spec, err := job.Wire(s)
	if err != nil {
		return "", err
	}
	if o.ID != "" {
		spec.Job = o.ID
	}
	res, err := dialStarting(ctx, conn, "partopt-submit")
	if err != nil {
		return "", err
	}
	defer res.Conn.Close()
	if o.Shared {
		abs, err := filepath.Abs(s.Model)
		if err != nil {
			return "", err
		}
		spec.Model = protocol.ModelRef{Path: abs}
	} else if spec.Model, err = UploadModel(ctx, res, spec.Job, s.Model); err != nil {
		return "", err
	}
	if ev, ok := uai.EvidencePathFor(s.Model); ok && !s.NoEvidence {
		if spec.Evidence, err = uploadFile(ctx, res, protocol.EvidenceObject(spec.Job), ev); err != nil {
			return "", err
		}
	}
	data, err := protocol.Marshal(spec)
	if err != nil {
		return "", err
	}
	msg, err := requestCoordinator(ctx, res, res.Names.SubjectSubmit(), data)
	if err != nil {
		return "", coordinatorError(err)
	}
	var reply submitReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return "", job.Internal(fmt.Errorf("coordinator reply %q: %w", msg.Data, err))
	}
	if reply.Error != "" {
		return "", errors.New(reply.Error)
	}
	return reply.Job, nil
}

// noCoordinatorWait is how long a request waits for a coordinator to subscribe:
// one that is starting, or a raft group electing a new leader.
const noCoordinatorWait = 15 * time.Second

// dialStarting is cluster.Dial that, while no service has created the
// cluster's resources yet (a coordinator starting beside the submit),
// tries again for up to noCoordinatorWait.
func dialStarting(ctx context.Context, conn cluster.ConnOptions, name string) (*cluster.Resources, error) {
	return whileStarting(ctx, cluster.ErrNoCluster, func() (*cluster.Resources, error) { return cluster.Dial(ctx, conn, name) })
}

// requestCoordinator sends a request to the coordinators, trying again while no
// coordinator listens (then nobody received it, so a retry cannot duplicate it),
// for up to noCoordinatorWait.
func requestCoordinator(ctx context.Context, res *cluster.Resources, subject string, data []byte) (*nats.Msg, error) {
	return whileStarting(ctx, nats.ErrNoResponders, func() (*nats.Msg, error) { return res.Conn.Request(subject, data, requestTimeout) })
}

// whileStarting calls try again every 250 ms while it fails with starting (a
// coordinator not there yet), for up to noCoordinatorWait or until ctx ends.
func whileStarting[T any](ctx context.Context, starting error, try func() (T, error)) (T, error) {
	deadline := time.Now().Add(noCoordinatorWait)
	for {
		v, err := try()
		if !errors.Is(err, starting) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// coordinatorError explains a failed request to the coordinator.
func coordinatorError(err error) error {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) {
		return fmt.Errorf("no coordinator answered (start one with partopt coordinator): %w", err)
	}
	return err
}

// Status asks the coordinator running the job for its status; without an
// answer it reads the last status the coordinator stored.
func Status(ctx context.Context, res *cluster.Resources, jobID string) (coordinator.Summary, error) {
	var s coordinator.Summary
	msg, err := res.Conn.Request(res.Names.StatusSubject(jobID), nil, 2*time.Second)
	if err == nil {
		return s, json.Unmarshal(msg.Data, &s)
	}
	e, kerr := res.Jobs.Get(ctx, protocol.JobStatusKey(jobID))
	if errors.Is(kerr, jetstream.ErrKeyNotFound) {
		if _, serr := res.Jobs.Get(ctx, protocol.JobSpecKey(jobID)); serr == nil {
			return s, fmt.Errorf("job %s is submitted but has no status yet", jobID)
		}
		return s, fmt.Errorf("no job %s", jobID)
	}
	if kerr != nil {
		return s, kerr
	}
	return s, json.Unmarshal(e.Value(), &s)
}

// Fetch downloads a finished job's outputs into dir and returns their names.
func Fetch(ctx context.Context, res *cluster.Resources, jobID, dir string) ([]string, error) {
	s, err := Status(ctx, res, jobID)
	if err != nil {
		return nil, err
	}
	switch {
	case s.Phase == "done" && len(s.Outputs) == 0:
		return nil, fmt.Errorf("nothing to fetch: %s", StatusLine(s))
	case s.Phase != "done":
		return nil, fmt.Errorf("nothing to fetch yet: %s", StatusLine(s))
	}
	// The status is data from the cluster: its job and output names are checked
	// before anything is written, so that no name reaches outside dir.
	if s.Job != jobID {
		return nil, fmt.Errorf("the status of job %s names job %q", jobID, s.Job)
	}
	for _, name := range s.Outputs {
		if err := job.ValidateOutputName(name); err != nil {
			return nil, fmt.Errorf("the status of job %s: %w", jobID, err)
		}
	}
	// All or nothing: the files are downloaded beside dir's and moved in once
	// all of them are.
	err = job.WriteAll(dir, func(stage string) error {
		for _, name := range s.Outputs {
			if err := res.GetFile(ctx, protocol.OutputObject(s.Job, name), filepath.Join(stage, name), -1); err != nil {
				return job.Internal(fmt.Errorf("downloading %s: %w", name, err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Outputs, nil
}

// Cancel asks the coordinator to cancel a running job.
func Cancel(ctx context.Context, res *cluster.Resources, jobID, reason string) error {
	if err := protocol.ValidateJob(jobID); err != nil {
		return err
	}
	s, err := Status(ctx, res, jobID)
	if err != nil {
		return err
	}
	if Ended(s.Phase) {
		return fmt.Errorf("job %s has ended: %s", s.Job, s.Phase)
	}
	data, err := protocol.Marshal(protocol.Cancel{Job: jobID, Reason: reason})
	if err != nil {
		return err
	}
	if _, err := requestCoordinator(ctx, res, res.Names.CancelSubject(jobID), data); err != nil {
		return coordinatorError(err)
	}
	// The coordinator ends the job as it takes the request: wait for that, so
	// that what follows a cancel (a delete, a new job of the same id) finds the
	// job ended.
	deadline := time.Now().Add(cancelWait)
	for {
		s, err := Status(ctx, res, jobID)
		switch {
		case err != nil:
			return err
		case s.Phase == coordinator.Canceled.String():
			return nil
		case Ended(s.Phase):
			return fmt.Errorf("job %s ended %s before the cancel took effect", jobID, s.Phase)
		case time.Now().After(deadline):
			return fmt.Errorf("job %s: cancel requested, but after %v it is still %s", jobID, cancelWait, s.Phase)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cancelWait is how long Cancel waits for the coordinator to end the job.
const cancelWait = 30 * time.Second

// Delete asks the coordinator to delete an ended job: its objects (model,
// outputs), what it left in the streams, its files in the coordinator's data
// directory and its entry in the job table. A running job is refused.
func Delete(ctx context.Context, res *cluster.Resources, jobID string) error {
	if err := protocol.ValidateJob(jobID); err != nil {
		return err
	}
	msg, err := requestCoordinator(ctx, res, res.Names.DeleteSubject(jobID), nil)
	if err != nil {
		return coordinatorError(err)
	}
	var r submitReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return fmt.Errorf("the coordinator's answer: %w", err)
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	return nil
}

// Jobs lists the jobs of the cluster with a stored status, oldest first: the
// statuses coordinators store as jobs run and end (a status that cannot be
// read is listed with phase "unknown" and the reason).
func Jobs(ctx context.Context, res *cluster.Resources) ([]coordinator.Summary, error) {
	var out []coordinator.Summary
	err := jobStatuses(ctx, res, func(job string, _ jetstream.KeyValueEntry, sum coordinator.Summary, err error) error {
		if err != nil {
			sum = coordinator.Summary{Status: coordinator.Status{Phase: "unknown", Err: err.Error()}}
		}
		sum.Job = job // the key's, not the stored value's
		out = append(out, sum)
		return nil
	})
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].Started.Equal(out[b].Started) {
			return out[a].Started.Before(out[b].Started)
		}
		return out[a].Job < out[b].Job
	})
	return out, err
}
