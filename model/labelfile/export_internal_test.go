package labelfile

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/image/tiff"
)

// exportCase is a raster to export: its header and values.
type exportCase struct {
	h    Header
	vals []int32
}

func exportCases() []exportCase {
	var out []exportCase
	for _, c := range []struct {
		kind   Kind
		labels int
		w, h   int
	}{
		{Labeling, 4, 37, 23},     // 8 bits
		{Labeling, 300, 29, 31},   // 16 bits
		{Persistent, 255, 17, 9},  // values up to 255: 8 bits
		{Persistent, 256, 16, 11}, // up to 256: 16 bits
		{Persistent, 65536, 5, 7}, // up to 65536: 32 bits (NumPy only)
		{Labeling, 2, 1, 1},
	} {
		h := Header{Width: c.w, Height: c.h, Labels: c.labels, Kind: c.kind}
		m := int64(h.MaxValue())
		vals := make([]int32, c.w*c.h)
		for i := range vals {
			vals[i] = int32((int64(i)*7919 + int64(i/c.w)) % (m + 1))
		}
		vals[len(vals)-1] = int32(m) // the largest value, at the last pixel
		out = append(out, exportCase{h, vals})
	}
	return out
}

// TestExportWritesEveryValueAtFullResolution: PNG, TIFF (classic and BigTIFF)
// and NumPy files hold every value of the raster, in 8 bits where they fit,
// else 16, else 32 (NumPy; PNG and TIFF refuse), read back by independent
// decoders (image/png, x/image/tiff) or by their specifications, through
// TIFF strips of a few rows and pieces of several rows, of one row, and of
// a few columns of a row.
func TestExportWritesEveryValueAtFullResolution(t *testing.T) {
	defer func(b int, s int64) { exportBand, tiffStrip = b, s }(exportBand, tiffStrip)
	tiffStrip = 100
	for _, c := range exportCases() {
		bits := 8
		if m := uint32(c.h.MaxValue()); m >= 1<<16 {
			bits = 32
		} else if m >= 1<<8 {
			bits = 16
		}
		for _, format := range []string{FormatPNG, FormatTIFF, "bigtiff", FormatNPY} {
			for _, band := range []int{70, 30, 4} {
				t.Run(fmt.Sprintf("%v-K%d-%dx%d-%s-band%d", c.h.Kind, c.h.Labels, c.h.Width, c.h.Height, format, band), func(t *testing.T) {
					exportBand = band
					forceBigTIFF = format == "bigtiff"
					defer func() { forceBigTIFF = false }()
					f := format
					if f == "bigtiff" {
						f = FormatTIFF
					}
					var buf bytes.Buffer
					err := Export(&buf, Slice(c.h, c.vals), f)
					if bits == 32 && f != FormatNPY {
						if err == nil || !strings.Contains(err.Error(), ".npy") {
							t.Fatalf("32-bit values as %s: %v", f, err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					var got []uint32
					switch format {
					case FormatPNG, FormatTIFF:
						var img image.Image
						if format == FormatPNG {
							img, err = png.Decode(&buf)
						} else {
							img, err = tiff.Decode(&buf)
						}
						if err != nil {
							t.Fatal(err)
						}
						got = grayValues(t, img, bits)
					case "bigtiff":
						got = readBigTIFF(t, buf.Bytes(), c.h, bits)
					case FormatNPY:
						got = readNPY(t, buf.Bytes(), c.h, bits)
					}
					for i, v := range c.vals {
						if got[i] != uint32(v) {
							t.Fatalf("pixel %d: %d, want %d", i, got[i], v)
						}
					}
				})
			}
		}
	}
}

// grayValues are img's pixels, which must be gray of bits bits.
func grayValues(t *testing.T, img image.Image, bits int) []uint32 {
	t.Helper()
	var out []uint32
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			switch m := img.(type) {
			case *image.Gray:
				if bits != 8 {
					t.Fatalf("8-bit image, want %d bits", bits)
				}
				out = append(out, uint32(m.GrayAt(x, y).Y))
			case *image.Gray16:
				if bits != 16 {
					t.Fatalf("16-bit image, want %d bits", bits)
				}
				out = append(out, uint32(m.Gray16At(x, y).Y))
			default:
				t.Fatalf("image of type %T", img)
			}
		}
	}
	return out
}

// readNPY reads a .npy file of version 1.0 by the format's specification.
func readNPY(t *testing.T, b []byte, h Header, bits int) []uint32 {
	t.Helper()
	if !bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")) {
		t.Fatalf("magic %q", b[:8])
	}
	n := int(binary.LittleEndian.Uint16(b[8:]))
	if (10+n)%64 != 0 || b[10+n-1] != '\n' {
		t.Fatalf("header of %d bytes: not padded to 64 with a newline", n)
	}
	dict := strings.TrimSpace(string(b[10 : 10+n]))
	want := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", map[int]string{8: "|u1", 16: "<u2", 32: "<u4"}[bits], h.Height, h.Width)
	if dict != want {
		t.Fatalf("header %q, want %q", dict, want)
	}
	return values(t, b[10+n:], h.Width*h.Height, bits)
}

