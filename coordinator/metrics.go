package coordinator

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the coordinator's Prometheus metrics, shared by its jobs.
type Metrics struct {
	Dispatched, Skipped, Merged, Lost, Duplicates, Rejected prometheus.Counter
	ProvenPixels                                            *prometheus.GaugeVec
	MergeSeconds, WindowSeconds                             prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "partopt", Name: name, Help: help})
	}
	m := &Metrics{
		Dispatched: counter("windows_dispatched_total", "Window tasks published to the workers."),
		Skipped:    counter("windows_skipped_total", "Windows not dispatched because every node was already proven."),
		Merged:     counter("windows_merged_total", "Window results merged into the label files."),
		Lost:       counter("windows_lost_total", "Windows that exhausted their deliveries or failed permanently (merged as proving nothing)."),
		Duplicates: counter("results_duplicate_total", "Results ignored because their window was already stored or merged."),
		Rejected:   counter("messages_rejected_total", "Result messages rejected as malformed, oversized, of another version or inconsistent with their task."),
		ProvenPixels: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "partopt", Name: "job_proven_pixels",
			Help: "Pixels proven persistent so far (fixed ones included), per job."}, []string{"job"}),
		MergeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "partopt", Name: "merge_seconds",
			Help: "Time to merge one window result into the label files.", Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10)}),
		WindowSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "partopt", Name: "window_solve_seconds",
			Help: "Worker time to solve one window, as reported in its result.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}),
	}
	reg.MustRegister(m.Dispatched, m.Skipped, m.Merged, m.Lost, m.Duplicates, m.Rejected, m.ProvenPixels, m.MergeSeconds, m.WindowSeconds)
	return m
}

// noMetrics receives the updates of a runner without metrics.
func noMetrics() *Metrics { return NewMetrics(prometheus.NewRegistry()) }
