package service_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/service"
	"github.com/partopt/partopt/worker"
)

const (
	denoise = "../testdata/denoise32.uai.gz" // a 32×32 raster
	network = "../testdata/network-evid.uai" // higher order, with evidence
)

// sameOutputs says whether dirs a and b hold the same files with the same bytes,
// report.json (timings, runtime) aside.
func sameOutputs(t *testing.T, a, b string) {
	t.Helper()
	entries, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	others, _ := os.ReadDir(b)
	if len(entries) != len(others) {
		t.Fatalf("%s has %d files, %s %d", a, len(entries), b, len(others))
	}
	for _, e := range entries {
		if e.Name() == job.ReportFile {
			continue
		}
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs (%v)", e.Name(), err)
		}
	}
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// TestEmbeddedWritesWhatThisProcessWrites: the windows of a job sent through an
// embedded NATS server and in-process workers give the outputs of the job
// solved in this process, for a raster and for a higher-order model with
// evidence (BFS regions).
func TestEmbeddedWritesWhatThisProcessWrites(t *testing.T) {
	for _, s := range []job.Spec{{Model: denoise, Method: job.PBP, Window: 16, Halo: 8}, {Model: network, Method: job.PBP, Window: 20}} {
		t.Run(filepath.Base(s.Model), func(t *testing.T) {
			here, there := t.TempDir(), t.TempDir()
			s.Output, s.Workers = here, 2
			if _, err := job.Run(context.Background(), s, job.Options{}); err != nil {
				t.Fatal(err)
			}
			s.Output = there
			res, err := job.Run(context.Background(), s, job.Options{Runtime: &service.Embedded{Workers: 2, Log: quiet()}})
			if err != nil {
				t.Fatal(err)
			}
			sameOutputs(t, here, there)
			if rep := res.Report.(*job.WindowsReport); rep.Runtime != job.RuntimeEmbedded || len(rep.WorkersSeen) == 0 || rep.Workers != len(rep.WorkersSeen) || len(rep.LostWindows) != 0 {
				t.Errorf("report runtime %q, workers %d seen %v, lost %v", rep.Runtime, rep.Workers, rep.WorkersSeen, rep.LostWindows)
			}
		})
	}
}

