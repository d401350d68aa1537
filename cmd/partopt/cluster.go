// The cluster's services: server, coordinator and worker, all reaching NATS
// with the same flags (the clients are in jobs.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/replica"
	"github.com/partopt/partopt/service"
	"github.com/partopt/partopt/worker"
	"github.com/spf13/cobra"
)

// natsFlags are the connection flags every cluster command takes.
type natsFlags struct {
	cluster.ConnOptions
	tokenFile, passwordFile string
	ackWait                 time.Duration // services only
	replicas                int           // services only
}

// authFlags are the flags that choose how to authenticate: given any, the
// credentials of the environment are ignored.
var authFlags = []string{"creds", "nkey", "token", "token-file", "user", "password", "password-file"}

// conn is the connection of cmd's flags, completed from the environment as the
// nats CLI reads it (NATS_URL, NATS_CONTEXT; NATS_CREDS, NATS_NKEY, NATS_TOKEN, NATS_USER
// and NATS_PASSWORD unless an authentication flag is given; NATS_CA,
// NATS_CERT, NATS_KEY) and from the secret files, so that no secret need
// appear in a command line (ps shows those).
func (n *natsFlags) conn(cmd *cobra.Command) (cluster.ConnOptions, error) {
	o := n.ConnOptions
	fl := cmd.Flags()
	env := func(flag, name string, dst *string) {
		if !fl.Changed(flag) {
			if v := os.Getenv(name); v != "" {
				*dst = v
			}
		}
	}
	env("nats", "NATS_URL", &o.URL)
	if fl.Changed("nats") && strings.Contains(o.URL, "@") {
		logger(cmd, slog.LevelInfo).Warn("--nats holds credentials, which ps shows to every user of this machine: give the URL in $NATS_URL, or the secret in --token-file, --password-file, --creds or --nkey")
	}
	if !slices.ContainsFunc(authFlags, fl.Changed) {
		env("creds", "NATS_CREDS", &o.CredsFile)
		env("nkey", "NATS_NKEY", &o.NKeyFile)
		env("token", "NATS_TOKEN", &o.Token)
		env("user", "NATS_USER", &o.User)
		env("password", "NATS_PASSWORD", &o.Password)
	}
	env("tls-ca", "NATS_CA", &o.TLSCA)
	env("tls-cert", "NATS_CERT", &o.TLSCert)
	env("tls-key", "NATS_KEY", &o.TLSKey)
	env("context", "NATS_CONTEXT", &o.Context)
	var err error
	if o.Token, err = secret("token", o.Token, n.tokenFile); err != nil {
		return o, err
	}
	o.Password, err = secret("password", o.Password, n.passwordFile)
	return o, err
}

// secret is the value of --NAME, or the content of --NAME-file (one of them).
func secret(name, value, file string) (string, error) {
	if file == "" {
		return value, nil
	}
	if value != "" {
		return "", fmt.Errorf("--%s and --%s-file: give one", name, name)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--%s-file: %w", name, err)
	}
	v := strings.TrimRight(string(data), "\r\n")
	if v == "" {
		return "", fmt.Errorf("--%s-file %s is empty", name, file)
	}
	return v, nil
}

func addNATSFlags(cmd *cobra.Command, n *natsFlags) {
	fl := cmd.Flags()
	// $NATS_URL is read when the command runs (conn), not shown as the
	// default in the help: it may hold credentials.
	fl.StringVar(&n.URL, "nats", "", "NATS server URL(s), comma-separated (default $NATS_URL, else "+nats.DefaultURL+"; credentials in it belong in $NATS_URL, not in this flag, which ps shows)")
	ns := os.Getenv("PARTOPT_NAMESPACE")
	if ns == "" {
		ns = protocol.DefaultNamespace
	}
	fl.StringVar(&n.Namespace, "namespace", ns, "the cluster's namespace on the NATS server: clusters of different namespaces share it without seeing each other's jobs ($PARTOPT_NAMESPACE)")
	fl.StringVar(&n.Context, "context", "", "a context of the nats CLI (~/.config/nats/context/NAME.json) for the URL and credentials ($NATS_CONTEXT)")
	fl.StringVar(&n.CredsFile, "creds", "", "NATS user credentials (JWT) file ($NATS_CREDS)")
	fl.StringVar(&n.NKeyFile, "nkey", "", "NATS nkey seed file ($NATS_NKEY)")
	fl.StringVar(&n.Token, "token", "", "NATS authentication token ($NATS_TOKEN; visible in ps: prefer --token-file or the variable)")
	fl.StringVar(&n.tokenFile, "token-file", "", "file holding the NATS authentication token")
	fl.StringVar(&n.User, "user", "", "NATS user name ($NATS_USER)")
	fl.StringVar(&n.Password, "password", "", "NATS password ($NATS_PASSWORD; visible in ps: prefer --password-file or the variable)")
	fl.StringVar(&n.passwordFile, "password-file", "", "file holding the NATS password")
	fl.StringVar(&n.TLSCA, "tls-ca", "", "CA certificate file to verify the server ($NATS_CA)")
	fl.StringVar(&n.TLSCert, "tls-cert", "", "client certificate file ($NATS_CERT)")
	fl.StringVar(&n.TLSKey, "tls-key", "", "client key file ($NATS_KEY)")
}

