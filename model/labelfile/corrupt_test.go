package labelfile_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// layout is the documented layout, computed independently of the package from the
// header bytes of a file.
type layout struct{ w, h, tw, th, bpv int }

func layoutOf(data []byte) layout {
	le := binary.LittleEndian
	return layout{int(le.Uint32(data[16:])), int(le.Uint32(data[20:])), int(le.Uint32(data[32:])), int(le.Uint32(data[36:])), int(data[29])}
}

// tile returns the offset and length of tile (tx, ty).
func (l layout) tile(tx, ty int) (off, n int) {
	rows := min(l.th, l.h-ty*l.th)
	return labelfile.HeaderSize + (ty*l.th*l.w+tx*l.tw*rows)*l.bpv, min(l.tw, l.w-tx*l.tw) * rows * l.bpv
}

// signHeader recomputes the header checksum of data.
func signHeader(data []byte) {
	binary.LittleEndian.PutUint32(data[60:], crc32.Checksum(data[:60], castagnoli))
}

// signAll recomputes every tile checksum, the index checksum and the header checksum.
func signAll(data []byte) {
	l := layoutOf(data)
	idx := labelfile.HeaderSize + l.w*l.h*l.bpv
	i := idx
	for ty := range (l.h + l.th - 1) / l.th {
		for tx := range (l.w + l.tw - 1) / l.tw {
			off, n := l.tile(tx, ty)
			binary.LittleEndian.PutUint32(data[i:], crc32.Checksum(data[off:off+n], castagnoli))
			i += 4
		}
	}
	binary.LittleEndian.PutUint32(data[56:], crc32.Checksum(data[idx:i], castagnoli))
	signHeader(data)
}

// validFile writes a finished random file and returns its path, bytes and values.
func validFile(t testing.TB, h labelfile.Header, seed uint64) (string, []byte, []int32) {
	t.Helper()
	f, path := create(t, h)
	h = f.Header()
	v := randomValues(rand.New(rand.NewPCG(seed, 1)), h.Width*h.Height, h.MaxValue())
	if err := f.WriteRect(0, 0, h.Width, h.Height, v); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data, v
}

