package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/protocol"
)

// TestStatusSaysWhenNoCoordinatorRunsAJob: with every coordinator dead, a job
// whose stored status says merging is no longer shown as simply running:
// status and jobs say no coordinator has updated it, status --wait says so
// off a terminal and --timeout ends the wait (exit 2) instead of waiting for
// ever.
func TestStatusSaysWhenNoCoordinatorRunsAJob(t *testing.T) {
	c := newCommands(t) // a NATS server, no coordinator
	nc, err := cluster.Connect(cluster.ConnOptions{URL: c.url}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	res, err := cluster.Open(ctx, nc, cluster.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for id, updated := range map[string]time.Time{"orphan": time.Now().Add(-2 * time.Minute), "fresh": time.Now().Add(time.Hour)} {
		sum := coordinator.Summary{Status: coordinator.Status{Job: id, Phase: "merging", Windows: 64, Merged: 12, Pixels: 1024, Proven: 100},
			Started: time.Now().Add(-3 * time.Minute), Updated: updated}
		data, _ := json.Marshal(sum)
		if _, err := res.Jobs.Put(ctx, protocol.JobStatusKey(id), data); err != nil {
			t.Fatal(err)
		}
	}
	nats := []string{"--nats", c.url}
	if code, stdout, _ := partopt(append([]string{"status", "orphan"}, nats...)...); code != 0 || !strings.Contains(stdout, "no coordinator has updated it for 2m") {
		t.Errorf("status of a job no coordinator runs: exit %d: %s", code, stdout)
	}
	if code, stdout, _ := partopt(append([]string{"status", "fresh"}, nats...)...); code != 0 || strings.Contains(stdout, "no coordinator") {
		t.Errorf("status of a job updated now: exit %d: %s", code, stdout)
	}
	code, stdout, _ := partopt(append([]string{"jobs"}, nats...)...)
	var orphan, fresh string
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "orphan"):
			orphan = line
		case strings.HasPrefix(line, "fresh"):
			fresh = line
		}
	}
	if code != 0 || !strings.Contains(orphan, "merging (no coordinator?)") || strings.Contains(fresh, "no coordinator") {
		t.Errorf("jobs: exit %d:\n%s", code, stdout)
	}
	start := time.Now()
	code, _, stderr := partopt(append([]string{"status", "--wait", "--timeout", "1500ms", "orphan"}, nats...)...)
	if code != exitBadInput || !strings.Contains(stderr, "no coordinator is updating the job") || !strings.Contains(stderr, "has not ended within --timeout 1.5s") {
		t.Errorf("status --wait --timeout of a job no coordinator runs: exit %d after %v:\n%s", code, time.Since(start), stderr)
	}
}
