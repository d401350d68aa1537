// Package testutil holds the helpers that tests of several packages share: reading
// the reference tables in testdata and the shared oracle, comparing energies, and a
// log sink safe for concurrent writers.
package testutil

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ulikunitz/xz"
)

// CloseTo reports whether energies a and b agree to the relative tolerance rel (with
// an absolute floor of rel near zero); +Inf equals only +Inf.
func CloseTo(a, b, rel float64) bool {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return a == b
	}
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// ReadTSV returns the tab-separated rows of a file, failing the test if it is unreadable.
func ReadTSV(t testing.TB, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		rows = append(rows, strings.Split(line, "\t"))
	}
	return rows
}

// SharedDir is the shared benchmark data (models/, images/, IRI.md, …): $PARTOPT_SHARED
// when set, else the directory shared beside the module root (../shared of the checkout).
func SharedDir() string {
	if dir := os.Getenv("PARTOPT_SHARED"); dir != "" {
		return dir
	}
	return filepath.Join(moduleRoot(), "..", "shared")
}

// moduleRoot is the checkout's root: three levels above this file, or (when the
// build trimmed source paths) the first directory up from the working one with a go.mod.
func moduleRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")) // ROOT/internal/testutil/testutil.go
	}
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// SharedPath is the path elem… below SharedDir, e.g. SharedPath("models", "toulbar2").
func SharedPath(elem ...string) string {
	return filepath.Join(append([]string{SharedDir()}, elem...)...)
}

// SkipWithoutShared skips the test, saying how to enable it, when path (of the
// shared benchmark data) is absent.
func SkipWithoutShared(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("real-data test skipped: %v; put the shared benchmark data beside the checkout as ../shared, "+
			"or set PARTOPT_SHARED=/path/to/shared (README: \"Tests with real data\")", err)
	}
}

// OracleRow is a row of ../shared/models/oracle/oracle.tsv: a model path (relative to
// the models directory), its best known energy, whether toulbar2 (or cbc) proved it
// optimal, and how it was found.
type OracleRow struct {
	Path   string
	Energy float64
	Proven bool
	How    string
}

// ReadOracle reads modelsDir/oracle/oracle.tsv, skipping the test (SkipWithoutShared)
// when it is absent (CI has ../shared beside the checkout; a bare clone does not).
func ReadOracle(t testing.TB, modelsDir string) []OracleRow {
	t.Helper()
	path := filepath.Join(modelsDir, "oracle", "oracle.tsv")
	SkipWithoutShared(t, path)
	var rows []OracleRow
	for _, r := range ReadTSV(t, path)[1:] {
		fields := strings.Fields(r[1]) // "OPT 59.580 …" or "best 282.997 (unproven)"
		if len(r) < 3 || len(fields) < 2 {
			t.Fatalf("%s: malformed row %q", path, r)
		}
		e, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			t.Fatalf("%s: row %q: %v", path, r, err)
		}
		rows = append(rows, OracleRow{Path: r[0], Energy: e, Proven: fields[0] == "OPT", How: r[2]})
	}
	return rows
}

// Optimum returns the proven optimum of the model at path (relative to modelsDir),
// failing the test when oracle.tsv has none.
func Optimum(t testing.TB, modelsDir, path string) float64 {
	t.Helper()
	for _, r := range ReadOracle(t, modelsDir) {
		if r.Path == path && r.Proven {
			return r.Energy
		}
	}
	t.Fatalf("oracle.tsv has no proven optimum for %s", path)
	return 0
}

// SyncBuffer is a log sink that many goroutines write to while a test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ResultFileBomb is a result file (persistency's format) of a one-variable
// result whose dual certificate holds messages zero messages: a gzip stream of
// 8·messages bytes that compresses a thousandfold, what a reader must refuse
// from its model's budget rather than inflate.
func ResultFileBomb(messages int) []byte {
	body := binary.AppendUvarint(nil, 0) // variant
	body = binary.AppendVarint(body, 1)  // pruning iterations
	body = binary.AppendVarint(body, 1)  // solver iterations
	body = append(body, make([]byte, 7*8)...)
	body = binary.AppendUvarint(body, 1)
	body = binary.AppendVarint(body, 0) // persistent: variable 0 at label 0
	body = binary.AppendUvarint(body, 1)
	body = binary.AppendVarint(body, 0) // labeling
	body = append(body, 1)              // dual certificate
	for range 2 {
		body = binary.AppendUvarint(body, 1)
		body = binary.AppendVarint(body, 0) // labels
	}
	body = binary.AppendUvarint(body, 0) // no edges
	body = binary.AppendUvarint(body, uint64(messages))
	var buf bytes.Buffer
	buf.WriteString("partopt persistency result\n")
	buf.Write([]byte{0, 1})
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(body)
	zeros := make([]byte, 1<<20)
	for left := 8 * messages; left > 0; left -= len(zeros) {
		zw.Write(zeros[:min(left, len(zeros))])
	}
	zw.Close()
	return buf.Bytes()
}

// FreeAddrs returns n distinct loopback addresses whose ports were free. Every
// listener stays open until all n are picked: a port closed at once may be
// handed out again by the next pick (two raft peers on one port).
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// XZ compresses data as an xz file with a 1 MiB dictionary.
func XZ(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := xz.WriterConfig{DictCap: 1 << 20}.NewWriter(&buf)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(data); err != nil || w.Close() != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// XZWithDict is the xz file of one block, file, whose block header declares
// the dictionary of code instead (lzma.DecodeDictCap; 39: 3 GiB), its CRC32
// recomputed: a crafted file whose decoder would allocate that dictionary.
func XZWithDict(tb testing.TB, file []byte, code byte) []byte {
	tb.Helper()
	b := bytes.Clone(file)
	h := b[12:] // the first block header, after the stream header
	size := (int(h[0]) + 1) * 4
	p := 2
	skip := func() uint64 { // an xz multibyte integer
		var v uint64
		for i := 0; p < size; i++ {
			c := h[p]
			p++
			v |= uint64(c&0x7f) << (7 * i)
			if c&0x80 == 0 {
				break
			}
		}
		return v
	}
	for _, bit := range []byte{0x40, 0x80} { // the sizes, when present
		if h[1]&bit != 0 {
			skip()
		}
	}
	if id, n := skip(), skip(); id != 0x21 || n != 1 {
		tb.Fatalf("filter %#x with %d property bytes, want LZMA2 with 1", id, n)
	}
	h[p] = code
	binary.LittleEndian.PutUint32(h[size-4:], crc32.ChecksumIEEE(h[:size-4]))
	return b
}
