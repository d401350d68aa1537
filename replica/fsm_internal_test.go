package replica

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/partopt/partopt/protocol"
	"github.com/vmihailenco/msgpack/v5"
)

// sink is a raft.SnapshotSink into a buffer.
type sink struct{ bytes.Buffer }

func (*sink) ID() string    { return "test" }
func (*sink) Cancel() error { return nil }
func (*sink) Close() error  { return nil }

func apply(t *testing.T, f *fsm, c command) {
	t.Helper()
	data, err := msgpack.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := f.Apply(&raft.Log{Data: data}).(error); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotKeepsJobsAndPages: a snapshot restores the table and the
// replicas' pages; a snapshot written before pages existed restores its jobs.
func TestSnapshotKeepsJobsAndPages(t *testing.T) {
	f := &fsm{jobs: map[string]*Job{}, pages: map[string]string{}}
	spec := protocol.JobSpec{Job: "j", Model: protocol.ModelRef{Path: "/m.grid"}, Width: 8, Height: 8, Labels: 2, Core: 4, Halo: 1, MaxRounds: 1, Variant: protocol.VariantInvariant}
	apply(t, f, command{Submit: &spec})
	apply(t, f, command{Page: &Page{ID: "c2", URL: "http://c2:8222"}})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s sink
	if err := snap.Persist(&s); err != nil {
		t.Fatal(err)
	}
	g := &fsm{}
	if err := g.Restore(io.NopCloser(bytes.NewReader(s.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.list(), f.list()) || g.pages["c2"] != "http://c2:8222" {
		t.Errorf("restored %+v %v, want %+v %v", g.list(), g.pages, f.list(), f.pages)
	}
	old, _ := msgpack.Marshal(f.list()) // jobs alone
	h := &fsm{}
	if err := h.Restore(io.NopCloser(bytes.NewReader(old))); err != nil || len(h.list()) != 1 || len(h.pages) != 0 {
		t.Errorf("an old snapshot: %v, %+v, %v", err, h.list(), h.pages)
	}
}

// TestPagesAreStatusPageURLs: a page entry whose URL is not a status page's
// (what only an intruder on a raft port could append) changes nothing.
func TestPagesAreStatusPageURLs(t *testing.T) {
	f := &fsm{jobs: map[string]*Job{}, pages: map[string]string{}}
	apply(t, f, command{Page: &Page{ID: "c1", URL: "http://c1:8222"}})
	for _, bad := range []string{"http://169.254.169.254/latest/meta-data", "file:///etc/passwd", "http://u:p@c1:8222"} {
		data, err := msgpack.Marshal(command{Page: &Page{ID: "c1", URL: bad}})
		if err != nil {
			t.Fatal(err)
		}
		if err, _ := f.Apply(&raft.Log{Data: data}).(error); err == nil {
			t.Errorf("page %q recorded", bad)
		}
	}
	if f.pages["c1"] != "http://c1:8222" {
		t.Errorf("pages %v", f.pages)
	}
}