// addServiceFlags are the flags of the services, which configure the JetStream
// resources (clients leave them as they are): give every worker and
// coordinator the same values.
func addServiceFlags(cmd *cobra.Command, n *natsFlags) {
	cmd.Flags().DurationVar(&n.ackWait, "ack-wait", cluster.DefaultConfig().AckWait, "how long a task may go without a worker's heartbeat before another worker gets it: what a crashed worker costs")
	cmd.Flags().IntVar(&n.replicas, "stream-replicas", 1, "replicas of partopt's streams and buckets on a NATS cluster (3 survives the loss of a NATS node)")
}

// serve connects a long-running process (coordinator, worker) to the cluster as
// name, waiting for NATS to come up. Stopped by a signal while it waits is not
// a failure: no resources and no error.
func (n *natsFlags) serve(ctx context.Context, cmd *cobra.Command, name string, log *slog.Logger) (*cluster.Resources, error) {
	conn, err := n.conn(cmd)
	if err != nil {
		return nil, err
	}
	res, err := cluster.DialWaiting(ctx, conn, n.config(), name, log)
	if err != nil && ctx.Err() != nil {
		return nil, nil
	}
	return res, err
}

// config is the JetStream configuration of the services' flags.
func (n natsFlags) config() cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.AckWait, cfg.Replicas = n.ackWait, n.replicas
	return cfg
}

// raftFlags configure a coordinator replica.
type raftFlags struct {
	id, addr, dir, peers string
	bootstrap            bool
	timeouts             replica.Timeouts
}

func (f raftFlags) config(data string, log *slog.Logger) (*replica.Config, error) {
	cfg := &replica.Config{ID: f.id, Bind: f.addr, Dir: f.dir, Bootstrap: f.bootstrap, Timeouts: f.timeouts, Log: log}
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(data, "raft")
	}
	for _, p := range strings.Split(f.peers, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || id == "" || addr == "" {
			return cfg, fmt.Errorf("--peers %q: want ID=HOST:PORT,ID=HOST:PORT,…", f.peers)
		}
		cfg.Peers = append(cfg.Peers, replica.Peer{ID: id, Addr: addr})
	}
	if f.id == "" {
		return cfg, errors.New("--id: a replica needs its raft id (one of --peers)")
	}
	return cfg, nil
}

func newCoordinatorCmd() *cobra.Command {
	var n natsFlags
	var rf raftFlags
	var cfg service.Config
	cmd := &cobra.Command{
		Use:   "coordinator --nats URL --data DIR [--id ID --raft-addr HOST:PORT --peers ID=HOST:PORT,…]",
		Short: "Run the jobs submitted to the cluster: dispatch windows, merge results, write outputs",
		Long:  help("coordinator"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg.Log = logger(cmd, slog.LevelInfo)
			if rf.addr != "" {
				var err error
				if cfg.Raft, err = rf.config(cfg.Data, cfg.Log); err != nil {
					return err
				}
			}
			if err := os.MkdirAll(cfg.Data, 0o755); err != nil {
				return err
			}
			res, err := n.serve(ctx, cmd, "partopt-coordinator", cfg.Log)
			if res == nil {
				return err
			}
			defer res.Conn.Close()
			cfg.Res = res
			return service.Serve(ctx, cfg)
		},
	}
	addNATSFlags(cmd, &n)
	addServiceFlags(cmd, &n)
	fl := cmd.Flags()
	fl.StringVar(&cfg.Data, "data", "partopt-data", "directory for the jobs' label files and outputs (in DATA/jobs) and, by default, the raft state (DATA/raft)")
	fl.StringVar(&cfg.HTTP, "http", "localhost:8222", "status page and /metrics address (empty: none)")
	fl.StringVar(&cfg.AdvertiseHTTP, "advertise-http", "", "the URL at which the other replicas reach this one's status page, which their pages serve while it leads (default: the --http address, or this host's name with its port)")
	fl.StringArrayVar(&cfg.SharedRoots, "shared-root", nil, "a directory below which jobs may name their model by path (submit --shared; repeatable; none: uploaded models only)")
	fl.DurationVar(&cfg.DataRetention, "data-retention", 0, "how long a finished job's files stay in --data (0: removed when it ends; its outputs are in the object store)")
	fl.DurationVar(&cfg.OutputRetention, "output-retention", 0, "how long a finished job's outputs stay in the object store for fetch (0: until deleted)")
	fl.DurationVar(&cfg.JobRetention, "job-retention", 0, "how long a finished job is kept at all — status, outputs, table entry — before the leader deletes it as partopt delete does (0: until deleted)")
	fl.StringVar(&rf.id, "id", "", "this replica's raft id (with --raft-addr)")
	fl.StringVar(&rf.addr, "raft-addr", "", "this replica's raft address HOST:PORT (empty: a single coordinator)")
	fl.StringVar(&rf.dir, "raft-dir", "", "raft log and snapshots (default DATA/raft)")
	fl.StringVar(&rf.peers, "peers", "", "every replica as ID=HOST:PORT, comma-separated, this one included")
	fl.BoolVar(&rf.bootstrap, "bootstrap", false, "form the replica group from --peers if this replica has no raft state yet")
	d := replica.DefaultTimeouts
	fl.DurationVar(&rf.timeouts.Heartbeat, "raft-heartbeat-timeout", d.Heartbeat, "how long a follower hears nothing from the leader before it calls an election: shorter fails over faster, but a loaded machine's leader then looks dead")
	fl.DurationVar(&rf.timeouts.Election, "raft-election-timeout", d.Election, "how long a candidate waits for votes (at least --raft-heartbeat-timeout)")
	fl.DurationVar(&rf.timeouts.LeaderLease, "raft-lease-timeout", d.LeaderLease, "how long a leader goes without reaching a quorum before it steps down (at most --raft-heartbeat-timeout)")
	return cmd
}