// TestCoordinatorServiceRunsSubmittedJobs: a coordinator service and a worker
// on a NATS server, without any command line: a submitted job runs to its end,
// its fetched outputs are those of the job solved here by windows (solve
// --window), for every method — pbp, iri and the default, pbp+iri — and the
// clients' errors are clear.
func TestCoordinatorServiceRunsSubmittedJobs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := listeningServer(t)
	conn := cluster.ConnOptions{URL: srv.URL()}
	res, served, _ := startCluster(ctx, t, conn)
	client, err := cluster.Dial(ctx, conn, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Conn.Close()
	blocks := blocksModel(t) // pbp leaves labels to eliminate: pbp+iri's second stage works
	var specs []job.Spec
	for _, m := range []job.Method{job.PBP, job.IRI, ""} {
		specs = append(specs, job.Spec{Model: denoise, Method: m, Window: 16, Halo: 8}, job.Spec{Model: network, Method: m, Window: 20},
			job.Spec{Model: blocks, Method: m, Window: 8, Halo: 2})
	}
	for _, s := range specs {
		here := t.TempDir()
		s.Output = here
		if _, err := job.Run(ctx, s, job.Options{}); err != nil {
			t.Fatal(err)
		}
		id, err := service.Submit(ctx, conn, s, service.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fetched := fetchDone(ctx, t, client, id)
		sameOutputs(t, here, fetched)
		// The report says where it comes from: the model as submitted (not the
		// coordinator's copy), its digest, the cluster and the workers seen.
		var rep struct {
			Method      string   `json:"method"`
			Eliminated  *int64   `json:"eliminated_labels"`
			PBP         *int64   `json:"pbp_persistent_variables"`
			Persistent  int64    `json:"persistent_variables"`
			Model       string   `json:"model"`
			Runtime     string   `json:"runtime"`
			Workers     int      `json:"workers"`
			WorkersSeen []string `json:"workers_seen"`
			Version     string   `json:"partopt_version"`
			Bytes       int64    `json:"model_bytes"`
			SHA256      string   `json:"model_sha256"`
		}
		data, err := os.ReadFile(filepath.Join(fetched, job.ReportFile))
		if err == nil {
			err = json.Unmarshal(data, &rep)
		}
		model, _ := os.ReadFile(s.Model)
		digest := sha256.Sum256(model)
		if err != nil || rep.Model != filepath.Base(s.Model) || rep.Runtime != job.RuntimeCluster || rep.Workers != 1 ||
			!slices.Equal(rep.WorkersSeen, []string{"w-"}) || rep.Version == "" || rep.Bytes != int64(len(model)) || rep.SHA256 != hex.EncodeToString(digest[:]) {
			t.Errorf("job %s's report: %+v, %v", id, rep, err)
		}
		if s.Model == blocks && s.Method == "" && (rep.Method != string(job.PBPIRI) || rep.Eliminated == nil || *rep.Eliminated == 0 || rep.PBP == nil || *rep.PBP >= rep.Persistent) {
			t.Errorf("job %s (pbp+iri) on %s: method %q, eliminated %v labels, pbp proved %v of %d: the elimination stage did not run", id, s.Model, rep.Method, rep.Eliminated, rep.PBP, rep.Persistent)
		}
		if _, err := res.Objects.GetInfo(ctx, protocol.ModelObject(id)); err == nil {
			t.Errorf("job %s ended, its uploaded model is left in the object store", id)
		}
		if err := service.Cancel(ctx, client, id, "test"); err == nil || !strings.Contains(err.Error(), "has ended") {
			t.Errorf("cancel of a done job: %v", err)
		}
		if _, err := service.Submit(ctx, conn, s, service.SubmitOptions{ID: id}); err == nil || !strings.Contains(err.Error(), "exists") {
			t.Errorf("a second job %s: %v", id, err)
		}
	}
	if _, err := service.Status(ctx, client, "no-such-job"); err == nil || !strings.Contains(err.Error(), "no job") {
		t.Errorf("status of an unknown job: %v", err)
	}
	if _, err := service.Fetch(ctx, client, "no-such-job", t.TempDir()); err == nil {
		t.Error("fetch of an unknown job succeeded")
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// blocksModel writes gen's blocks image segmented into 4 colours (λ 3) as a
// UAI model, a raster on which pbp leaves labels for label elimination.
func blocksModel(t *testing.T) string {
	t.Helper()
	img, err := gen.LoadImage("../gen/testdata/blocks.png")
	if err != nil {
		t.Fatal(err)
	}
	src, err := gen.Segmentation(img, 4, gen.SegOptions{Lambda: 3})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "blocks.uai")
	if err := gen.WriteFile(path, src, gen.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// startCluster starts a coordinator and, unless noWorker, a worker of conn's
// namespace on its server, which run until ctx ends; served reports the
// coordinator's end.
func startCluster(ctx context.Context, t *testing.T, conn cluster.ConnOptions, noWorker ...bool) (res *cluster.Resources, served chan error, stats *worker.Stats) {
	t.Helper()
	res = dialService(ctx, t, conn, "test-coordinator")
	served = make(chan error, 1)
	go func() { served <- service.Serve(ctx, service.Config{Res: res, Data: t.TempDir(), Log: quiet()}) }()
	stats = new(worker.Stats)
	if len(noWorker) > 0 && noWorker[0] {
		return res, served, stats
	}
	wres := dialService(ctx, t, conn, "test-worker")
	go worker.Serve(ctx, wres, worker.Options{ID: "w-" + conn.Namespace, Slots: 2, CacheDir: t.TempDir(), Log: quiet()}, stats)
	return res, served, stats
}

// dialService connects a coordinator's or worker's resources to conn's
// server with the tests' configuration (2 s ack wait, memory storage), closed
// when the test ends.
func dialService(ctx context.Context, t *testing.T, conn cluster.ConnOptions, name string) *cluster.Resources {
	t.Helper()
	cfg := cluster.DefaultConfig()
	cfg.AckWait, cfg.Memory = 2*time.Second, true
	res, err := cluster.DialService(ctx, conn, cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(res.Conn.Close)
	return res
}

// fetchDone waits (up to 2 minutes) for job id to end done and fetches its
// outputs into a new directory.
func fetchDone(ctx context.Context, t *testing.T, client *cluster.Resources, id string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sum, err := service.Status(ctx, client, id)
		if err == nil && service.Ended(sum.Phase) {
			if sum.Phase != "done" || len(sum.Outputs) == 0 {
				t.Fatalf("job %s ended %s: %s", id, sum.Phase, service.StatusLine(sum))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: no end within 2 minutes: %v %v", id, service.StatusLine(sum), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fetched := t.TempDir()
	if _, err := service.Fetch(ctx, client, id, fetched); err != nil {
		t.Fatal(err)
	}
	return fetched
}

// TestNamespacesRunSideBySideOnOneServer: two clusters of different
// namespaces on one NATS server, each given a job of the same id on another
// model, each get exactly their own job's results, from their own workers; a
// namespace without services has no cluster.
func TestNamespacesRunSideBySideOnOneServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := listeningServer(t)
	specs := map[string]job.Spec{
		"team-a": {Model: denoise, Method: job.PBP, Window: 16, Halo: 8},
		"team-b": {Model: network, Method: job.PBP, Window: 20},
	}
	stats := map[string]*worker.Stats{}
	for ns := range specs {
		_, _, stats[ns] = startCluster(ctx, t, cluster.ConnOptions{URL: srv.URL(), Namespace: ns})
	}
	ids := map[string]string{}
	for ns, s := range specs {
		id, err := service.Submit(ctx, cluster.ConnOptions{URL: srv.URL(), Namespace: ns}, s, service.SubmitOptions{ID: "same-id"})
		if err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
		ids[ns] = id
	}
	for ns, s := range specs {
		here := t.TempDir()
		s.Output = here
		if _, err := job.Run(ctx, s, job.Options{}); err != nil {
			t.Fatal(err)
		}
		client, err := cluster.Dial(ctx, cluster.ConnOptions{URL: srv.URL(), Namespace: ns}, "test-client")
		if err != nil {
			t.Fatal(err)
		}
		defer client.Conn.Close()
		sameOutputs(t, here, fetchDone(ctx, t, client, ids[ns]))
		if n := stats[ns].Solved.Load(); n == 0 {
			t.Errorf("%s's worker solved no task", ns)
		}
	}
	if _, err := cluster.Dial(ctx, cluster.ConnOptions{URL: srv.URL()}, "test-client"); !errors.Is(err, cluster.ErrNoCluster) {
		t.Errorf("the default namespace, where no service runs: %v", err)
	}
	if _, err := cluster.Dial(ctx, cluster.ConnOptions{URL: srv.URL(), Namespace: "Team-A"}, "test-client"); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("an invalid namespace: %v", err)
	}
}

// TestJobLifecycle: jobs lists the cluster's jobs with their phases; delete
// refuses a running job, and removes an ended one entirely — its objects
// (outputs), its status and spec — so that status no longer knows it, jobs no
// longer lists it and its id is free again.
func TestJobLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := listeningServer(t)
	conn := cluster.ConnOptions{URL: srv.URL()}
	res, _, _ := startCluster(ctx, t, conn, true) // no worker yet: the jobs stay running
	client, err := cluster.Dial(ctx, conn, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Conn.Close()
	s := job.Spec{Model: denoise, Method: job.PBP, Window: 16, Halo: 8}
	for _, id := range []string{"first", "second"} {
		if _, err := service.Submit(ctx, conn, s, service.SubmitOptions{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := service.Jobs(ctx, client)
	if err != nil || len(jobs) != 2 || jobs[0].Job != "first" || jobs[1].Job != "second" || service.Ended(jobs[0].Phase) {
		t.Fatalf("jobs: %+v, %v", jobs, err)
	}
	if err := service.Delete(ctx, client, "first"); err == nil || !strings.Contains(err.Error(), "cancel it first") {
		t.Errorf("delete of a running job: %v", err)
	}
	if err := service.Cancel(ctx, client, "first", "test"); err != nil {
		t.Fatal(err)
	}
	for sum, err := service.Status(ctx, client, "first"); sum.Phase != "canceled"; sum, err = service.Status(ctx, client, "first") {
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := service.Delete(ctx, client, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := service.Status(ctx, client, "first"); err == nil || !strings.Contains(err.Error(), "no job") {
		t.Errorf("status of a deleted job: %v", err)
	}
	if err := service.Delete(ctx, client, "first"); err == nil || !strings.Contains(err.Error(), "no job") {
		t.Errorf("a second delete: %v", err)
	}

	// A worker finishes the other job: its outputs go with it.
	wres := dialService(ctx, t, conn, "test-worker")
	go worker.Serve(ctx, wres, worker.Options{ID: "w", Slots: 2, CacheDir: t.TempDir(), Log: quiet()}, nil)
	fetchDone(ctx, t, client, "second")
	objects := func(id string) (n int) {
		infos, _ := res.Objects.List(ctx)
		for _, o := range infos {
			if strings.HasPrefix(o.Name, id+"/") {
				n++
			}
		}
		return n
	}
	if objects("second") == 0 {
		t.Fatal("the done job has no object: the test tests nothing")
	}
	if _, err := service.Submit(ctx, conn, s, service.SubmitOptions{ID: "first"}); err != nil {
		t.Errorf("submitting the deleted job's id again: %v", err)
	}
	if err := service.Delete(ctx, client, "second"); err != nil {
		t.Fatal(err)
	}
	if n := objects("second"); n != 0 {
		t.Errorf("%d objects of the deleted job are left", n)
	}
	jobs, err = service.Jobs(ctx, client)
	if err != nil || len(jobs) != 1 || jobs[0].Job != "first" {
		t.Errorf("jobs after the deletes: %+v, %v", jobs, err)
	}
}

// TestStatusLineSaysWhatAJobProved: a job's one-line status counts its persistent
// variables, and for label elimination the labels eliminated and the windows'
// level; while it runs it names the windows' method (a pbp+iri job's stage).
func TestStatusLineSaysWhatAJobProved(t *testing.T) {
	st := coordinator.Status{Job: "j", Layout: "graph", Phase: "running", Round: 2, Rounds: 2, Windows: 8, Merged: 3, Proven: 30, Pixels: 120}
	line := service.StatusLine(coordinator.Summary{Status: st})
	if !strings.Contains(line, "persistent 25.0% of 120 variables") || strings.Contains(line, "eliminated") {
		t.Errorf("pbp: %q", line)
	}
	st.Eliminated, st.Level, st.Method = 512, 1, "iri"
	line = service.StatusLine(coordinator.Summary{Status: st})
	if !strings.Contains(line, "j: iri running,") || !strings.Contains(line, "persistent 25.0% of 120 variables, 512 labels eliminated (window level 1)") {
		t.Errorf("iri: %q", line)
	}
	st.Phase = "done"
	if line = service.StatusLine(coordinator.Summary{Status: st}); !strings.HasPrefix(line, "job j: done,") {
		t.Errorf("done: %q", line)
	}
}

// TestEmbeddedServesEachJobsStatusPage: pbp+iri through the embedded runtime is
// two jobs, a pbp one and an iri one; each serves the status page at the same
// --http address, the first releasing it when it ends, and the outputs are
// those of the job solved here.
func TestEmbeddedServesEachJobsStatusPage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	here, there := t.TempDir(), t.TempDir()
	s := job.Spec{Model: denoise, Window: 12, Halo: 4, Output: here} // pbp leaves pixels to the elimination
	if _, err := job.Run(context.Background(), s, job.Options{}); err != nil {
		t.Fatal(err)
	}
	var notes []string
	s.Output = there
	res, err := job.Run(context.Background(), s, job.Options{Runtime: &service.Embedded{Workers: 2, HTTP: addr, Log: quiet(),
		Note: func(n string) { notes = append(notes, n) }}})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report.(*job.WindowsReport)
	if rep.Method != string(job.PBPIRI) || rep.PBPPersistentVariables == nil || *rep.PBPPersistentVariables >= rep.PersistentVariables {
		t.Fatalf("report %+v: the elimination did not run", rep)
	}
	pages := 0
	for _, n := range notes {
		if strings.Contains(n, "status page at http://"+addr) {
			pages++
		}
	}
	if pages != 2 {
		t.Errorf("%d status pages served at %s: %q", pages, addr, notes)
	}
	sameOutputs(t, here, there)
}

// TestFetchRefusesForgedOutputNames: a job's status is data anyone on the cluster
// can write; fetch checks its job and output names before it writes anything, so
// a forged "../" name never reaches outside the output directory.
func TestFetchRefusesForgedOutputNames(t *testing.T) {
	ctx := context.Background()
	res := embeddedResources(t, "test-client")
	root := t.TempDir()
	dir := filepath.Join(root, "a", "out")
	for _, c := range []struct {
		job     string
		outputs []string
		want    string
	}{
		{"forged", []string{job.ReportFile, "../../escape.txt"}, "not the name of an output file"},
		{"forged", []string{"/etc/passwd"}, "not the name of an output file"},
		{"forged", []string{"alive.01.plf"}, "not the name of an output file"},
		{"other", []string{job.ReportFile}, "names job"},
	} {
		var s coordinator.Summary
		s.Job, s.Phase, s.Outputs = c.job, "done", c.outputs
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := res.Jobs.Put(ctx, protocol.JobStatusKey("forged"), data); err != nil {
			t.Fatal(err)
		}
		if _, err := service.Fetch(ctx, res, "forged", dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("outputs %q of job %s: %v, want an error saying %q", c.outputs, c.job, err, c.want)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 0 {
		t.Errorf("fetch wrote %v (%v) beside a refused status", entries, err)
	}
}

// TestFetchIsAllOrNothing: a fetch whose download fails part way (an output
// object missing) leaves the directory as it was — an earlier fetch's outputs
// unchanged, no partial file — and a complete one replaces them all.
func TestFetchIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	res := embeddedResources(t, "test-client")
	dir := t.TempDir()
	put := func(outputs map[string]string) {
		var s coordinator.Summary
		s.Job, s.Phase = "j", "done"
		for name, content := range outputs {
			if err := res.PutBytes(ctx, protocol.OutputObject("j", name), []byte(content)); err != nil {
				t.Fatal(err)
			}
			s.Outputs = append(s.Outputs, name)
		}
		data, _ := json.Marshal(s)
		if _, err := res.Jobs.Put(ctx, protocol.JobStatusKey("j"), data); err != nil {
			t.Fatal(err)
		}
	}
	files := func() map[string]string {
		out := map[string]string{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			out[e.Name()] = string(data)
		}
		return out
	}
	first := map[string]string{job.ReportFile: "{}", job.LabelsFile: "first"}
	put(first)
	if _, err := service.Fetch(ctx, res, "j", dir); err != nil {
		t.Fatal(err)
	}
	put(map[string]string{job.ReportFile: "{\"second\": 1}", job.LabelsFile: "second", job.PersistentFile: "second"})
	if err := res.Objects.Delete(ctx, protocol.OutputObject("j", job.PersistentFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := service.Fetch(ctx, res, "j", dir); err == nil {
		t.Fatal("a fetch with an output missing succeeded")
	}
	if got := files(); len(got) != 2 || got[job.LabelsFile] != "first" || got[job.ReportFile] != "{}" {
		t.Errorf("after a failed fetch the directory holds %v, want the first fetch's files", got)
	}
	put(map[string]string{job.ReportFile: "{\"third\": 1}", job.PersistentFile: "third"})
	if _, err := service.Fetch(ctx, res, "j", dir); err != nil {
		t.Fatal(err)
	}
	if got := files(); len(got) != 2 || got[job.PersistentFile] != "third" || got[job.ReportFile] != "{\"third\": 1}" {
		t.Errorf("after a complete fetch the directory holds %v, want the third fetch's files alone", got)
	}
}

// TestCoordinatorReadsSharedPathsOnlyBelowItsRoots: a submitted spec is data from
// the network. Its shared model path is refused at submission, before anything
// opens it, unless it lies below one of the coordinator's --shared-root
// directories: a secret file's first token never comes back in an error.
func TestCoordinatorReadsSharedPathsOnlyBelowItsRoots(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := embeddedResources(t, "test-coordinator")
	root := t.TempDir()
	served := make(chan error, 1)
	go func() {
		served <- service.Serve(ctx, service.Config{Res: res, Data: t.TempDir(), SharedRoots: []string{root}, Log: quiet()})
	}()
	secret := filepath.Join(t.TempDir(), "secret.uai")
	if err := os.WriteFile(secret, []byte("TOPSECRET 1 2 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link.uai")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{secret, "outside the shared roots"},
		{link, "outside the shared roots"},
		{root + "/../" + filepath.Base(filepath.Dir(secret)) + "/secret.uai", "not absolute and clean"},
		{filepath.Join(root, "missing.uai"), "does not name a readable file"},
	} {
		spec, err := job.Wire(job.Spec{Model: denoise, Window: 16})
		if err != nil {
			t.Fatal(err)
		}
		spec.Model = protocol.ModelRef{Path: c.path}
		data, err := protocol.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var msg []byte
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) { // until the coordinator listens
			m, err := res.Conn.Request(res.Names.SubjectSubmit(), data, 2*time.Second)
			if err == nil {
				msg = m.Data
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatal(err)
			}
		}
		if !strings.Contains(string(msg), c.want) || strings.Contains(string(msg), "TOPSECRET") || !strings.Contains(string(msg), `"error"`) {
			t.Errorf("shared path %s: reply %s, want an error saying %q and nothing of the file", c.path, msg, c.want)
		}
		if _, err := service.Status(ctx, res, spec.Job); err == nil {
			t.Errorf("shared path %s: the refused job %s has a status", c.path, spec.Job)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// embeddedResources are the cluster's resources (created) on an embedded server
// of the test's, over a connection named name; both end with the test.
// listeningServer is an embedded server on a free loopback port, closed with
// the test.
func listeningServer(t *testing.T) *cluster.Embedded {
	t.Helper()
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func embeddedResources(t *testing.T, name string) *cluster.Resources {
	t.Helper()
	srv := listeningServer(t)
	cfg := cluster.DefaultConfig()
	cfg.Memory = true
	res, err := cluster.DialService(context.Background(), cluster.ConnOptions{URL: srv.URL()}, cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(res.Conn.Close)
	return res
}

// TestAJobWhoseLoadKillsCoordinatorsIsFailedOnce: a job whose earlier starts
// ended with their coordinator gone before its windows (killed while loading
// its model) MaxLoadStarts times is failed, with the reason, when the next
// coordinator resumes it — no crash loop — while a job that lost one
// coordinator while loading is loaded again and runs to its end; neither
// leaves its load count behind.
func TestAJobWhoseLoadKillsCoordinatorsIsFailedOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := embeddedResources(t, "coordinator")
	crashes := map[string]int{"killer": service.MaxLoadStarts, "survivor": service.MaxLoadStarts - 1}
	for id, n := range crashes {
		spec, err := job.Wire(job.Spec{Model: denoise, Method: job.PBP, Window: 16})
		if err != nil {
			t.Fatal(err)
		}
		spec.Job = id
		if spec.Model, err = service.UploadModel(ctx, res, id, denoise); err != nil {
			t.Fatal(err)
		}
		if err := res.PutJobSpec(ctx, spec); err != nil {
			t.Fatal(err)
		}
		status, _ := json.Marshal(coordinator.Summary{Status: coordinator.Status{Job: id, Phase: "running"}})
		if _, err := res.Jobs.Put(ctx, protocol.JobStatusKey(id), status); err != nil {
			t.Fatal(err)
		}
		for range n { // coordinators that died loading it
			if _, err := res.StartLoading(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	go service.Serve(ctx, service.Config{Res: res, Data: t.TempDir(), Log: quiet()})
	go worker.Serve(ctx, res, worker.Options{ID: "w", Slots: 2, CacheDir: t.TempDir(), Log: quiet()}, nil)
	for id := range crashes {
		deadline := time.Now().Add(2 * time.Minute)
		var sum coordinator.Summary
		for {
			var err error
			if sum, err = service.Status(ctx, res, id); err == nil && service.Ended(sum.Phase) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: no end within 2 minutes: %s", id, service.StatusLine(sum))
			}
			time.Sleep(50 * time.Millisecond)
		}
		switch id {
		case "killer":
			if sum.Phase != "failed" || !strings.Contains(sum.Err, "while loading") {
				t.Errorf("%s ended %s: %q; want failed while loading", id, sum.Phase, sum.Err)
			}
		default:
			if sum.Phase != "done" {
				t.Errorf("%s ended %s: %q; want done", id, sum.Phase, sum.Err)
			}
		}
		if _, err := res.Jobs.Get(ctx, protocol.JobLoadsKey(id)); err == nil {
			t.Errorf("%s: its load count is left behind", id)
		}
	}
}

// TestAJobOfAnHDF5BombFailsOnce: a job whose model is an OpenGM file of 1.3 MB
// inflating to 1 GiB (a table of 2^27 zeros, all its model asks for), past the
// budget of the file's size — given by a shared path, or uploaded by a client
// that skipped the checks Submit makes — fails once, with the reason, when the
// coordinator loads it: refused before a chunk is inflated rather than filling
// the coordinator's memory (it grew past 2.7 GB), its load count released.
func TestAJobOfAnHDF5BombFailsOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := embeddedResources(t, "coordinator")
	root := t.TempDir()
	bomb := filepath.Join(root, "table.h5")
	if err := os.WriteFile(bomb, testutil.OpenGMTableBomb(1<<13, 1<<14), 0o644); err != nil {
		t.Fatal(err)
	}
	go service.Serve(ctx, service.Config{Res: res, Data: t.TempDir(), SharedRoots: []string{root}, Log: quiet()})
	for _, via := range []string{"shared", "uploaded"} {
		// The spec of a real model, then the bomb in its place.
		spec, err := job.Wire(job.Spec{Model: "../model/opengm/testdata/mixed_sb0.h5", Window: 4})
		if err != nil {
			t.Fatal(err)
		}
		spec.Job = "bomb-" + via
		if via == "shared" {
			spec.Model = protocol.ModelRef{Path: bomb}
		} else if spec.Model, err = service.UploadModel(ctx, res, spec.Job, bomb); err != nil {
			t.Fatal(err)
		}
		data, err := protocol.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) { // until the coordinator listens
			m, err := res.Conn.Request(res.Names.SubjectSubmit(), data, 2*time.Second)
			if err == nil {
				if strings.Contains(string(m.Data), `"error"`) {
					t.Fatalf("%s: submission refused: %s", via, m.Data)
				}
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatal(err)
			}
		}
		var sum coordinator.Summary
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if sum, err = service.Status(ctx, res, spec.Job); err == nil && service.Ended(sum.Phase) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no end within a minute: %s", via, service.StatusLine(sum))
			}
		}
		if sum.Phase != "failed" || !strings.Contains(sum.Err, "/gm/function-id-16000/values: 134217728 values") || !strings.Contains(sum.Err, "decompression bomb") {
			t.Errorf("%s: ended %s: %q; want failed as a decompression bomb", via, sum.Phase, sum.Err)
		}
		if _, err := res.Jobs.Get(ctx, protocol.JobLoadsKey(spec.Job)); err == nil {
			t.Errorf("%s: its load count is left behind", via)
		}
	}
}

// TestDataKeepsOnlyWhatJobsNeed: the coordinator's data directory holds a
// job's files while it runs; when it ends they go (its outputs are in the
// object store), unless --data-retention keeps them; files of jobs it does not
// run (a crash's, a failed download's) are pruned when it starts leading, and
// what is not a job's directory is left alone.
func TestDataKeepsOnlyWhatJobsNeed(t *testing.T) {
	for _, retention := range []time.Duration{0, time.Hour} {
		ctx, cancel := context.WithCancel(context.Background())
		res := embeddedResources(t, "coordinator")
		data := t.TempDir()
		jobs := filepath.Join(data, service.JobsDir)
		stale := filepath.Join(jobs, "crashed-job")
		os.MkdirAll(filepath.Join(stale, "out"), 0o755)
		os.WriteFile(filepath.Join(data, "crashed-job"), []byte("not in the jobs directory"), 0o644)
		os.WriteFile(filepath.Join(stale, "model.uai"), []byte("partial"), 0o644)
		old := time.Now().Add(-2 * time.Hour)
		os.Chtimes(stale, old, old)
		other := filepath.Join(jobs, "not a job")
		os.Mkdir(other, 0o755)
		os.Chtimes(other, old, old)
		served := make(chan error, 1)
		go func() {
			served <- service.Serve(ctx, service.Config{Res: res, Data: data, DataRetention: retention, Log: quiet()})
		}()
		go worker.Serve(ctx, res, worker.Options{ID: "w", Slots: 2, CacheDir: t.TempDir(), Log: quiet()}, nil)
		id, err := service.Submit(ctx, cluster.ConnOptions{URL: res.Conn.ConnectedUrl()}, job.Spec{Model: denoise, Method: job.PBP, Window: 16}, service.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			sum, err := service.Status(ctx, res, id)
			if err == nil && service.Ended(sum.Phase) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: no end within 2 minutes", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		<-served
		exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
		if exists(stale) || !exists(other) || !exists(filepath.Join(data, "crashed-job")) {
			t.Errorf("retention %v: a stale job's files left %v, a directory that is no job's left %v, a file beside the jobs directory left %v; want gone, left and left", retention, exists(stale), exists(other), exists(filepath.Join(data, "crashed-job")))
		}
		if kept := exists(filepath.Join(jobs, id)); kept != (retention > 0) {
			t.Errorf("retention %v: the finished job's files kept: %v", retention, kept)
		}
	}
}

// TestOutputsExpireAfterTheirRetention: with --output-retention, a job that
// ended longer ago loses its outputs from the object store and its status
// says why, so that fetch explains there is nothing to fetch; a job that
// ended since keeps them.
// seedEndedJobs stores two done jobs with an output each: "old", ended two
// hours ago, and "new", ended now.
func seedEndedJobs(ctx context.Context, t *testing.T, res *cluster.Resources) {
	t.Helper()
	for id, ended := range map[string]time.Time{"old": time.Now().Add(-2 * time.Hour), "new": time.Now()} {
		if err := res.PutBytes(ctx, protocol.OutputObject(id, job.ReportFile), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		var s coordinator.Summary
		s.Job, s.Phase, s.Outputs, s.Updated = id, "done", []string{job.ReportFile}, ended
		data, _ := json.Marshal(s)
		if _, err := res.Jobs.Put(ctx, protocol.JobStatusKey(id), data); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOutputsExpireAfterTheirRetention(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := embeddedResources(t, "coordinator")
	seedEndedJobs(ctx, t, res)
	go service.Serve(ctx, service.Config{Res: res, Data: t.TempDir(), OutputRetention: time.Hour, Log: quiet()})
	deadline := time.Now().Add(time.Minute)
	for {
		sum, err := service.Status(ctx, res, "old")
		if err == nil && len(sum.Outputs) == 0 {
			if !strings.Contains(sum.Err, "output-retention") {
				t.Errorf("expired outputs: status %q", service.StatusLine(sum))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old job's outputs did not expire within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := res.Objects.GetInfo(ctx, protocol.OutputObject("old", job.ReportFile)); err == nil {
		t.Error("the expired output is still in the object store")
	}
	if _, err := service.Fetch(ctx, res, "old", t.TempDir()); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Errorf("fetch of expired outputs: %v", err)
	}
	if _, err := service.Fetch(ctx, res, "new", t.TempDir()); err != nil {
		t.Errorf("fetch of a job that ended since: %v", err)
	}
}

// TestJobsExpireAfterTheirRetention: the leader deletes a job that ended
// longer than the job retention ago, as partopt delete does (its status, its
// outputs), and keeps one that ended since.
func TestJobsExpireAfterTheirRetention(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := embeddedResources(t, "coordinator")
	seedEndedJobs(ctx, t, res)
	go service.Serve(ctx, service.Config{Res: res, Data: t.TempDir(), JobRetention: time.Hour, Log: quiet()})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := service.Status(ctx, res, "old"); err != nil && strings.Contains(err.Error(), "no job") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old job was not deleted within a minute")
		}
	}
	if _, err := res.Objects.GetInfo(ctx, protocol.OutputObject("old", job.ReportFile)); err == nil {
		t.Error("the expired job's output is still in the object store")
	}
	if _, err := service.Fetch(ctx, res, "new", t.TempDir()); err != nil {
		t.Errorf("fetch of a job that ended since: %v", err)
	}
}

// TestSubmitWaitsForAStartingCoordinator: a job submitted while the cluster's
// first coordinator is still starting — no service has created the
// cluster's resources yet — is taken once it has, not refused (as
// "partopt coordinator … & partopt submit …" in one script did).
func TestSubmitWaitsForAStartingCoordinator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := listeningServer(t)
	conn := cluster.ConnOptions{URL: srv.URL()}
	if _, err := cluster.Dial(ctx, conn, "test-client"); !errors.Is(err, cluster.ErrNoCluster) {
		t.Fatalf("before any service: %v", err)
	}
	type submitted struct {
		id  string
		err error
	}
	done := make(chan submitted, 1)
	go func() {
		id, err := service.Submit(ctx, conn, job.Spec{Model: denoise, Method: job.PBP, Window: 16, Halo: 8}, service.SubmitOptions{})
		done <- submitted{id, err}
	}()
	time.Sleep(time.Second)
	startCluster(ctx, t, conn)
	s := <-done
	if s.err != nil || s.id == "" {
		t.Fatalf("submit beside a starting coordinator: %q, %v", s.id, s.err)
	}
}
