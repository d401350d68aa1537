package cluster_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"github.com/nats-io/nkeys"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/internal/testutil"
)

// TestConnectAuthenticates: a server that requires a token or a user and
// password admits the right credentials and refuses others with a clear error;
// contradictory options are refused before dialling.
func TestConnectAuthenticates(t *testing.T) {
	for _, c := range []struct {
		name      string
		server    server.Options
		good, bad cluster.ConnOptions
	}{
		{"token", server.Options{Authorization: "s3cret"}, cluster.ConnOptions{Token: "s3cret"}, cluster.ConnOptions{Token: "guess"}},
		{"user", server.Options{Username: "ann", Password: "pw"}, cluster.ConnOptions{User: "ann", Password: "pw"}, cluster.ConnOptions{User: "ann", Password: "no"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := c.server
			opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", server.RANDOM_PORT, true, true
			opts.JetStream, opts.StoreDir = true, t.TempDir()
			s, err := server.NewServer(&opts)
			if err != nil {
				t.Fatal(err)
			}
			go s.Start()
			if !s.ReadyForConnections(10 * time.Second) {
				t.Fatal("server not ready")
			}
			defer s.Shutdown()
			c.good.URL, c.bad.URL = s.ClientURL(), s.ClientURL()
			nc, err := cluster.Connect(c.good, "test")
			if err != nil {
				t.Fatalf("good credentials: %v", err)
			}
			if _, err := cluster.Open(context.Background(), nc, cluster.DefaultConfig()); err != nil {
				t.Fatalf("open: %v", err)
			}
			nc.Close()
			if _, err := cluster.Connect(c.bad, "test"); err == nil || !strings.Contains(err.Error(), "connect to") {
				t.Fatalf("bad credentials: %v", err)
			}
		})
	}
	for _, bad := range []cluster.ConnOptions{
		{Token: "a", User: "b"},
		{CredsFile: "x", NKeyFile: "y"},
		{TLSCert: "cert.pem"},
	} {
		if _, err := cluster.Connect(bad, "test"); err == nil {
			t.Errorf("%+v: connected", bad)
		}
	}
	if _, err := cluster.Connect(cluster.ConnOptions{NKeyFile: "/nonexistent/seed"}, "test"); err == nil || !strings.Contains(err.Error(), "nkey") {
		t.Errorf("missing nkey file: %v", err)
	}
}

// TestConnectErrorsHoldNoCredentials (issue 35): whatever fails — nothing
// listening, a URL that does not parse, credentials the server refuses, no
// cluster to attach to — the error names the server without the token or
// password its URL carried, and errors.Is still sees nats.go's error.
func TestConnectErrorsHoldNoCredentials(t *testing.T) {
	const token, password = "T0KEN-5e1f", "PASS-5e1f"
	dead := testutil.FreeAddrs(t, 1)[0]
	for _, url := range []string{
		"nats://" + token + "@" + dead,
		"nats://ann:" + password + "@" + dead,
		"nats://ann:" + password + "@" + dead + ",nats://" + token + "@" + dead,
		"ann:" + password + "@" + dead, // no scheme: nats.go adds it
	} {
		_, err := cluster.Connect(cluster.ConnOptions{URL: url}, "test")
		if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), dead) {
			t.Errorf("%s: %v", url, err)
		}
		if !errors.Is(err, nats.ErrNoServers) {
			t.Errorf("%s: %v is not nats.ErrNoServers", url, err)
		}
	}
	for _, url := range []string{"nats://ann:" + password + " x@" + dead, "nats://ann:ab/" + password + "@" + dead, "nats://ann:ab%zz" + password + "@" + dead} {
		_, err := cluster.Connect(cluster.ConnOptions{URL: url}, "test")
		if err == nil || strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "ab") || !strings.Contains(err.Error(), "does not parse") {
			t.Errorf("%q: %v", url, err)
		}
	}

	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL(), "nats://")
	_, err = cluster.Connect(cluster.ConnOptions{URL: "nats://" + token + "x@" + host}, "test")
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "nats://xxxxx@"+host) {
		t.Errorf("a refused token: %v", err)
	}
	_, err = cluster.Dial(context.Background(), cluster.ConnOptions{URL: "nats://" + token + "@" + host}, "test")
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "nats://xxxxx@"+host) {
		t.Errorf("no cluster to attach to: %v", err)
	}
}

