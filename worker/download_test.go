package worker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/worker"
)

// TestFailedDownloadLeavesNoFile: an object whose size or checksum is not what
// the job says is refused, and its copy removed, so that no damaged model stays
// in a cache or data directory for a later job to read; a good one is kept.
func TestFailedDownloadLeavesNoFile(t *testing.T) {
	ctx := context.Background()
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := cluster.DefaultConfig()
	cfg.Memory = true
	res, err := cluster.DialService(ctx, cluster.ConnOptions{Server: srv}, cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Conn.Close()
	content := []byte("MARKOV\n1\n2\n0\n")
	if err := res.PutBytes(ctx, "model", content); err != nil {
		t.Fatal(err)
	}
	crc := protocol.CRC32C(content)
	path := filepath.Join(t.TempDir(), "m.uai")
	for _, c := range []struct {
		size int64
		crc  uint32
		want string
	}{{int64(len(content)), crc + 1, "CRC32C"}, {int64(len(content)) + 1, crc, "bytes"}} {
		err := worker.Download(ctx, res, "model", c.size, c.crc, path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("size %d, CRC32C %08x: %v, want an error naming the %s", c.size, c.crc, err, c.want)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed download left %s: %v", path, err)
		}
	}
	if err := worker.Download(ctx, res, "model", int64(len(content)), crc, path); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(content) {
		t.Errorf("downloaded %q, %v", got, err)
	}
}
