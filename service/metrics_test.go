package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/service"
	"github.com/partopt/partopt/worker"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs url and parses it with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s does not parse as Prometheus text: %v", url, err)
	}
	return families
}

// value is the value of family name's series whose labels include want
// (label=value pairs), and whether there is one.
func value(families map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for i := 0; i+1 < len(want); i += 2 {
			ok = ok && labels[want[i]] == want[i+1]
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsFollowPrometheusConventions: the /metrics of a coordinator and
// a worker, parsed with the Prometheus text parser: a running job's series
// carry job_id (never job, the target's label) and go when the job ends;
// queue depth, tasks in flight and active workers are gauges of the
// namespace; the worker counts its windows and their seconds; build_info is
// there; every counter ends in _total.
func TestMetricsFollowPrometheusConventions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := listeningServer(t)
	conn := cluster.ConnOptions{URL: srv.URL()}
	startCluster(ctx, t, conn, true) // no worker yet: the job waits
	addr := make(chan string, 1)
	if _, err := service.ServeMetrics(ctx, "127.0.0.1:0", func(msg string) {
		addr <- regexp.MustCompile(`http://\S+/`).FindString(msg)
	}); err != nil {
		t.Fatal(err)
	}
	url := <-addr + "metrics"
	id, err := service.Submit(ctx, conn, job.Spec{Model: denoise, Method: job.PBP, Window: 16, Halo: 8}, service.SubmitOptions{ID: "metered"})
	if err != nil {
		t.Fatal(err)
	}
	var running map[string]*dto.MetricFamily
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		// The job's tasks queued and its own series up: the queue gauge alone may
		// still show an earlier test's tasks (one registry a process).
		running = scrape(t, url)
		v, _ := value(running, "partopt_tasks_queued", "namespace", "partopt")
		if _, mine := value(running, "partopt_job_round", coordinator.JobLabel, id); v > 0 && mine {
			break
		}
		if time.Now().After(deadline) {
			break // the assertions below say what is missing
		}
	}
	if v, _ := value(running, "partopt_tasks_queued", "namespace", "partopt"); v <= 0 {
		t.Fatal("no task queued within a minute")
	}
	if v, ok := value(running, "partopt_job_variables", coordinator.JobLabel, id); !ok || v != 32*32 {
		t.Errorf("partopt_job_variables{job_id=%q}: %v, %v; want 1024", id, v, ok)
	}
	if _, ok := value(running, "partopt_job_round", coordinator.JobLabel, id); !ok {
		t.Errorf("no partopt_job_round for the running job")
	}

	wres := dialService(ctx, t, conn, "test-worker")
	var stats worker.Stats
	observe := service.WorkerMetrics(&stats, 2)
	go worker.Serve(ctx, wres, worker.Options{ID: "w", Slots: 2, CacheDir: t.TempDir(), Log: quiet(), Observe: observe}, &stats)
	client, err := cluster.Dial(ctx, conn, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Conn.Close()
	fetchDone(ctx, t, client, id)
	ended := scrape(t, url)
	for name, f := range ended {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "job" {
					t.Errorf("%s has a job label (the scrape target's)", name)
				}
				if l.GetName() == coordinator.JobLabel && l.GetValue() == id {
					t.Errorf("%s keeps the ended job's series", name)
				}
			}
		}
		if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s does not end in _total", name)
		}
		if !strings.HasPrefix(name, "partopt_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("%s: not partopt_ (nor go_, process_)", name)
		}
	}
	solved, _ := value(ended, "partopt_worker_windows_solved_total")
	observed, _ := value(ended, "partopt_worker_window_seconds")
	if solved == 0 || observed != solved || solved != float64(stats.Solved.Load()) {
		t.Errorf("worker: %v windows solved, %v observed, %d counted", solved, observed, stats.Solved.Load())
	}
	if v, ok := value(ended, "partopt_workers_active", "namespace", "partopt"); !ok || v != 1 {
		t.Errorf("partopt_workers_active: %v, %v; want 1", v, ok)
	}
	if v, ok := value(ended, "partopt_build_info"); !ok || v != 1 {
		t.Errorf("partopt_build_info: %v, %v", v, ok)
	}
	if v, _ := value(ended, "partopt_windows_merged_total"); v == 0 {
		t.Error("no window merged")
	}
	// The sample Grafana dashboard asks only for metrics that exist.
	dash, err := os.ReadFile("../deploy/grafana/partopt.json")
	if err != nil {
		t.Fatal(err)
	}
	var board struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(dash, &board); err != nil || len(board.Panels) == 0 {
		t.Fatalf("deploy/grafana/partopt.json: %v", err)
	}
	for _, p := range board.Panels {
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`partopt_[a-z_]+`).FindAllString(tg.Expr, -1) {
				if ended[strings.TrimSuffix(name, "_bucket")] == nil && running[name] == nil {
					t.Errorf("the dashboard's %q asks for %s, which no process exports", tg.Expr, name)
				}
			}
		}
	}
}
