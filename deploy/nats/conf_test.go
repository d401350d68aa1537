// Package nats_test checks deploy/nats/nats-server.conf with the nats-server
// that partopt embeds: the file parses, enables JetStream with the default
// max_payload, and its commented cluster block parses once uncommented.
package nats_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

const conf = "nats-server.conf"

// TestConfigEnablesJetStream: the server starts from the file (its store_dir
// moved to a temporary directory, its port to a free one) with JetStream on
// and the 1 MiB default max_payload partopt is built for.
func TestConfigEnablesJetStream(t *testing.T) {
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if !opts.JetStream || opts.StoreDir != "/data" {
		t.Errorf("jetstream %v, store_dir %q: want enabled in /data", opts.JetStream, opts.StoreDir)
	}
	if opts.MaxPayload != 0 || opts.HTTPPort != 0 || opts.Cluster.Port != 0 {
		t.Errorf("max_payload %d, http_port %d, cluster port %d: want all left unset", opts.MaxPayload, opts.HTTPPort, opts.Cluster.Port)
	}
	opts.StoreDir = t.TempDir()
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready in 10s")
	}
	if !s.JetStreamEnabled() {
		t.Error("JetStream is not enabled")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != 1<<20 {
		t.Errorf("max_payload %d, want 1 MiB", got)
	}
}

// TestCommentedClusterBlock: the commented cluster block and monitoring port,
// uncommented, are a valid 3-route cluster configuration.
func TestCommentedClusterBlock(t *testing.T) {
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	in := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "# cluster {"):
			in = true
		case l == "# http_port: 8222":
			lines[i] = "http_port: 8222"
		}
		if in {
			lines[i] = strings.TrimPrefix(strings.TrimPrefix(l, "#"), " ")
			if l == "# }" {
				in = false
			}
		}
	}
	path := filepath.Join(t.TempDir(), conf)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Cluster.Name != "partopt" || opts.Cluster.Port != 6222 || len(opts.Routes) != 3 || opts.HTTPPort != 8222 {
		t.Errorf("cluster %q on %d with %d routes, http_port %d: want partopt on 6222 with 3, 8222",
			opts.Cluster.Name, opts.Cluster.Port, len(opts.Routes), opts.HTTPPort)
	}
}