func wantCorrupt(t *testing.T, err error, path string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.Is(err, labelfile.ErrCorrupt) || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("error %q does not name %s and wrap ErrCorrupt", err, path)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

// A flipped byte in tile (2,1) makes every read touching that tile fail, naming the
// tile; every other tile still reads correctly.
func TestCorruptTileIsNamedOthersStillRead(t *testing.T) {
	h := labelfile.Header{Width: 40, Height: 30, Labels: 300, TileWidth: 8, TileHeight: 8}
	path, data, v := validFile(t, h, 1)
	off, n := layoutOf(data).tile(2, 1)
	data[off+n/2] ^= 0x40
	if err := os.WriteFile(path, data, 0o666); err != nil {
		t.Fatal(err)
	}
	f := open(t, path)
	want := &raster{h: f.Header(), v: v}
	for _, r := range [][4]int{{16, 8, 8, 8}, {23, 15, 1, 1}, {0, 0, 40, 30}, {20, 0, 1, 30}} {
		err := f.ReadRect(r[0], r[1], r[2], r[3], make([]int32, r[2]*r[3]))
		wantCorrupt(t, err, path, "tile (2,1)", "checksum mismatch")
	}
	for ty := range 4 {
		for tx := range 5 {
			if tx == 2 && ty == 1 {
				continue
			}
			x0, y0, w, hh := tx*8, ty*8, min(8, 40-tx*8), min(8, 30-ty*8)
			got := make([]int32, w*hh)
			if err := f.ReadRect(x0, y0, w, hh, got); err != nil {
				t.Fatalf("tile (%d,%d): %v", tx, ty, err)
			}
			if !slices.Equal(got, want.rect(x0, y0, w, hh)) {
				t.Fatalf("tile (%d,%d) differs", tx, ty)
			}
		}
	}
}

// Open refuses damaged headers, indexes and sizes, and files never closed, with an
// error naming the file, wrapping ErrCorrupt and saying what is wrong.
func TestOpenRejectsDamagedFiles(t *testing.T) {
	h := labelfile.Header{Width: 20, Height: 10, Labels: 2, Kind: labelfile.Persistent, TileWidth: 8, TileHeight: 4}
	_, good, _ := validFile(t, h, 2)
	le := binary.LittleEndian
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"empty", func(b []byte) []byte { return b[:0] }, "truncated"},
		{"half a header", func(b []byte) []byte { return b[:40] }, "truncated"},
		{"last byte missing", func(b []byte) []byte { return b[:len(b)-1] }, "truncated"},
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }, "trailing"},
		{"wrong magic", func(b []byte) []byte { b[7] = 'G'; return b }, "magic"},
		{"bad header checksum", func(b []byte) []byte { b[16]++; return b }, "header checksum"},
		{"version 2", func(b []byte) []byte { le.PutUint32(b[8:], 2); signHeader(b); return b }, "version"},
		{"header size", func(b []byte) []byte { le.PutUint32(b[12:], 128); signHeader(b); return b }, "header size"},
		{"plane of a labeling", func(b []byte) []byte { b[31] = 1; signHeader(b); return b }, "plane"},
		{"unknown kind", func(b []byte) []byte { b[28] = 7; signHeader(b); return b }, "kind"},
		{"no labels", func(b []byte) []byte { le.PutUint32(b[24:], 0); signHeader(b); return b }, "labels"},
		{"70000 labels", func(b []byte) []byte { le.PutUint32(b[24:], 70000); signHeader(b); return b }, "labels"},
		{"bytes per value", func(b []byte) []byte { b[29] = 2; signHeader(b); return b }, "bytes per value"},
		{"zero tile width", func(b []byte) []byte { le.PutUint32(b[32:], 0); signHeader(b); return b }, "tile size"},
		{"tile count", func(b []byte) []byte { le.PutUint64(b[40:], 7); signHeader(b); return b }, "tiles"},
		{"index offset", func(b []byte) []byte { le.PutUint64(b[48:], 100); signHeader(b); return b }, "index offset"},
		{"unfinished", func(b []byte) []byte { le.PutUint64(b[48:], 0); signHeader(b); return b }, "unfinished"},
		{"index checksum", func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, "index checksum"},
		{"declared size overflowing", func(b []byte) []byte {
			le.PutUint32(b[16:], 1<<31-1)
			le.PutUint32(b[20:], 1<<31-1)
			signHeader(b)
			return b
		}, "overflow"},
		{"huge declared size", func(b []byte) []byte {
			le.PutUint32(b[16:], 1<<28)
			le.PutUint32(b[20:], 1<<28)
			le.PutUint64(b[40:], uint64(1<<28/8)*(1<<28/4))
			le.PutUint64(b[48:], labelfile.HeaderSize+1<<56)
			signHeader(b)
			return b
		}, "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.lab")
			if err := os.WriteFile(path, tc.damage(slices.Clone(good)), 0o666); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := labelfile.Open(path)
			runtime.ReadMemStats(&after)
			if err == nil {
				f.Close()
			}
			wantCorrupt(t, err, path, tc.want)
			if d := after.TotalAlloc - before.TotalAlloc; d > 1<<16 {
				t.Errorf("allocated %d bytes for a %d-byte file", d, len(good))
			}
		})
	}
}

// A file created but never closed (a crash) is refused as unfinished, whatever was
// written to it.
func TestOpenRejectsFileNeverClosed(t *testing.T) {
	f, path := create(t, labelfile.Header{Width: 9, Height: 9, Labels: 4, TileWidth: 4, TileHeight: 4})
	defer f.Close()
	if err := f.WriteRect(0, 0, 9, 9, make([]int32, 81)); err != nil {
		t.Fatal(err)
	}
	_, err := labelfile.Open(path)
	wantCorrupt(t, err, path, "unfinished")
}