func newWorkerCmd() *cobra.Command {
	var n natsFlags
	var o worker.Options
	var httpAddr string
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
			o.Log = logger(cmd, slog.LevelInfo)
			res, err := n.serve(ctx, cmd, "partopt-worker", o.Log)
			if res == nil {
				return err
			}
			defer res.Conn.Close()
			var stats worker.Stats
			if httpAddr != "" {
				o.Observe = service.WorkerMetrics(&stats, o.Slots)
				if _, err := service.ServeMetrics(ctx, httpAddr, func(msg string) { o.Log.Info(msg) }); err != nil {
					return err
				}
			}
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
	fl.StringArrayVar(&o.SharedRoots, "shared-root", nil, "a directory below which jobs may name their model by path (submit --shared; repeatable; none: uploaded models only)")
	fl.DurationVar(&o.Grace, "grace", 30*time.Second, "at shutdown, how long running tasks may finish before they are handed back")
	fl.StringVar(&httpAddr, "http", "", "serve Prometheus /metrics (windows solved, failed, seconds per window, slots busy) at this address (empty: none)")
	return cmd
}

func newServerCmd() *cobra.Command {
	var o cluster.EmbeddedOptions
	var secrets func() error
	cmd := &cobra.Command{
		Use:   "server --listen HOST:PORT --dir DIR [--token T | --user U --password P] [--tls-cert F --tls-key F]",
		Short: "Run a NATS server with JetStream for a cluster (no separate install)",
		Long: `Run the NATS server that "partopt run" embeds as a process of its own, for a
cluster of coordinator and workers on machines that reach HOST:PORT. JetStream
keeps its files in --dir, so jobs survive a restart.

Whoever reaches the server can submit jobs, read models and publish results, so
a server that listens beyond this machine (HOST not a loopback address) needs
authentication: --token, or --user and --password, which every coordinator,
worker and client then gives with the same flags (--tls-cert and --tls-key add
TLS; clients verify it with --tls-ca). --insecure accepts anyone instead. For
accounts, nkeys or JWT credentials, run nats-server itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.Listen == "" {
				return fmt.Errorf("--listen: give HOST:PORT")
			}
			if err := secrets(); err != nil {
				return err
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
	secrets = addServerAuthFlags(cmd, &o)
	return cmd
}

// addServerAuthFlags are the authentication flags of an embedded server that
// listens: the names the clients' flags have. resolve reads the secret files
// into o (call it before starting the server).
func addServerAuthFlags(cmd *cobra.Command, o *cluster.EmbeddedOptions) (resolve func() error) {
	var tokenFile, passwordFile string
	fl := cmd.Flags()
	fl.StringVar(&o.Token, "token", "", "clients must give this token (--token; visible in ps: prefer --token-file)")
	fl.StringVar(&tokenFile, "token-file", "", "file holding the token clients must give")
	fl.StringVar(&passwordFile, "password-file", "", "file holding the password of --user")
	fl.StringVar(&o.User, "user", "", "clients must give this user (--user) and password")
	fl.StringVar(&o.Password, "password", "", "the password of --user")
	fl.StringArrayVar(&o.NKeys, "nkey-user", nil, "a user's public nkey (U…; repeatable): clients sign with its seed (--nkey SEEDFILE)")
	fl.StringVar(&o.TLSCert, "tls-cert", "", "server certificate file: TLS only")
	fl.StringVar(&o.TLSKey, "tls-key", "", "server key file")
	fl.BoolVar(&o.Insecure, "insecure", false, "listen beyond this machine without authentication (anyone who reaches it may submit and forge)")
	return func() error {
		var err error
		if o.Token, err = secret("token", o.Token, tokenFile); err != nil {
			return err
		}
		o.Password, err = secret("password", o.Password, passwordFile)
		return err
	}
}
