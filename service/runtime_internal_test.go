package service

import (
	"context"
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
