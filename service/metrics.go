package service

import (
	"context"
	"sync"
	"time"

	"github.com/partopt/partopt/internal/version"
	"github.com/partopt/partopt/worker"
	"github.com/prometheus/client_golang/prometheus"
)

// buildInfo is partopt_build_info: 1, labelled with the version, commit and
// Go version of the process (internal/version), as Prometheus' build_info
// convention has it.
func buildInfo() prometheus.Collector {
	v := version.Get()
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "partopt", Name: "build_info",
		Help:        "The partopt build of this process (always 1).",
		ConstLabels: prometheus.Labels{"version": v.Version, "revision": v.Commit, "goversion": v.Go}},
		func() float64 { return 1 })
}

// activeWindow is how recently a worker must have sent a result to count as
// active.
const activeWindow = 5 * time.Minute

// clusterGauges are the gauges of the clusters whose coordinators run in this
// process, read at scrape time: tasks queued and in flight (the workers'
// consumer) and workers active, labelled with the cluster's namespace.
type clusterGauges struct {
	mu                                 sync.Mutex
	services                           map[*service]struct{}
	pending, inFlight, waiting, active *prometheus.Desc
}

var gauges = &clusterGauges{
	services: map[*service]struct{}{},
	pending:  prometheus.NewDesc("partopt_tasks_queued", "Window tasks waiting for a worker (the workers' consumer's pending messages).", []string{"namespace"}, nil),
	inFlight: prometheus.NewDesc("partopt_tasks_in_flight", "Window tasks delivered to a worker and not yet acknowledged.", []string{"namespace"}, nil),
	waiting:  prometheus.NewDesc("partopt_worker_slots_waiting", "Pull requests of idle worker slots waiting for a task.", []string{"namespace"}, nil),
	active:   prometheus.NewDesc("partopt_workers_active", "Workers that sent a result to this coordinator in the last 5 minutes.", []string{"namespace"}, nil),
}

func (g *clusterGauges) add(s *service) {
	g.mu.Lock()
	g.services[s] = struct{}{}
	g.mu.Unlock()
}

func (g *clusterGauges) remove(s *service) {
	g.mu.Lock()
	delete(g.services, s)
	g.mu.Unlock()
}

func (g *clusterGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.pending
	ch <- g.inFlight
	ch <- g.waiting
	ch <- g.active
}

func (g *clusterGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	byNS := map[string][]*service{} // coordinators of one cluster in one process (tests) count once
	for s := range g.services {
		ns := s.res.Names.Namespace()
		byNS[ns] = append(byNS[ns], s)
	}
	g.mu.Unlock()
	now := time.Now()
	for ns, services := range byNS {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := services[0].res.Workers.Info(ctx)
		cancel()
		if err == nil {
			ch <- prometheus.MustNewConstMetric(g.pending, prometheus.GaugeValue, float64(info.NumPending), ns)
			ch <- prometheus.MustNewConstMetric(g.inFlight, prometheus.GaugeValue, float64(info.NumAckPending), ns)
			ch <- prometheus.MustNewConstMetric(g.waiting, prometheus.GaugeValue, float64(info.NumWaiting), ns)
		}
		active := map[string]bool{}
		for _, s := range services {
			s.activeWorkers(now, active)
		}
		ch <- prometheus.MustNewConstMetric(g.active, prometheus.GaugeValue, float64(len(active)), ns)
	}
}

// activeWorkers adds to seen the workers that sent a result to a job this
// coordinator runs within activeWindow of now.
func (s *service) activeWorkers(now time.Time, seen map[string]bool) {
	for _, v := range s.views() {
		for id, w := range v.Summary.Workers {
			if now.Sub(w.LastSeen) <= activeWindow {
				seen[id] = true
			}
		}
	}
}

// WorkerMetrics registers a worker's metrics with the process's registry
// (served by ServeMetrics): its tasks by outcome (from stats), its slots busy
// and the seconds each window took. It returns the function to give as
// worker.Options.Observe.
func WorkerMetrics(stats *worker.Stats, slots int) (observe func(seconds float64)) {
	counter := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "partopt", Subsystem: "worker", Name: name, Help: help},
			func() float64 { return float64(v()) })
	}
	seconds := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "partopt", Subsystem: "worker", Name: "window_seconds",
		Help: "Seconds to solve one window (from the task's start to its result).", Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)})
	registry.Register(counter("windows_solved_total", "Window tasks answered with a result.", stats.Solved.Load))
	registry.Register(counter("windows_failed_total", "Window tasks that failed (handed back, or reported on their last delivery).", stats.Failed.Load))
	registry.Register(counter("tasks_rejected_total", "Task messages rejected as malformed, oversized or of another version.", stats.Rejected.Load))
	registry.Register(counter("windows_returned_total", "Window tasks handed back at shutdown.", stats.Returned.Load))
	registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "partopt", Subsystem: "worker", Name: "slots",
		Help: "Tasks this worker solves at once."}, func() float64 { return float64(slots) }))
	registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "partopt", Subsystem: "worker", Name: "slots_busy",
		Help: "Slots solving a task now."}, func() float64 { return float64(stats.Busy.Load()) }))
	registry.Register(seconds)
	return seconds.Observe
}

// ServeMetrics serves /metrics and /healthz of the process's registry at addr
// until ctx ends (a worker's --http).
func ServeMetrics(ctx context.Context, addr string, note func(string)) (<-chan error, error) {
	return ServeStatus(ctx, addr, note, nil)
}