// TestAttachChangesNothing: a client attaching before any service finds no
// cluster, with a clear error; after a service opened the resources it sees
// them, with the services' ack wait, which it does not change.
func TestAttachChangesNothing(t *testing.T) {
	nc := embeddedConn(t)
	ctx := context.Background()
	if _, err := cluster.Attach(ctx, nc, ""); !errors.Is(err, cluster.ErrNoCluster) {
		t.Fatalf("attach before any service: %v", err)
	}
	cfg := cluster.DefaultConfig()
	cfg.AckWait = 7 * time.Second
	if _, err := cluster.Open(ctx, nc, cfg); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := cluster.Attach(ctx, nc, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Config.AckWait != 7*time.Second {
			t.Fatalf("client sees ack wait %v", res.Config.AckWait)
		}
	}
}

// TestObjectReadsStopWhenCancelled: a download cancelled mid-stream returns at
// once (the JetStream client's reader alone would wait for its deadline).
func TestObjectReadsStopWhenCancelled(t *testing.T) {
	nc := embeddedConn(t)
	cfg := cluster.DefaultConfig()
	cfg.Memory = true
	res, err := cluster.Open(context.Background(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const size = 96 << 20
	if err := res.PutBytes(context.Background(), "big", make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	err = res.GetFile(ctx, "big", filepath.Join(t.TempDir(), "big"), size)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a cancelled download returned after %v (%v)", took, err)
	}
	if err == nil {
		t.Log("the download finished before the cancel: nothing to stop")
	} else if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled download: %v", err)
	}
}

// embeddedConn is a connection to a fresh embedded server, both closed at the
// end of the test.
func embeddedConn(tb testing.TB) *nats.Conn {
	tb.Helper()
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	nc, err := cluster.Connect(cluster.ConnOptions{Server: srv}, tb.Name())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// TestEmbeddedServerRequiresAuthenticationBeyondLoopback: partopt's own server
// admits only clients with its token, user and password, or a listed user's
// nkey seed (its in-process clients included), over TLS when given a certificate; one that listens beyond
// this machine without authentication refuses to start unless told --insecure;
// contradictory options are refused.
func TestEmbeddedServerRequiresAuthenticationBeyondLoopback(t *testing.T) {
	cert, key := selfSigned(t)
	seed, pub := nkeySeed(t)
	otherSeed, _ := nkeySeed(t)
	for _, c := range []struct {
		name      string
		opts      cluster.EmbeddedOptions
		good, bad cluster.ConnOptions
	}{
		{"token", cluster.EmbeddedOptions{Token: "s3cret"}, cluster.ConnOptions{Token: "s3cret"}, cluster.ConnOptions{}},
		{"user", cluster.EmbeddedOptions{User: "ann", Password: "pw"}, cluster.ConnOptions{User: "ann", Password: "pw"}, cluster.ConnOptions{User: "ann", Password: "no"}},
		{"token over TLS", cluster.EmbeddedOptions{Token: "s3cret", TLSCert: cert, TLSKey: key}, cluster.ConnOptions{Token: "s3cret", TLSCA: cert}, cluster.ConnOptions{Token: "s3cret"}},
		{"nkey", cluster.EmbeddedOptions{NKeys: []string{pub}}, cluster.ConnOptions{NKeyFile: seed}, cluster.ConnOptions{NKeyFile: otherSeed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.Dir, o.Listen = t.TempDir(), "127.0.0.1:0"
			srv, err := cluster.StartEmbedded(o)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c.good.URL, c.bad.URL = srv.URL(), srv.URL()
			if c.opts.TLSCert != "" {
				c.good.URL = strings.Replace(c.good.URL, "nats://", "tls://", 1)
			}
			nc, err := cluster.Connect(c.good, "test")
			if err != nil {
				t.Fatalf("good credentials: %v", err)
			}
			nc.Close()
			if nc, err := cluster.Connect(c.bad, "test"); err == nil {
				nc.Close()
				t.Fatal("bad credentials connected")
			}
			in, err := cluster.Connect(cluster.ConnOptions{Server: srv}, "in-process")
			if err != nil {
				t.Fatalf("the server's own in-process client: %v", err)
			}
			in.Close()
		})
	}
	for _, c := range []struct {
		opts cluster.EmbeddedOptions
		want string
	}{
		{cluster.EmbeddedOptions{Listen: "0.0.0.0:0"}, "--insecure"},
		{cluster.EmbeddedOptions{Listen: "127.0.0.1:0", Token: "t", User: "u", Password: "p"}, "not both"},
		{cluster.EmbeddedOptions{Listen: "127.0.0.1:0", User: "u"}, "password"},
		{cluster.EmbeddedOptions{Listen: "127.0.0.1:0", TLSCert: cert}, "key"},
		{cluster.EmbeddedOptions{Listen: "127.0.0.1:0", NKeys: []string{pub}, Token: "t"}, "not two"},
		{cluster.EmbeddedOptions{Listen: "127.0.0.1:0", NKeys: []string{"SUAB"}}, "public nkey"},
	} {
		c.opts.Dir = t.TempDir()
		if srv, err := cluster.StartEmbedded(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			if err == nil {
				srv.Close()
			}
			t.Errorf("%+v: %v, want an error saying %q", c.opts, err, c.want)
		}
	}
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: "0.0.0.0:0", Insecure: true})
	if err != nil {
		t.Fatalf("--insecure beyond loopback: %v", err)
	}
	srv.Close()
}

