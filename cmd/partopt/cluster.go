// The cluster commands: server, worker, submit, status, fetch and cancel (the
// coordinator is in coordinator.go), all reaching NATS with the same flags.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/worker"
	"github.com/spf13/cobra"
)

// natsFlags are the connection flags every cluster command takes.
type natsFlags struct {
	cluster.ConnOptions
	ackWait  time.Duration // services only
	replicas int           // services only
}

func addNATSFlags(cmd *cobra.Command, n *natsFlags) {
	fl := cmd.Flags()
	def := os.Getenv("NATS_URL")
	if def == "" {
		def = nats.DefaultURL
	}
	fl.StringVar(&n.URL, "nats", def, "NATS server URL(s), comma-separated (default $NATS_URL)")
	fl.StringVar(&n.CredsFile, "creds", "", "NATS user credentials (JWT) file")
	fl.StringVar(&n.NKeyFile, "nkey", "", "NATS nkey seed file")
	fl.StringVar(&n.Token, "token", "", "NATS authentication token")
	fl.StringVar(&n.User, "user", "", "NATS user name")
	fl.StringVar(&n.Password, "password", "", "NATS password")
	fl.StringVar(&n.TLSCA, "tls-ca", "", "CA certificate file to verify the server")
	fl.StringVar(&n.TLSCert, "tls-cert", "", "client certificate file")
	fl.StringVar(&n.TLSKey, "tls-key", "", "client key file")
}

// addServiceFlags are the flags of the services, which configure the JetStream
// resources (clients leave them as they are): give every worker and
// coordinator the same values.
func addServiceFlags(cmd *cobra.Command, n *natsFlags) {
	cmd.Flags().DurationVar(&n.ackWait, "ack-wait", cluster.DefaultConfig().AckWait, "how long a task may go without a worker's heartbeat before another worker gets it: what a crashed worker costs")
	cmd.Flags().IntVar(&n.replicas, "stream-replicas", 1, "replicas of partopt's streams and buckets on a NATS cluster (3 survives the loss of a NATS node)")
}

// open connects and attaches to the resources the services created (clients).
func (n natsFlags) open(ctx context.Context, name string) (*cluster.Resources, error) {
	nc, err := cluster.Connect(n.ConnOptions, name)
	if err != nil {
		return nil, err
	}
	res, err := cluster.Attach(ctx, nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", n.URL, err)
	}
	return res, nil
}

// openService connects and creates or configures the resources (services).
func (n natsFlags) openService(ctx context.Context, name string) (*cluster.Resources, error) {
	nc, err := cluster.Connect(n.ConnOptions, name)
	if err != nil {
		return nil, err
	}
	cfg := cluster.DefaultConfig()
	cfg.AckWait, cfg.Replicas = n.ackWait, n.replicas
	res, err := cluster.Open(ctx, nc, cfg)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w (is JetStream enabled on the server?)", n.URL, err)
	}
	return res, nil
}

// openWaiting is openService that, while NATS cannot be reached, tries again
// every second, logging once, until ctx ends: services of a cluster start in
// any order.
func (n natsFlags) openWaiting(ctx context.Context, name string, log *slog.Logger) (*cluster.Resources, error) {
	for logged := false; ; logged = true {
		res, err := n.openService(ctx, name)
		if err == nil || ctx.Err() != nil {
			return res, err
		}
		if !logged {
			log.Warn("waiting for NATS", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}

func newWorkerCmd() *cobra.Command {
	var n natsFlags
	var o worker.Options
	cmd := &cobra.Command{
		Use:   "worker --nats URL",
		Short: "Solve window tasks of the cluster's jobs until stopped (SIGINT/SIGTERM)",
		Long: `Pull window tasks from the cluster, one per slot, solve them and publish the
results. A worker may start or stop at any time: on SIGINT or SIGTERM it stops
taking tasks, lets running ones finish for up to --grace, then hands the rest
back to the cluster for another worker. Models come from the path in the job
(a filesystem every worker shares) or from the object store, downloaded into
--cache.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Slots < 1 {
				return fmt.Errorf("--slots %d: want at least 1", o.Slots)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			res, err := n.openWaiting(ctx, "partopt-worker", o.Log)
			if err != nil {
				return err
			}
			defer res.Conn.Close()
			var stats worker.Stats
			err = worker.Serve(ctx, res, o, &stats)
			o.Log.Info("worker stopped", "solved", stats.Solved.Load(), "rejected", stats.Rejected.Load(), "failed", stats.Failed.Load(), "returned", stats.Returned.Load())
			return err
		},
	}
	addNATSFlags(cmd, &n)
	addServiceFlags(cmd, &n)
	fl := cmd.Flags()
	fl.IntVar(&o.Slots, "slots", runtime.NumCPU(), "tasks solved at once")
	fl.StringVar(&o.ID, "id", "", "worker name in results and logs (default host-pid)")
	fl.StringVar(&o.CacheDir, "cache", "", "directory for downloaded models (default in the temporary directory)")
	fl.DurationVar(&o.Grace, "grace", 30*time.Second, "at shutdown, how long running tasks may finish before they are handed back")
	return cmd
}

func newServerCmd() *cobra.Command {
	var o cluster.EmbeddedOptions
	cmd := &cobra.Command{
		Use:   "server --listen HOST:PORT --dir DIR",
		Short: "Run a NATS server with JetStream for a cluster (no separate install)",
		Long: `Run the NATS server that "partopt run" embeds as a process of its own, for a
cluster of coordinator and workers on machines that reach HOST:PORT. JetStream
keeps its files in --dir, so jobs survive a restart. For production, a
nats-server deployment with authentication and TLS is the better choice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.Listen == "" {
				return fmt.Errorf("--listen: give HOST:PORT")
			}
			srv, err := cluster.StartEmbedded(o)
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", srv.URL())
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:4222", "address to listen on (port 0: any free port, printed)")
	cmd.Flags().StringVar(&o.Dir, "dir", "partopt-nats", "JetStream storage directory")
	return cmd
}
