// Package cluster connects partopt's processes to NATS: the connection options
// every command accepts (URL, credentials, TLS), an embedded NATS server with
// JetStream for runs without a cluster, and the JetStream resources the
// coordinator and the workers share (streams, consumers, object store, key-value
// bucket, named in package protocol).
//
// A process connects and opens the resources once:
//
//	nc, err := cluster.Connect(cluster.ConnOptions{URL: "nats://host:4222", CredsFile: f}, "partopt-worker")
//	res, err := cluster.Open(ctx, nc, cluster.DefaultConfig())
//	// res.Tasks, res.Results, res.Workers, res.Objects, res.Jobs
//
// Open (the services: coordinators, workers) creates what is missing and brings
// the configuration to theirs, so they may start in any order; Attach (the
// clients: submit, status, fetch, cancel) only opens what exists, changing
// nothing. On one machine, StartEmbedded runs the server in-process:
//
//	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: tmp})
//	nc, err := cluster.Connect(cluster.ConnOptions{Server: srv}, "partopt-run")
package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/partopt/partopt/internal/redact"
	"github.com/synadia-io/orbit.go/natscontext"
)

// ConnOptions are how a process reaches NATS. At most one of CredsFile, NKeyFile,
// Token and User/Password is used.
type ConnOptions struct {
	URL string // nats://host:port, several comma-separated for a cluster
	// CredsFile is a JWT user credentials file; NKeyFile an nkey seed file.
	CredsFile, NKeyFile string
	Token               string
	User, Password      string
	// TLSCA verifies the server; TLSCert and TLSKey are a client certificate.
	TLSCA, TLSCert, TLSKey string
	// Context names a context of the nats CLI (~/.config/nats/context/NAME.json,
	// github.com/synadia-io/orbit.go/natscontext): its URL and credentials,
	// under the options given here, which take precedence.
	Context string
	// Namespace is the cluster's namespace on the server ("": the default,
	// protocol.DefaultNamespace): Dial and DialService open its resources.
	Namespace string
	// Server, when set, is an in-process server (StartEmbedded) reached without a
	// socket; URL is then ignored.
	Server *Embedded
}

// Connect opens a connection named name (it shows in the server's monitoring),
// reconnecting for ever: a job outlives server restarts.
func Connect(o ConnOptions, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond)}
	auth := 0
	if e := o.Server; e != nil && o.Token == "" && o.User == "" && o.CredsFile == "" && o.NKeyFile == "" {
		o.Token, o.User, o.Password = e.token, e.user, e.password // its own clients
		if e.nkey != nil {
			pub, _ := e.nkey.PublicKey()
			opts = append(opts, nats.Nkey(pub, e.nkey.Sign))
			auth++
		}
	}
	if o.CredsFile != "" {
		auth++
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.NKeyFile != "" {
		auth++
		opt, err := nats.NkeyOptionFromSeed(o.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats: nkey seed file %s: %w", o.NKeyFile, err)
		}
		opts = append(opts, opt)
	}
	if o.Token != "" {
		auth++
		opts = append(opts, nats.Token(o.Token))
	}
	if o.User != "" || o.Password != "" {
		auth++
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if auth > 1 {
		return nil, errors.New("nats: give one of credentials file, nkey file, token and user/password")
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("nats: a TLS client certificate needs both the certificate and the key file")
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.Context != "" && o.Server == nil {
		nc, _, err := natscontext.Connect(o.Context, opts...)
		if err != nil { // the context's URL may carry credentials
			return nil, fmt.Errorf("nats: connect with context %s: %w", o.Context, connectError(err))
		}
		return nc, nil
	}
	servers := o.URL
	if o.Server != nil {
		opts = append(opts, nats.InProcessServer(o.Server.Server))
		servers = ""
	} else if servers == "" {
		servers = nats.DefaultURL
	}
	nc, err := nats.Connect(servers, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", o.display(), connectError(err))
	}
	return nc, nil
}

// display is where o connects, as messages name it: its URLs without their
// credentials (redact.URL), or the embedded server.
func (o ConnOptions) display() string {
	switch {
	case o.Server != nil:
		return "the embedded server"
	case o.URL == "":
		return nats.DefaultURL
	}
	return redact.URL(o.URL)
}

// connectError is err of nats.Connect without the credentials it may quote:
// a URL that does not parse is named by url.Parse's error with the URL in
// full, and its reason quotes a part of it (invalid port ":PASS"), so neither
// is kept.
func connectError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.New("a server URL does not parse (percent-encode the characters of a user name, password or token that a URL cannot hold: space, / ? # @ % and quotes)")
	}
	return redact.Error(err)
}
