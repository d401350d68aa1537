package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// EmbeddedOptions configure an in-process NATS server.
type EmbeddedOptions struct {
	// Dir holds JetStream's files (required): a temporary directory for a
	// one-off run, a kept one for a run that may resume.
	Dir string
	// Listen, when set, is a host:port where other processes (workers on other
	// machines) can connect too; port 0 picks a free one. Empty: in-process only.
	Listen string
	// MaxPayload overrides the server's message size limit (default 1 MiB).
	MaxPayload int32
	// Clients authenticate with Token, or with User and Password (one of the
	// two); TLSCert and TLSKey make the server speak TLS only. The server's own
	// in-process connections (ConnOptions.Server) authenticate the same way.
	Token, User, Password string
	// NKeys are the public nkeys (U…) of users who may connect by signing with
	// their seed (ConnOptions.NKeyFile); the server's own in-process
	// connections then sign with a key of their own, made at start.
	NKeys           []string
	TLSCert, TLSKey string
	// Insecure lets a server that listens beyond this machine (Listen not on a
	// loopback address) accept clients without authentication; without it such a
	// server refuses to start: a cluster's NATS gives whoever reaches it the
	// power to submit jobs, forge results and read models.
	Insecure bool
	// StartTimeout bounds the wait for the server to accept connections
	// (default 1 h). A kept Dir is recovered before the server listens, and
	// after a crash that takes minutes for a large job's store (17 GB: over
	// 30 s); the wait logs its progress every 15 s meanwhile.
	StartTimeout time.Duration
}

// auth checks the options' authentication and returns the server options that
// enforce it.
func (o EmbeddedOptions) auth(opts *server.Options, host string) error {
	switch {
	case o.Token != "" && (o.User != "" || o.Password != ""):
		return errors.New("nats: give a token or a user and password, not both")
	case (o.User == "") != (o.Password == ""):
		return errors.New("nats: a user needs a password, and a password a user")
	case len(o.NKeys) > 0 && (o.Token != "" || o.User != ""):
		return errors.New("nats: give nkeys, a token, or a user and password, not two of them")
	case (o.TLSCert == "") != (o.TLSKey == ""):
		return errors.New("nats: TLS needs both the certificate and the key file")
	case o.Listen != "" && !loopback(host) && o.Token == "" && o.User == "" && len(o.NKeys) == 0 && !o.Insecure:
		return fmt.Errorf("nats: listening on %s, beyond this machine, without authentication: give --token, --user and --password, or --nkey-user (with --tls-cert and --tls-key for TLS), or --insecure to accept anyone who reaches the address", o.Listen)
	}
	opts.Authorization, opts.Username, opts.Password = o.Token, o.User, o.Password
	for _, k := range o.NKeys {
		if !nkeys.IsValidPublicUserKey(k) {
			return fmt.Errorf("nats: %q is not a user's public nkey (U…, from nk -gen user -pubout)", k)
		}
		opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: k})
	}
	if o.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.TLSCert, KeyFile: o.TLSKey})
		if err != nil {
			return fmt.Errorf("nats: TLS: %w", err)
		}
		opts.TLSConfig, opts.TLS = tc, true
	}
	return nil
}

// loopback says whether host names this machine only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Embedded is a running in-process NATS server with JetStream.
type Embedded struct {
	Server *server.Server
	// what its in-process clients authenticate with
	token, user, password string
	nkey                  nkeys.KeyPair
}

