package coordinator

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the coordinator's Prometheus metrics, shared by its jobs. They
// follow the Prometheus naming guide: the partopt_ prefix, counters ending in
// _total, seconds as the unit, and per-job series labelled job_id (job is the
// label Prometheus gives the scrape target) and removed when the job ends
// (Forget), so that series do not pile up with every job.
type Metrics struct {
	Dispatched, Skipped, Merged, Lost, Duplicates, Rejected prometheus.Counter
	MergeSeconds, WindowSeconds                             prometheus.Histogram
	// Per running job: its variables proven persistent (fixed ones included),
	// its variables, its windows in flight, its round (from 1).
	Persistent, Variables, InFlight, Round *prometheus.GaugeVec
}

// JobLabel is the label of the per-job series.
const JobLabel = "job_id"

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "partopt", Name: name, Help: help})
	}
	job := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "partopt", Name: name, Help: help}, []string{JobLabel})
	}
	m := &Metrics{
		Dispatched: counter("windows_dispatched_total", "Window tasks published to the workers."),
		Skipped:    counter("windows_skipped_total", "Windows not dispatched because every node was already proven."),
		Merged:     counter("windows_merged_total", "Window results merged into the label files."),
		Lost:       counter("windows_lost_total", "Windows that exhausted their deliveries or failed permanently (merged as proving nothing)."),
		Duplicates: counter("results_duplicate_total", "Results ignored because their window was already stored or merged."),
		Rejected:   counter("messages_rejected_total", "Result messages rejected as malformed, oversized, of another version or inconsistent with their task."),
		MergeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "partopt", Name: "merge_seconds",
			Help: "Time to merge one window result into the label files.", Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10)}),
		WindowSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "partopt", Name: "window_solve_seconds",
			Help: "Worker time to solve one window, as reported in its result.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}),
		Persistent: job("job_persistent_variables", "Variables (pixels of a raster) proven persistent so far, fixed ones included, per running job."),
		Variables:  job("job_variables", "Variables (pixels of a raster) of each running job."),
		InFlight:   job("job_windows_in_flight", "Window tasks of the current round dispatched and not yet answered, per running job."),
		Round:      job("job_round", "The current round of each running job, from 1."),
	}
	reg.MustRegister(m.Dispatched, m.Skipped, m.Merged, m.Lost, m.Duplicates, m.Rejected, m.MergeSeconds, m.WindowSeconds,
		m.Persistent, m.Variables, m.InFlight, m.Round)
	return m
}

// job records a running job's state.
func (m *Metrics) job(id string, s Summary) {
	m.Persistent.WithLabelValues(id).Set(float64(s.Proven))
	m.Variables.WithLabelValues(id).Set(float64(s.Pixels))
	m.InFlight.WithLabelValues(id).Set(float64(s.InFlight))
	m.Round.WithLabelValues(id).Set(float64(s.Round + 1))
}

// Forget removes a job's series: it has ended, or another coordinator runs it.
func (m *Metrics) Forget(id string) {
	for _, v := range []*prometheus.GaugeVec{m.Persistent, m.Variables, m.InFlight, m.Round} {
		v.DeleteLabelValues(id)
	}
}

// noMetrics receives the updates of a runner without metrics.
func noMetrics() *Metrics { return NewMetrics(prometheus.NewRegistry()) }