// nkeySeed writes a new user's nkey seed file and returns its path and the
// user's public key.
func nkeySeed(t *testing.T) (path, public string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	public, _ = kp.PublicKey()
	path = filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, public
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key, and
// returns their paths.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "partopt test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestGetBytesHoldsAtMostTheDeclaredSize: an object is read only when it has the
// size its reference declares, so a forged reference or a replaced object cannot
// make a reader allocate more than the reference allows.
func TestGetBytesHoldsAtMostTheDeclaredSize(t *testing.T) {
	ctx := context.Background()
	cfg := cluster.DefaultConfig()
	cfg.Memory = true
	res, err := cluster.Open(ctx, embeddedConn(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	content := make([]byte, 100<<10)
	if err := res.PutBytes(ctx, "big", content); err != nil {
		t.Fatal(err)
	}
	if got, err := res.GetBytes(ctx, "big", int64(len(content))); err != nil || len(got) != len(content) {
		t.Fatalf("the declared size: %d bytes, %v", len(got), err)
	}
	for _, size := range []int64{10, int64(len(content)) + 1, -1} {
		if got, err := res.GetBytes(ctx, "big", size); err == nil {
			t.Errorf("declared %d, the object holds %d: read %d bytes", size, len(content), len(got))
		}
	}
}

// TestEmbeddedServerNamesATakenAddress: a server asked to listen where another
// process listens says so at once, naming the address, instead of waiting for
// a listener that never comes.
func TestEmbeddedServerNamesATakenAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	_, err = cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: l.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("StartEmbedded on a taken address: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the error took %v", d)
	}
}

// TestEmbeddedServerSaysWhyItDidNotStart: a store JetStream cannot open fails
// the start at once with the server's reason, not after a silent timeout.
func TestEmbeddedServerSaysWhyItDidNotStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: file, StartTimeout: 10 * time.Minute})
	if err == nil {
		srv.Close()
		t.Fatal("a JetStream directory that is a file: started")
	}
	if !strings.Contains(err.Error(), "JetStream") || strings.Contains(err.Error(), "within") {
		t.Errorf("error %q: want JetStream's reason, not a timeout", err)
	}
	if d := time.Since(begin); d > 5*time.Minute {
		t.Errorf("the failed start took %s: it waited for the timeout", d)
	}
}