// values decodes n little-endian values of bits bits, which must be all of b.
func values(t *testing.T, b []byte, n, bits int) []uint32 {
	t.Helper()
	if len(b) != n*bits/8 {
		t.Fatalf("%d bytes of data, want %d", len(b), n*bits/8)
	}
	out := make([]uint32, n)
	for i := range out {
		switch bits {
		case 8:
			out[i] = uint32(b[i])
		case 16:
			out[i] = uint32(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			out[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
	}
	return out
}

// readBigTIFF reads a BigTIFF file by its specification: the header, the
// IFD's entries (8-byte counts and values), the strips they locate.
func readBigTIFF(t *testing.T, b []byte, h Header, bits int) []uint32 {
	t.Helper()
	le := binary.LittleEndian
	if string(b[:4]) != "II+\x00" || le.Uint16(b[4:]) != 8 || le.Uint16(b[6:]) != 0 {
		t.Fatalf("BigTIFF header % x", b[:8])
	}
	ifd := le.Uint64(b[8:])
	n := le.Uint64(b[ifd:])
	tags := map[uint16][]uint64{}
	for e := range n {
		p := ifd + 8 + e*20
		tag, typ, count := le.Uint16(b[p:]), le.Uint16(b[p+2:]), le.Uint64(b[p+4:])
		size := map[uint16]uint64{3: 2, 4: 4, 16: 8}[typ]
		at := p + 12
		if count*size > 8 {
			at = le.Uint64(b[p+12:])
		}
		for i := range count {
			switch size {
			case 2:
				tags[tag] = append(tags[tag], uint64(le.Uint16(b[at+2*i:])))
			case 4:
				tags[tag] = append(tags[tag], uint64(le.Uint32(b[at+4*i:])))
			default:
				tags[tag] = append(tags[tag], le.Uint64(b[at+8*i:]))
			}
		}
	}
	if tags[256][0] != uint64(h.Width) || tags[257][0] != uint64(h.Height) || tags[258][0] != uint64(bits) || tags[259][0] != 1 || tags[262][0] != 1 {
		t.Fatalf("tags %v", tags)
	}
	var data []byte
	for i, o := range tags[273] {
		data = append(data, b[o:o+tags[279][i]]...)
	}
	return values(t, data, h.Width*h.Height, bits)
}

// pieces hands over the raster in raster order, never more than exportBand
// values at once: bands of whole rows while a row fits, else pieces of a row
// that end on tile boundaries where a tile fits in the band.
func TestPiecesCoverRowsInOrderWithinTheBand(t *testing.T) {
	defer func(b int) { exportBand = b }(exportBand)
	for _, c := range []struct {
		w, h, tw, band int
		want           []string // pieces as x0+w×rows
	}{
		{5, 4, 128, 10, []string{"0+5×2", "0+5×2"}},
		{5, 3, 128, 10, []string{"0+5×2", "0+5×1"}},
		{10, 2, 128, 10, []string{"0+10×1", "0+10×1"}},
		{11, 2, 128, 10, []string{"0+10×1", "10+1×1", "0+10×1", "10+1×1"}},
		{11, 1, 4, 10, []string{"0+8×1", "8+3×1"}}, // whole tiles of 4
		{11, 1, 16, 10, []string{"0+10×1", "10+1×1"}},
		{7, 2, 3, 1, []string{"0+1×1", "1+1×1", "2+1×1", "3+1×1", "4+1×1", "5+1×1", "6+1×1",
			"0+1×1", "1+1×1", "2+1×1", "3+1×1", "4+1×1", "5+1×1", "6+1×1"}},
	} {
		exportBand = c.band
		h := Header{Width: c.w, Height: c.h, Labels: 1 << 16, TileWidth: c.tw, TileHeight: 2}
		vals := make([]int32, c.w*c.h)
		for i := range vals {
			vals[i] = int32(i)
		}
		var got []string
		var seen []int32
		err := pieces(Slice(h, vals), h, func(x0, w int, v []int32) error {
			if len(v) > c.band {
				t.Errorf("%+v: a piece of %d values", c, len(v))
			}
			got = append(got, fmt.Sprintf("%d+%d×%d", x0, w, len(v)/w))
			seen = append(seen, v...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || fmt.Sprint(seen) != fmt.Sprint(vals) {
			t.Errorf("%+v: pieces %v of values %v, want %v of %v", c, got, seen, c.want, vals)
		}
	}
}

// wideRow is a raster of one row, of wideValue at column x (odd for Alive),
// made up as it is read. It panics when asked for more than most values at once, samples the
// heap as it goes, and fails with errEnough once it has served limit values.
type wideRow struct {
	h              Header
	most, n, limit int
	peakHeapBytes  uint64
}

// wideValue is a value of k labels scrambled from x, so that PNG cannot
// compress a run of them into less than its buffers hold.
func wideValue(x, k int) int32 { return int32(uint32(x) * 2654435761 >> 8 % uint32(k)) }

// errEnough stops an export that has gone far enough.
var errEnough = errors.New("enough")

func (r *wideRow) Header() Header { return r.h }

func (r *wideRow) ReadRect(x0, y0, w, h int, dst []int32) error {
	if len(dst) > r.most {
		panic(fmt.Sprintf("ReadRect of %d×%d values, past the band of %d", w, h, r.most))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.peakHeapBytes = max(r.peakHeapBytes, ms.HeapInuse)
	if r.n += len(dst); r.n > r.limit {
		return errEnough
	}
	for i := range dst {
		dst[i] = wideValue(x0+i, r.h.Labels)
		if r.h.Kind == Alive {
			dst[i] |= 1 // a label left in every plane
		}
	}
	return nil
}

// head keeps the first KB written to it.
type head []byte

func (h *head) Write(p []byte) (int, error) {
	if len(*h) < 1<<10 {
		*h = append(*h, p[:min(len(p), 1<<10)]...)
	}
	return len(p), nil
}

// Exporting a raster of one row of 2²⁸−1 pixels (1 GB as int32, where the
// export once read a whole row at a time; cmd/partopt's
// TestHugeRowLabelFileInSmallMemory takes 2³¹−1) reads it a band at a time in
// every format; the heap stays under 100 MB while 2²⁴ values (4 bands) are
// exported, and the first values are right.
func TestExportHoldsABandOfAHugeRow(t *testing.T) {
	for _, format := range []string{FormatNPY, FormatTIFF, FormatPNG} {
		t.Run(format, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatal(p)
				}
			}()
			runtime.GC()
			r := &wideRow{h: Header{Width: 1<<28 - 1, Height: 1, Labels: 300}, most: exportBand, limit: 1 << 24} // 16 bits
			var w head
			if err := Export(&w, r, format); !errors.Is(err, errEnough) {
				t.Fatalf("export: %v after %d values, want to get past %d", err, r.n, r.limit)
			}
			if r.peakHeapBytes > 100<<20 {
				t.Errorf("heap in use %d MB", r.peakHeapBytes>>20)
			}
			var data []byte // the first values, after the header
			switch format {
			case FormatNPY:
				dict := "{'descr': '<u2', 'fortran_order': False, 'shape': (1, 268435455), }"
				if !bytes.Contains(w, []byte(dict)) {
					t.Fatalf("header %q, want %q", w[:128], dict)
				}
				data = w[128:]
			case FormatTIFF: // one strip: 8 + 2 + 11·12 + 4 bytes before it
				if string(w[:4]) != "II*\x00" {
					t.Fatalf("header % x, want TIFF's", w[:8])
				}
				data = w[146:]
			case FormatPNG:
				zr, err := zlib.NewReader(bytes.NewReader(w[8+25+8:])) // after the signature, IHDR and IDAT's length and type
				if err != nil {
					t.Fatal(err)
				}
				data = make([]byte, 513)
				if _, err := io.ReadFull(zr, data); err != nil {
					t.Fatal(err)
				}
				if data[0] != 0 {
					t.Fatalf("filter type %d, want 0", data[0])
				}
				data = data[1:]
			}
			for x := range 256 {
				v := binary.LittleEndian.Uint16(data[2*x:])
				if format == FormatPNG {
					v = binary.BigEndian.Uint16(data[2*x:])
				}
				if want := wideValue(x, 300); int32(v) != want {
					t.Fatalf("value %d: %d, want %d", x, v, want)
				}
			}
		})
	}
}
