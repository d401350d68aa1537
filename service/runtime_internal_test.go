package service

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/protocol"
)

// TestRunStateIsResumedOnlyByItsOwnJob: a run state resumes the stage whose
// stored spec is this one's (its creation time carried over); a stored spec
// of other options, of another protocol version or damaged is refused with a
// message saying what to do, never taken over as a fresh start.
func TestRunStateIsResumedOnlyByItsOwnJob(t *testing.T) {
	dir := t.TempDir()
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	nc, err := cluster.Connect(cluster.ConnOptions{Server: srv}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	res, err := cluster.Open(ctx, nc, cluster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	stored := protocol.JobSpec{Job: "run-0", Model: protocol.ModelRef{Path: "/data/m.grid"}, Width: 64, Height: 48, Labels: 4, Core: 16, Halo: 4,
		MaxRounds: 8, Variant: protocol.VariantInvariant, CreatedAt: created}
	put := func(data []byte) {
		if _, err := res.Jobs.Put(ctx, protocol.JobSpecKey("run-0"), data); err != nil {
			t.Fatal(err)
		}
	}
	e := &Embedded{State: dir}
	fresh := stored
	fresh.CreatedAt = time.Now()
	if resume, err := e.resumable(ctx, res, &fresh); err != nil || resume {
		t.Fatalf("nothing stored: resume %v, %v; want a fresh start", resume, err)
	}
	data, err := protocol.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	put(data)
	same := fresh
	if resume, err := e.resumable(ctx, res, &same); err != nil || !resume || !same.CreatedAt.Equal(created) {
		t.Fatalf("its own job stored: resume %v, %v, created %v; want a resume created %v", resume, err, same.CreatedAt, created)
	}
	other := fresh
	other.Core = 24
	older := append([]byte(nil), data...)
	older[5] = byte(protocol.Version - 1) // the header's version (big-endian uint16 after the magic)
	for name, c := range map[string]struct {
		stored []byte
		spec   protocol.JobSpec
		want   string
	}{
		"other options":   {data, other, "another job"},
		"another version": {older, fresh, "cannot be resumed by this partopt"},
		"damaged":         {data[:len(data)/2], fresh, "cannot be resumed by this partopt"},
	} {
		put(c.stored)
		spec := c.spec
		if resume, err := e.resumable(ctx, res, &spec); err == nil || resume || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: resume %v, %v; want an error naming %s and containing %q", name, resume, err, dir, c.want)
		}
	}
}

// TestRunStateKeepsItsModel: a run state records its model file; the same file
// resumes, the file rewritten (other bytes, or the same size rewritten later)
// is refused with what to do, and so is a damaged record.
func TestRunStateKeepsItsModel(t *testing.T) {
	state, dir := t.TempDir(), t.TempDir()
	model := filepath.Join(dir, "m.grid")
	if err := os.WriteFile(model, []byte("model bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &Embedded{State: state}
	for range 2 {
		if err := e.sameModel(model); err != nil {
			t.Fatalf("the model the state was made for: %v", err)
		}
	}
	later := time.Now().Add(time.Hour)
	for name, change := range map[string]func() error{
		"other bytes":         func() error { return os.WriteFile(model, []byte("other model bytes"), 0o644) },
		"rewritten same size": func() error { return os.Chtimes(model, later, later) },
	} {
		if err := os.WriteFile(model, []byte("model bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(state, stateModel))
		if err := e.sameModel(model); err != nil {
			t.Fatal(err)
		}
		if err := change(); err != nil {
			t.Fatal(err)
		}
		if err := e.sameModel(model); err == nil || !strings.Contains(err.Error(), "was made for the model") || !strings.Contains(err.Error(), "remove the state") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(state, stateModel), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.sameModel(model); err == nil || !strings.Contains(err.Error(), stateModel) {
		t.Errorf("a damaged record: %v, want an error naming %s", err, stateModel)
	}
}

// TestJoinHintNamesAReachableServer: the worker command run prints for other
// machines names this host where the server listens on every address, and
// keeps any other address as it is.
func TestJoinHintNamesAReachableServer(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	for in, want := range map[string]string{
		"nats://0.0.0.0:4222":   "nats://" + net.JoinHostPort(host, "4222"),
		"nats://[::]:4222":      "nats://" + net.JoinHostPort(host, "4222"),
		"nats://10.0.0.7:4222":  "nats://10.0.0.7:4222",
		"nats://127.0.0.1:4222": "nats://127.0.0.1:4222",
	} {
		if got := reachableURL(in); got != want {
			t.Errorf("reachableURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// oneUnfinished is a job table that lists one unfinished job.
type oneUnfinished struct {
	jobTable
	spec protocol.JobSpec
}

func (t oneUnfinished) unfinished(context.Context) ([]protocol.JobSpec, error) {
	return []protocol.JobSpec{t.spec}, nil
}

// TestResumeLeavesARunningJobToItsRun: a job that this coordinator already
// runs when it lists the jobs to resume (submitted meanwhile: submit
// registers a job before it stores it) is not started a second time. Two runs
// of one job on one leader left it unfinished (the coordinator-restart test
// hung about once in 150 runs).
func TestResumeLeavesARunningJobToItsRun(t *testing.T) {
	spec := protocol.JobSpec{Job: "both"}
	running := newServiceJob(func() {})
	// No resources: a second run would fail at once, on its own goroutine.
	s := &service{table: oneUnfinished{spec: spec}, log: slog.New(slog.DiscardHandler), jobs: map[string]*serviceJob{spec.Job: running}}
	s.resumeAll(context.Background())
	s.wg.Wait()
	if len(s.jobs) != 1 || s.jobs[spec.Job] != running {
		t.Fatalf("the running job's entry was replaced: %v", s.jobs)
	}
}
