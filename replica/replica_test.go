package replica_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/replica"
)

// trio is three replicas on loopback with their directories.
type trio struct {
	t     *testing.T
	peers []replica.Peer
	dirs  []string
	nodes []*replica.Replica
	log   *slog.Logger // the replicas' (nil: none)
}

func newTrio(t *testing.T, log ...*slog.Logger) *trio {
	addrs := testutil.FreeAddrs(t, 3)
	tr := &trio{t: t, nodes: make([]*replica.Replica, 3)}
	if len(log) > 0 {
		tr.log = log[0]
	}
	for i, a := range addrs {
		tr.peers = append(tr.peers, replica.Peer{ID: fmt.Sprintf("c%d", i+1), Addr: a})
		tr.dirs = append(tr.dirs, t.TempDir())
	}
	for i := range 3 {
		tr.start(i)
	}
	t.Cleanup(func() {
		for _, n := range tr.nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	return tr
}

func (tr *trio) start(i int) {
	tr.t.Helper()
	log := tr.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n, err := replica.Open(replica.Config{ID: tr.peers[i].ID, Dir: tr.dirs[i], Bind: tr.peers[i].Addr, Peers: tr.peers, Bootstrap: true, Timeouts: replica.FastTimeouts, Log: log})
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.nodes[i] = n
}

func (tr *trio) stop(i int) {
	tr.nodes[i].Close()
	tr.nodes[i] = nil
}

// leader waits for a leader among the running replicas and returns its index.
func (tr *trio) leader() int {
	tr.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range tr.nodes {
			if n != nil && n.IsLeader() {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr.t.Fatal("no leader within 20 s")
	return -1
}

// eventually waits until replica i's table satisfies ok.
func (tr *trio) eventually(i int, ok func([]replica.Job) bool) {
	tr.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok(tr.nodes[i].Jobs()) {
		if time.Now().After(deadline) {
			tr.t.Fatalf("replica %d: table %+v", i, tr.nodes[i].Jobs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func spec(job string) protocol.JobSpec {
	return protocol.JobSpec{Job: job, Model: protocol.ModelRef{Path: "/m.grid"}, Width: 8, Height: 8, Labels: 2,
		Core: 4, Halo: 1, MaxRounds: 1, Variant: protocol.VariantInvariant}
}

func phaseOf(job, phase string) func([]replica.Job) bool {
	return func(jobs []replica.Job) bool {
		for _, j := range jobs {
			if j.Spec.Job == job {
				return j.Phase == phase
			}
		}
		return false
	}
}

// TestJobTableSurvivesLeaderLossAndRestarts: the table is replicated; after the
// leader dies another replica leads with the whole table; a replica that was
// down catches up; and after every replica stops and starts again from its
// directory the table is intact.
func TestJobTableSurvivesLeaderLossAndRestarts(t *testing.T) {
	tr := newTrio(t)
	l := tr.leader()
	if err := tr.nodes[l].Submit(spec("a")); err != nil {
		t.Fatal(err)
	}
	if err := tr.nodes[l].Submit(spec("a")); !errors.Is(err, replica.ErrExists) {
		t.Fatalf("second submit of a: %v", err)
	}
	if err := tr.nodes[l].Update(replica.Update{Job: "nope", Phase: replica.PhaseDone}); !errors.Is(err, replica.ErrNoJob) {
		t.Fatalf("update of an unknown job: %v", err)
	}
	follower := (l + 1) % 3
	if err := tr.nodes[follower].Submit(spec("b")); !errors.Is(err, replica.ErrNotLeader) {
		t.Fatalf("submit on a follower: %v", err)
	}
	tr.eventually(follower, phaseOf("a", replica.PhaseSubmitted))

	// The leader dies: another leads, with job a; it takes more jobs.
	tr.stop(l)
	l2 := tr.leader()
	if l2 == l {
		t.Fatal("the stopped replica leads")
	}
	if err := tr.nodes[l2].Barrier(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.nodes[l2].Job("a"); !ok {
		t.Fatal("the new leader lost job a")
	}
	if err := tr.nodes[l2].Update(replica.Update{Job: "a", Phase: replica.PhaseDone, Outputs: []string{"labels.plf"}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.nodes[l2].Submit(spec("b")); err != nil {
		t.Fatal(err)
	}
	// A finished job stays as it ended.
	if err := tr.nodes[l2].Update(replica.Update{Job: "a", Phase: replica.PhaseRunning}); err != nil {
		t.Fatal(err)
	}

	// The old leader comes back from its directory and catches up.
	tr.start(l)
	tr.eventually(l, func(jobs []replica.Job) bool {
		return len(jobs) == 2 && jobs[0].Phase == replica.PhaseDone && jobs[0].Outputs[0] == "labels.plf" && jobs[1].Phase == replica.PhaseSubmitted
	})

	// Everything stops and starts again.
	for i := range 3 {
		tr.stop(i)
	}
	for i := range 3 {
		tr.start(i)
	}
	l3 := tr.leader()
	if err := tr.nodes[l3].Barrier(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if jobs := tr.nodes[l3].Jobs(); len(jobs) != 2 || jobs[0].Phase != replica.PhaseDone || jobs[1].Spec.Core != 4 {
		t.Fatalf("table after a full restart: %+v", jobs)
	}
}

// TestSnapshotRestoresTheTable: many updates compact the log into a snapshot; a
// replica that starts empty receives the table through it.
func TestSnapshotRestoresTheTable(t *testing.T) {
	tr := newTrio(t)
	l := tr.leader()
	late := (l + 1) % 3
	tr.stop(late)
	// Wipe the late replica: it must catch up from a snapshot or the log.
	tr.dirs[late] = t.TempDir()
	pageBy := tr.peers[l].ID
	if err := tr.nodes[l].SetPage("http://page"); err != nil { // compacted into the snapshot too
		t.Fatal(err)
	}
	for i := range 1500 { // beyond the snapshot threshold of 1024 entries
		job := fmt.Sprintf("j%d", i%50)
		// On a loaded machine the two live replicas may swap leadership mid-run
		// (a missed heartbeat): the write goes again to the new leader. A write
		// whose leadership was lost may have committed, hence ErrExists is fine
		// on a retried Submit (updates are idempotent).
		for attempt := 0; ; attempt++ {
			var err error
			if i < 50 {
				err = tr.nodes[l].Submit(spec(job))
				if attempt > 0 && errors.Is(err, replica.ErrExists) {
					err = nil
				}
			} else {
				err = tr.nodes[l].Update(replica.Update{Job: job, Phase: replica.PhaseRunning, Err: fmt.Sprint(i)})
			}
			if err == nil {
				break
			}
			if !errors.Is(err, replica.ErrNotLeader) || attempt == 20 {
				t.Fatal(err)
			}
			l = tr.leader()
		}
	}
	waitSnapshot(t, tr.dirs[l]) // the leader compacts its log
	tr.start(late)
	tr.eventually(late, func(jobs []replica.Job) bool {
		return len(jobs) == 50 && jobs[0].Spec.Job == "j0" && jobs[0].Err == "1450"
	})
	waitSnapshot(t, tr.dirs[late]) // the late replica was sent the snapshot
	if tr.nodes[late].Leader() == pageBy && tr.nodes[late].LeaderPage() != "http://page" {
		t.Errorf("the restored replica lost the leader's page: %q", tr.nodes[late].LeaderPage())
	}
}

// waitSnapshot waits until dir holds a raft snapshot.
func waitSnapshot(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin")); len(m) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot in %s", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeleteRemovesOnlyFinishedJobs: a finished job leaves every replica's
// table when deleted; a running one stays, with ErrRunning, and an unknown one
// is ErrNoJob.
func TestDeleteRemovesOnlyFinishedJobs(t *testing.T) {
	tr := newTrio(t)
	l := tr.leader()
	for _, job := range []string{"ended", "running"} {
		if err := tr.nodes[l].Submit(spec(job)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.nodes[l].Update(replica.Update{Job: "ended", Phase: replica.PhaseCanceled}); err != nil {
		t.Fatal(err)
	}
	if err := tr.nodes[l].Update(replica.Update{Job: "running", Phase: replica.PhaseRunning}); err != nil {
		t.Fatal(err)
	}
	if err := tr.nodes[l].Delete("running"); !errors.Is(err, replica.ErrRunning) {
		t.Errorf("delete of a running job: %v", err)
	}
	if err := tr.nodes[l].Delete("nothing"); !errors.Is(err, replica.ErrNoJob) {
		t.Errorf("delete of an unknown job: %v", err)
	}
	if err := tr.nodes[l].Delete("ended"); err != nil {
		t.Fatal(err)
	}
	for i := range tr.nodes {
		tr.eventually(i, func(jobs []replica.Job) bool { return len(jobs) == 1 && jobs[0].Spec.Job == "running" })
	}
}

// TestLeaderPageIsReplicated: the page URL a leader records reaches every
// replica, where LeaderPage names it while that replica leads.
func TestLeaderPageIsReplicated(t *testing.T) {
	tr := newTrio(t)
	l := tr.leader()
	if err := tr.nodes[l].SetPage("http://c.example:8222"); err != nil {
		t.Fatal(err)
	}
	for i, n := range tr.nodes {
		deadline := time.Now().Add(20 * time.Second)
		for n.LeaderPage() != "http://c.example:8222" {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: leader page %q", i, n.LeaderPage())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := tr.nodes[(l+1)%3].SetPage("http://other"); !errors.Is(err, replica.ErrNotLeader) {
		t.Errorf("a follower recorded a page: %v", err)
	}
}

// TestRaftLogsThroughTheReplicasLogger: raft's own events (an election) are
// events of the replica's slog logger, in its format (JSON here), marked
// component raft, not lines of another format.
func TestRaftLogsThroughTheReplicasLogger(t *testing.T) {
	var buf testutil.SyncBuffer
	tr := newTrio(t, slog.New(slog.NewJSONHandler(&buf, nil)))
	tr.leader()
	out := buf.String()
	leading := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if ev["component"] != "raft" || ev["level"] == nil || ev["msg"] == nil {
			t.Errorf("not a raft event of the replica's logger: %q", line)
		}
		leading = leading || strings.Contains(fmt.Sprint(ev["msg"]), "entering leader state")
	}
	if !leading {
		t.Errorf("no election logged:\n%s", out)
	}
}
