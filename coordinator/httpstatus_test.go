package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/coordinator"
	"github.com/prometheus/client_golang/prometheus"
)

// statusSummary is a job in its second round with one lost window, whose worker
// error is hostile HTML.
func statusSummary() coordinator.Summary {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return coordinator.Summary{
		Status: coordinator.Status{Job: "tsukuba-7", Phase: "running", Round: 1, Rounds: 1,
			Windows: 12, Merged: 5, Queued: 6, Stored: 1, Lost: 1, Duplicates: 2, Proven: 420, Pixels: 1000, Eliminated: 3170, Level: 1},
		InFlight: 6, Dispatched: 30, Rejected: 3,
		Workers: map[string]coordinator.WorkerSeen{
			"worker-a": {Windows: 17, LastSeen: start.Add(90 * time.Second)},
			"worker-b": {Windows: 4, LastSeen: start.Add(80 * time.Second)},
		},
		Errors:      []string{"<script>alert(1)</script>"},
		LostWindows: []coordinator.WindowID{{Round: 0, Window: 3}},
		Started:     start, Updated: start.Add(95 * time.Second),
	}
}

// fakePNG encodes a small grey image, records the maxSide it was asked for and
// fails with err when err is set.
type fakePNG struct {
	maxSide int
	err     error
}

func (f *fakePNG) render(w io.Writer, maxSide int) error {
	f.maxSide = maxSide
	if f.err != nil {
		w.Write([]byte("\x89PNG half")) // must not reach the client
		return f.err
	}
	return png.Encode(w, image.NewGray(image.Rect(0, 0, 8, 4)))
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

func TestStatusPageListsJobsAndEscapesWorkerErrors(t *testing.T) {
	f := &fakePNG{}
	other := coordinator.Summary{Status: coordinator.Status{Job: "a b/c", Phase: "done"}}
	page := &coordinator.StatusPage{Jobs: func() []coordinator.JobView {
		return []coordinator.JobView{{Summary: statusSummary(), PNG: f.render}, {Summary: other}}
	}}
	rec := get(t, page.Handler(), "/")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q, want text/html", ct)
	}
	body := rec.Body.String()
	for _, want := range []string{
		"tsukuba-7", "running", "2 (1 done)", "5 / 12", "420 / 1000 (42.0%)", "3170 (window level 1)", "1m35s",
		"worker-a", "worker-b", "&lt;script&gt;alert(1)&lt;/script&gt;",
		`src="jobs/tsukuba-7/persistency.png?max=768"`, `href="jobs/a%20b%2Fc"`, "done",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Error("page contains an unescaped <script>")
	}
	if n := strings.Count(body, "labels eliminated"); n != 1 {
		t.Errorf("%d rows of eliminated labels, want 1 (only the job that eliminated some)", n)
	}
	if n := strings.Count(body, "<img"); n != 1 {
		t.Errorf("%d images, want 1 (only the job with a PNG)", n)
	}
	if f.maxSide != 0 {
		t.Error("the page rendered the PNG itself; it should only link it")
	}
}

func TestJobJSONRoundTripsTheSummary(t *testing.T) {
	want := statusSummary()
	page := &coordinator.StatusPage{Jobs: func() []coordinator.JobView { return []coordinator.JobView{{Summary: want}} }}
	rec := get(t, page.Handler(), "/jobs/tsukuba-7")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var got coordinator.Summary
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestStatusRoutesAnswer404ForUnknownJobsAndMissingMaps(t *testing.T) {
	page := &coordinator.StatusPage{Jobs: func() []coordinator.JobView {
		return []coordinator.JobView{{Summary: statusSummary()}} // no PNG
	}}
	h := page.Handler()
	for _, target := range []string{"/jobs/nope", "/jobs/nope/persistency.png", "/jobs/tsukuba-7/persistency.png", "/nothing"} {
		if rec := get(t, h, target); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, rec.Code)
		}
	}
}

func TestPersistencyPNGClampsMaxAndNeverSendsAFailedImage(t *testing.T) {
	for _, tc := range []struct {
		query    string
		err      error
		code     int
		wantSide int // the maxSide the renderer received; 0: not called
	}{
		{query: "", code: http.StatusOK, wantSide: 1024},
		{query: "?max=300", code: http.StatusOK, wantSide: 300},
		{query: "?max=3", code: http.StatusOK, wantSide: 16},
		{query: "?max=-5", code: http.StatusOK, wantSide: 16},
		{query: "?max=100000", code: http.StatusOK, wantSide: 4096},
		{query: "?max=abc", code: http.StatusBadRequest},
		{query: "?max=12.5", code: http.StatusBadRequest},
		{query: "?max=64", err: errors.New("disk on fire"), code: http.StatusInternalServerError, wantSide: 64},
	} {
		t.Run(tc.query, func(t *testing.T) {
			f := &fakePNG{err: tc.err}
			page := &coordinator.StatusPage{Jobs: func() []coordinator.JobView {
				return []coordinator.JobView{{Summary: statusSummary(), PNG: f.render}}
			}}
			rec := get(t, page.Handler(), "/jobs/tsukuba-7/persistency.png"+tc.query)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if f.maxSide != tc.wantSide {
				t.Errorf("renderer got maxSide %d, want %d", f.maxSide, tc.wantSide)
			}
			switch tc.code {
			case http.StatusOK:
				if ct := rec.Header().Get("Content-Type"); ct != "image/png" {
					t.Errorf("Content-Type %q, want image/png", ct)
				}
				img, err := png.Decode(rec.Body)
				if err != nil {
					t.Fatalf("decoding the PNG: %v", err)
				}
				if b := img.Bounds(); b.Dx() != 8 || b.Dy() != 4 {
					t.Errorf("image %v, want 8×4", b)
				}
			case http.StatusInternalServerError:
				body := rec.Body.String()
				if !strings.Contains(body, "disk on fire") || strings.Contains(body, "PNG") {
					t.Errorf("body %q: want the error and no image bytes", body)
				}
			}
		})
	}
}

func TestMetricsExposesTheRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := coordinator.NewMetrics(reg)
	m.Merged.Add(3)
	m.Persistent.WithLabelValues("tsukuba-7").Set(420)
	page := &coordinator.StatusPage{Gatherer: reg}
	rec := get(t, page.Handler(), "/metrics")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, want := range []string{"partopt_windows_merged_total 3", `partopt_job_persistent_variables{job_id="tsukuba-7"} 420`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestListenStatusServesUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	page := &coordinator.StatusPage{}
	addr, errc, err := coordinator.ListenStatus(ctx, "127.0.0.1:0", page.Handler())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("GET /healthz: %d %q, want 200 ok", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("server ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server still running 10 s after its context ended")
	}
	if _, err := http.Get("http://" + addr.String() + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

// TestSummaryJSONIsSnakeCaseAndCountsRoundsFromOne: a job's status in JSON
// (status --json, /jobs/ID, the stored status) names every field in
// snake_case, as report.json does, and counts rounds from 1, as the status
// line does; it reads back as it was.
func TestSummaryJSONIsSnakeCaseAndCountsRoundsFromOne(t *testing.T) {
	s := coordinator.Summary{
		Status: coordinator.Status{Job: "j", Layout: "graph", Phase: "running", Err: "e", Round: 2, Rounds: 2, Windows: 9, WindowsTotal: 30,
			Merged: 3, Stored: 2, Queued: 4, Lost: 1, Duplicates: 1, Proven: 10, Pixels: 20, Eliminated: 5, Level: 1},
		InFlight: 2, Dispatched: 31, Skipped: 1, Reused: 1, Solved: 25, MaxWindowVars: 400, WindowSeconds: 1.5,
		PruningIterations: 7, SolverIterations: 70, Rejected: 1, Resent: 1,
		Workers:     map[string]coordinator.WorkerSeen{"w-1": {Windows: 3, LastSeen: time.Unix(5, 0).UTC()}},
		Errors:      []string{"x"},
		LostWindows: []coordinator.WindowID{{Round: 1, Window: 4}},
		Started:     time.Unix(1, 0).UTC(), Updated: time.Unix(2, 0).UTC(), Outputs: []string{"labels.plf"},
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var walk func(string, any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if path != ".workers" && !snake.MatchString(k) { // workers are keyed by their ids
					t.Errorf("%s.%s is not snake_case", path, k)
				}
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	walk("", fields)
	if lost := fields["lost_windows"].([]any)[0].(map[string]any); lost["round"] != 2.0 || lost["window"] != 4.0 {
		t.Errorf("lost window %v: want round 2 (from 1), window 4", lost)
	}
	if fields["round"] != 3.0 || len(fields) != 34 {
		t.Errorf("round %v (want 3, the status line's), %d fields: %s", fields["round"], len(fields), data)
	}
	var back coordinator.Summary
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("read back %+v, %v; want %+v", back, err, s)
	}
}

// TestFollowersServeTheLeadersPage: a follower's page passes / and /jobs/…
// to the leader's (which answers with its jobs) and keeps its own /metrics;
// a request already passed on is served locally, never again; a leader that
// does not answer is a clear 502.
func TestFollowersServeTheLeadersPage(t *testing.T) {
	leader := &coordinator.StatusPage{Jobs: func() []coordinator.JobView {
		return []coordinator.JobView{{Summary: coordinator.Summary{Status: coordinator.Status{Job: "led", Phase: "running"}}}}
	}, Gatherer: prometheus.NewRegistry()}
	srv := httptest.NewServer(leader.Handler())
	defer srv.Close()
	reg := prometheus.NewRegistry()
	coordinator.NewMetrics(reg).Merged.Add(7)
	url := srv.URL
	follower := &coordinator.StatusPage{Jobs: func() []coordinator.JobView { return nil }, Gatherer: reg, Leader: func() string { return url }}
	if rec := get(t, follower.Handler(), "/jobs/led"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"phase": "running"`) {
		t.Errorf("follower's /jobs/led: %d %s", rec.Code, rec.Body)
	}
	if rec := get(t, follower.Handler(), "/"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "led") {
		t.Errorf("follower's /: %d %s", rec.Code, rec.Body)
	}
	if rec := get(t, follower.Handler(), "/metrics"); !strings.Contains(rec.Body.String(), "partopt_windows_merged_total 7") {
		t.Errorf("follower's /metrics is not its own: %s", rec.Body)
	}
	req := httptest.NewRequest(http.MethodGet, "/jobs/led", nil)
	req.Header.Set("X-Partopt-Proxied-By", "another replica")
	rec := httptest.NewRecorder()
	follower.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("a passed-on request was passed on again: %d %s", rec.Code, rec.Body)
	}
	srv.Close()
	if rec := get(t, follower.Handler(), "/jobs/led"); rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "does not answer") {
		t.Errorf("an unreachable leader: %d %s", rec.Code, rec.Body)
	}
	url = ""
	if rec := get(t, follower.Handler(), "/jobs/led"); rec.Code != http.StatusNotFound {
		t.Errorf("no leader known: %d %s, want its own page", rec.Code, rec.Body)
	}
}

// TestFollowersProxyOnlyToAStatusPage: the leader's page URL comes from the
// raft table, which anyone who reaches a raft port could write to: a
// follower proxies only to an http(s) URL of a host (no path, query or user
// of a record's choosing), and never passes on what a browser sends for it
// alone (Authorization, Cookie).
func TestFollowersProxyOnlyToAStatusPage(t *testing.T) {
	var got http.Header
	var path string
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, path = r.Header.Clone(), r.URL.Path
		io.WriteString(w, "leader")
	}))
	defer leader.Close()
	page := leader.URL
	follower := &coordinator.StatusPage{Jobs: func() []coordinator.JobView { return nil }, Gatherer: prometheus.NewRegistry(), Leader: func() string { return page }}
	req := httptest.NewRequest(http.MethodGet, "/jobs/led", nil)
	req.Header.Set("Authorization", "Bearer s3cr3t")
	req.Header.Set("Cookie", "session=s3cr3t")
	rec := httptest.NewRecorder()
	follower.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || path != "/jobs/led" || got.Get("Authorization") != "" || got.Get("Cookie") != "" {
		t.Errorf("proxied %d to %s with %v", rec.Code, path, got)
	}
	for _, bad := range []string{leader.URL + "/latest/meta-data", "file:///etc/passwd", strings.Replace(leader.URL, "://", "://u:p@", 1), leader.URL + "/?x=1"} {
		page, path = bad, ""
		if rec := get(t, follower.Handler(), "/jobs/led"); rec.Code != http.StatusBadGateway || path != "" {
			t.Errorf("leader page %q: %d %s, reached %q", bad, rec.Code, rec.Body, path)
		}
	}
}

// TestSummaryReadsStatusesStoredBefore: a status stored before snake_case
// (Go field names, rounds from 0) reads as it was written.
func TestSummaryReadsStatusesStoredBefore(t *testing.T) {
	old := `{"Job":"j","Layout":"","Phase":"done","Err":"e","Round":2,"Rounds":3,"Windows":9,"WindowsTotal":30,` +
		`"Merged":9,"Stored":0,"Queued":0,"Lost":1,"Duplicates":2,"Proven":10,"Pixels":20,"Eliminated":5,"Level":1,` +
		`"InFlight":0,"Dispatched":31,"Skipped":1,"Reused":1,"Solved":25,"MaxWindowVars":400,"WindowSeconds":1.5,` +
		`"PruningIterations":7,"SolverIterations":70,"Rejected":1,"Resent":1,"Workers":null,"Errors":null,` +
		`"LostWindows":[{"Round":1,"Window":4}],"Started":"1970-01-01T00:00:01Z","Updated":"1970-01-01T00:00:02Z","Outputs":["report.json"]}`
	var s coordinator.Summary
	if err := json.Unmarshal([]byte(old), &s); err != nil {
		t.Fatal(err)
	}
	want := coordinator.Summary{
		Status: coordinator.Status{Job: "j", Phase: "done", Err: "e", Round: 2, Rounds: 3, Windows: 9, WindowsTotal: 30, Merged: 9,
			Lost: 1, Duplicates: 2, Proven: 10, Pixels: 20, Eliminated: 5, Level: 1},
		Dispatched: 31, Skipped: 1, Reused: 1, Solved: 25, MaxWindowVars: 400, WindowSeconds: 1.5, PruningIterations: 7,
		SolverIterations: 70, Rejected: 1, Resent: 1, LostWindows: []coordinator.WindowID{{Round: 1, Window: 4}},
		Started: time.Unix(1, 0).UTC(), Updated: time.Unix(2, 0).UTC(), Outputs: []string{"report.json"},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("read %+v\nwant %+v", s, want)
	}
}
