package service

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/partopt/partopt/coordinator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// registry holds the process's Prometheus metrics (the coordinator's, Go's and
// the process's own).
var registry = newRegistry()

func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo(), gauges)
	return r
}

// Metrics returns the coordinator metrics, registered once per process.
var Metrics = sync.OnceValue(func() *coordinator.Metrics { return coordinator.NewMetrics(registry) })

// ServeStatus serves the status page of jobs and /metrics at addr until ctx
// ends; note is told the address. The channel is closed once the server has
// stopped and released addr.
func ServeStatus(ctx context.Context, addr string, note func(string), jobs func() []coordinator.JobView) (<-chan error, error) {
	_, stopped, err := servePage(ctx, addr, note, &coordinator.StatusPage{Jobs: jobs})
	return stopped, err
}

// servePage serves page (with the process's registry) at addr until ctx ends
// and returns the address it listens on.
func servePage(ctx context.Context, addr string, note func(string), page *coordinator.StatusPage) (net.Addr, <-chan error, error) {
	page.Gatherer = registry
	bound, stopped, err := coordinator.ListenStatus(ctx, addr, page.Handler())
	if err != nil {
		return nil, nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	noteFunc(note)(fmt.Sprintf("status page at http://%s/ (metrics at /metrics)", bound))
	return bound, stopped, nil
}

// pageURL is the URL other replicas reach a page listening on bound at: its
// address, or this host's name where it listens on every interface.
func pageURL(bound net.Addr) string {
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "http://" + bound.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil {
			host = name
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// StatusLine is the one-line status of a job.
func StatusLine(s coordinator.Summary) string {
	var b strings.Builder
	proven := 1.0
	if s.Pixels > 0 {
		proven = float64(s.Proven) / float64(s.Pixels)
	}
	phase := s.Phase
	if s.Method != "" && (phase == coordinator.Running.String() || phase == coordinator.PhaseResuming) {
		phase = s.Method + " " + phase // which stage of a pbp+iri job
	}
	fmt.Fprintf(&b, "job %s: %s, round %d (%d done), windows %d/%d, in flight %d, lost %d, persistent %.1f%% of %d %s",
		s.Job, phase, s.Round+1, s.Rounds, s.Merged, s.Windows, s.InFlight, s.Lost, 100*proven, s.Pixels, s.Unit())
	if s.Eliminated > 0 {
		fmt.Fprintf(&b, ", %d labels eliminated (window level %d)", s.Eliminated, s.Level)
	}
	if s.Err != "" {
		fmt.Fprintf(&b, ": %s", s.Err)
	}
	if Stale(s, time.Now()) {
		fmt.Fprintf(&b, "; no coordinator has updated it for %v: are the coordinators running?", time.Since(s.Updated).Round(time.Second))
	}
	return b.String()
}

// StaleAfter is how long a job that has not ended may go without its status
// updated before clients say no coordinator seems to run it: a coordinator
// stores a running job's status every second, and a job it loads, finishes
// or stores every statusHeartbeat.
const StaleAfter = 30 * time.Second

// Stale says whether s is the status of a job that has not ended and that no
// coordinator has updated for StaleAfter at now.
func Stale(s coordinator.Summary, now time.Time) bool {
	return !Ended(s.Phase) && !s.Updated.IsZero() && now.Sub(s.Updated) > StaleAfter
}

// Ended says whether a job phase is final.
func Ended(phase string) bool { return phase == "done" || phase == "canceled" || phase == "failed" }
