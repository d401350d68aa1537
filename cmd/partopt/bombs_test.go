package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
)

// TestMemoryBombsAreRefusedInSmallMemory: each input that once made a reader
// allocate gigabytes — an OpenGM file whose values inflate to 1.6 GB for a model
// needing 4, an OpenGM file of 1.3 MB whose table of 2^27 values, all its
// model needs, inflates to 1 GiB (info and solve peaked at 3.2 GB, and died
// under the limit), a certificate inflating to 128 MB of messages for a model
// of one variable, a PNG declaring 60000² pixels, an xz model declaring a 3 GiB
// dictionary, a gzip model inflating a thousandfold — is refused with one line
// and exit 2 by the binary under a 2 GB address-space limit (ulimit -v), the
// way an operator would cap a coordinator.
func TestMemoryBombsAreRefusedInSmallMemory(t *testing.T) {
	dir := t.TempDir()
	capped := cappedBinary(t, dir)
	certDir := filepath.Join(dir, "cert")
	os.Mkdir(certDir, 0o755)
	if err := os.WriteFile(filepath.Join(certDir, certificateFile), testutil.ResultFileBomb(16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	img := buf.Bytes() // IHDR after the signature: length, "IHDR", width, height, …, CRC
	binary.BigEndian.PutUint32(img[16:], 60000)
	binary.BigEndian.PutUint32(img[20:], 60000)
	binary.BigEndian.PutUint32(img[29:], crc32.ChecksumIEEE(img[12:29]))
	pngPath := filepath.Join(dir, "bomb.png")
	if err := os.WriteFile(pngPath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	// An xz model whose block declares a 3 GiB dictionary, and a gzip one of
	// 160 MB of blanks in 160 KB.
	model := []byte("MARKOV\n1\n2\n1\n1 0\n2\n1 2\n")
	dictPath := filepath.Join(dir, "dict.uai.xz")
	if err := os.WriteFile(dictPath, testutil.XZWithDict(t, testutil.XZ(t, model), 39), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write([]byte("MARKOV\n"))
	blanks := bytes.Repeat([]byte(" "), 1<<20)
	for range 160 {
		zw.Write(blanks)
	}
	zw.Close()
	gzPath := filepath.Join(dir, "blanks.uai.gz")
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tablePath := filepath.Join(dir, "table.h5")
	if err := os.WriteFile(tablePath, testutil.OpenGMTableBomb(1<<13, 1<<14), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"opengm values", []string{"info", "../../model/opengm/testdata/bomb_values.h5"}, "limit 4"},
		{"opengm table", []string{"info", tablePath}, "table.h5: opengm: explicit functions: hdf5: /gm/function-id-16000/values: 134217728 values"},
		{"opengm table solved", []string{"solve", tablePath, "-o", filepath.Join(dir, "table.out")}, "decompression bomb"},
		{"certificate", []string{"verify", "../../testdata/tiny.uai", certDir}, "more than a result of this model can"},
		{"image", []string{"gen", "seg", pngPath, "-o", filepath.Join(dir, "seg.uai")}, "60000×60000"},
		{"xz dictionary", []string{"info", dictPath}, "dictionary"},
		{"gzip expansion", []string{"info", gzPath}, "decompression bomb"},
	} {
		code, _, stderr := capped(c.args...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line saying %q", c.name, code, stderr, c.want)
		}
	}
}

// addressSpaceLimit is the limit of cappedBinary's commands, in KiB (ulimit
// -v): 2 GB, as an operator would cap a coordinator.
const addressSpaceLimit = 2 << 20

// cappedBinary builds partopt into dir and returns a function that runs it with
// args under addressSpaceLimit, returning its exit code, stdout and stderr;
// the test is skipped under -short and where there is no sh.
func cappedBinary(t *testing.T, dir string) func(args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set the address-space limit with")
	}
	bin := buildBinary(t, dir)
	return func(args ...string) (int, string, string) {
		cmd := exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, addressSpaceLimit), bin}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
}