// A value above the kind's maximum in a tile whose checksum matches is reported as
// corrupt, naming the tile and the pixel, wherever it lies in a row of the tile.
func TestOpenedFileReportsValuesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    labelfile.Header
		bad  []byte // the stored bytes of the value put at pixel (x,9)
		want string
	}{
		{"labeling K=3, value 3", labelfile.Header{Width: 14, Height: 10, Labels: 3}, []byte{3}, "value 3"},
		{"persistent K=3, value 255", labelfile.Header{Width: 14, Height: 10, Labels: 3, Kind: labelfile.Persistent}, []byte{255}, "value 255"},
		{"labeling K=300, value 300", labelfile.Header{Width: 14, Height: 10, Labels: 300}, []byte{44, 1}, "value 300"},
		{"persistent K=65536, value 2³²−1", labelfile.Header{Width: 14, Height: 10, Labels: 65536, Kind: labelfile.Persistent}, []byte{255, 255, 255, 255}, "value 4294967295"},
	} {
		// Rows of tile (0,2) are 14 values: x = 5 is decoded in the unrolled loop, 13 after it.
		for _, x := range []int{5, 13} {
			t.Run(fmt.Sprintf("%s at x=%d", tc.name, x), func(t *testing.T) {
				tc.h.TileWidth, tc.h.TileHeight = 14, 4
				path, data, _ := validFile(t, tc.h, 3)
				l := layoutOf(data)
				off, _ := l.tile(0, 2)
				copy(data[off+((9-8)*14+x)*l.bpv:], tc.bad)
				signAll(data)
				if err := os.WriteFile(path, data, 0o666); err != nil {
					t.Fatal(err)
				}
				f := open(t, path)
				err := f.ReadRect(0, 0, 14, 10, make([]int32, 140))
				wantCorrupt(t, err, path, "tile (0,2)", fmt.Sprintf("pixel (%d,9)", x), tc.want)
				if err := f.ReadRect(0, 0, 14, 8, make([]int32, 112)); err != nil {
					t.Errorf("the other tile rows: %v", err)
				}
			})
		}
	}
}

// A sparse file backs any declared size with a hole: one row of 2²⁴ pixels in
// 1×1 tiles declares 64 MB of tile index, of which only the first 16 entries
// are written (the rest read as zeros, and the index checksum says so). Open
// checks the index without holding it, allocating under 2 MB where it once
// held the index twice (128 MB); the first 16 pixels read back, each checked
// against its entry, and a pixel past them fails its entry of zeros.
func TestOpenHoldsNoTileIndex(t *testing.T) {
	const w = 1 << 24
	_, small, want := validFile(t, labelfile.Header{Width: 16, Height: 1, Labels: 200, TileWidth: 1, TileHeight: 1}, 3)
	le := binary.LittleEndian
	head, data, entries := small[:labelfile.HeaderSize], small[labelfile.HeaderSize:][:16], small[labelfile.HeaderSize+16:]
	le.PutUint32(head[16:], w)
	le.PutUint64(head[40:], w)
	le.PutUint64(head[48:], labelfile.HeaderSize+w)
	crc := crc32.Update(0, castagnoli, entries)
	zeros := make([]byte, 1<<20)
	for n := 4*w - len(entries); n > 0; n -= len(zeros) {
		crc = crc32.Update(crc, castagnoli, zeros[:min(n, len(zeros))])
	}
	le.PutUint32(head[56:], crc)
	signHeader(head)
	path := filepath.Join(t.TempDir(), "row.plf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []struct {
		b   []byte
		off int64
	}{{head, 0}, {data, labelfile.HeaderSize}, {entries, labelfile.HeaderSize + w}} {
		if _, err := f.WriteAt(part.b, part.off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(labelfile.HeaderSize + 5*w); err != nil || f.Close() != nil {
		t.Fatal(err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := labelfile.Open(path)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if d := after.TotalAlloc - before.TotalAlloc; d > 2<<20 {
		t.Errorf("Open allocated %d bytes", d)
	}
	got := make([]int32, 16)
	if err := r.ReadRect(0, 0, 16, 1, got); err != nil || !slices.Equal(got, want) {
		t.Errorf("first 16 pixels %v, %v; want %v", got, err, want)
	}
	wantCorrupt(t, r.ReadRect(1000, 0, 1, 1, got[:1]), path, "tile (1000,0): checksum mismatch", "stored 00000000")
}
