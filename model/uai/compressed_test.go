package uai

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/expansion"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/ulikunitz/xz/lzma"
)

// smallUAI is a valid two-variable model.
const smallUAI = "MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2 3 4\n"

func gzBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := w.Write(data); err != nil || w.Close() != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompressedModelsHaveABudget: a compressed model decodes to at most
// MaxExpansion times its size (plus a slack): a gzip or xz file past it is
// refused as a decompression bomb, the xz one from its index before decoding;
// an xz block declaring a dictionary it cannot use (the decoder would
// allocate it, up to 4 GiB) is refused before decoding; real models, several
// xz streams and stream padding read as before.
func TestCompressedModelsHaveABudget(t *testing.T) {
	bomb := append([]byte("MARKOV\n"), bytes.Repeat([]byte(" "), expansion.Slack+MaxExpansion<<16)...) // whitespace: nothing parsed, everything decoded
	for _, c := range []struct {
		name string
		data []byte
		want string // "" reads
	}{
		{"small.uai.gz", gzBytes(t, []byte(smallUAI)), ""},
		{"small.uai.xz", testutil.XZ(t, []byte(smallUAI)), ""},
		{"two-streams.uai.xz", append(append(testutil.XZ(t, []byte(smallUAI[:20])), make([]byte, 8)...), testutil.XZ(t, []byte(smallUAI[20:]))...), ""},
		{"bomb.uai.gz", gzBytes(t, bomb), "decompression bomb"},
		{"bomb.uai.xz", testutil.XZ(t, bomb), "decompression bomb"},
		{"dict.uai.xz", testutil.XZWithDict(t, testutil.XZ(t, []byte(smallUAI)), 39), "dictionary"},
		{"truncated.uai.xz", testutil.XZ(t, []byte(smallUAI))[:40], "malformed xz"},
	} {
		path := write(t, c.name, c.data)
		m, err := ReadFile(path)
		switch {
		case c.want == "" && (err != nil || m.NumVars() != 2):
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// The dictionary bound is the declaration's, not the data's: the same
	// file with a 64 MiB dictionary (xz -9's) reads.
	if _, err := ReadFile(write(t, "dict9.uai.xz", testutil.XZWithDict(t, testutil.XZ(t, []byte(smallUAI)), lzma.EncodeDictCap(maxXZDict)))); err != nil {
		t.Errorf("a 64 MiB dictionary: %v", err)
	}
}
