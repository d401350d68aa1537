package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/partopt/partopt/coordinator"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
)

// registry holds the process's Prometheus metrics (the coordinator's, Go's and
// the process's own).
var registry = newRegistry()

func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// serviceMetrics returns the coordinator metrics, registered once per process.
var serviceMetrics = sync.OnceValue(func() *coordinator.Metrics { return coordinator.NewMetrics(registry) })

// serveStatus serves the status page of jobs at addr until ctx ends.
func serveStatus(ctx context.Context, cmd *cobra.Command, addr string, jobs func() []coordinator.JobView) error {
	page := &coordinator.StatusPage{Jobs: jobs, Gatherer: registry}
	bound, _, err := coordinator.ListenStatus(ctx, addr, page.Handler())
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "partopt: status page at http://%s/ (metrics at /metrics)\n", bound)
	return nil
}

// livePNG renders the persistency map of label files being written (label files
// allow reads while windows are merged).
func livePNG(files *rasterFiles) func(w io.Writer, maxSide int) error {
	return func(w io.Writer, maxSide int) error {
		return labelfile.RenderPNG(w, files.labels, files.persistent, maxSide)
	}
}