// StartEmbedded starts a server and waits until it accepts connections.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	if o.Dir == "" {
		return nil, errors.New("nats: the embedded server needs a directory for JetStream")
	}
	opts := &server.Options{
		ServerName: "partopt-embedded", JetStream: true, StoreDir: o.Dir,
		NoLog: true, NoSigs: true, DontListen: o.Listen == "", MaxPayload: o.MaxPayload,
		DisableJetStreamBanner: true,
	}
	if o.Listen != "" {
		host, port, err := splitHostPort(o.Listen)
		if err != nil {
			return nil, err
		}
		opts.Host, opts.Port = host, port
		if port == 0 {
			opts.Port = server.RANDOM_PORT
		} else if err := portFree(host, port); err != nil {
			return nil, err
		}
	}
	if err := o.auth(opts, opts.Host); err != nil {
		return nil, err
	}
	var own nkeys.KeyPair // the in-process clients' key, beside the users'
	if len(opts.Nkeys) > 0 {
		var err error
		if own, err = nkeys.CreateUser(); err != nil {
			return nil, err
		}
		pub, _ := own.PublicKey()
		opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: pub})
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats: embedded server: %w", err)
	}
	fatal := &startLog{}
	s.SetLoggerV2(fatal, false, false, false)
	if err := waitStarted(s, fatal, o.Dir, o.StartTimeout); err != nil {
		return nil, err
	}
	return &Embedded{Server: s, token: o.Token, user: o.User, password: o.Password, nkey: own}, nil
}

// waitStarted starts s and waits until it accepts connections, the start
// fails (JetStream cannot recover its store: the error the server logged is
// returned) or timeout passes.
func waitStarted(s *server.Server, fatal *startLog, dir string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Hour
	}
	started := make(chan struct{})
	go func() { s.Start(); close(started) }()
	begin, said := time.Now(), time.Now()
	for !s.ReadyForConnections(200 * time.Millisecond) {
		select {
		case <-started:
			if s.ReadyForConnections(time.Second) {
				return nil
			}
			s.Shutdown()
			if msg := fatal.last(); msg != "" {
				return fmt.Errorf("nats: the embedded server did not start: %s", msg)
			}
			return errors.New("nats: the embedded server stopped while starting")
		default:
		}
		if time.Since(begin) >= timeout {
			s.Shutdown()
			return fmt.Errorf("nats: the embedded server did not start within %s (recovering %s?)", timeout, dir)
		}
		if time.Since(said) >= 15*time.Second {
			said = time.Now()
			slog.Info("the embedded NATS server is still starting: JetStream recovers its store",
				"dir", dir, "waited", time.Since(begin).Round(time.Second))
		}
	}
	return nil
}

// startLog keeps the last error the server logs, to say why it did not
// start; the server's other log lines are dropped (the embedded server is quiet).
type startLog struct {
	mu  sync.Mutex
	msg string
}

func (l *startLog) keep(format string, v []any) {
	l.mu.Lock()
	l.msg = fmt.Sprintf(format, v...)
	l.mu.Unlock()
}

func (l *startLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.msg
}

func (l *startLog) Fatalf(format string, v ...any) { l.keep(format, v) }
func (l *startLog) Errorf(format string, v ...any) { l.keep(format, v) }
func (*startLog) Noticef(string, ...any)           {}
func (*startLog) Warnf(string, ...any)             {}
func (*startLog) Debugf(string, ...any)            {}
func (*startLog) Tracef(string, ...any)            {}

// portFree says whether host:port can be listened on: the server itself,
// quiet, would only wait for its listener until its start times out.
func portFree(host string, port int) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("nats: listen address %s is in use (another server or cluster?): choose another port", addr)
		}
		return fmt.Errorf("nats: listen address %s: %w", addr, err)
	}
	return l.Close()
}

// URL is where other processes connect ("" when the server does not listen).
func (e *Embedded) URL() string {
	if e.Server.Addr() == nil {
		return ""
	}
	return e.Server.ClientURL()
}

// Close shuts the server down and waits for it.
func (e *Embedded) Close() {
	e.Server.Shutdown()
	e.Server.WaitForShutdown()
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("nats: listen address %q: want host:port", addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("nats: listen address %q: bad port", addr)
	}
	if host == "" {
		host = "127.0.0.1" // never all interfaces unless asked
	}
	return host, port, nil
}
