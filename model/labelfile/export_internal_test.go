package labelfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
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
// decoders (image/png, x/image/tiff) or by their specifications, through bands
// of two rows and TIFF strips of a few rows.
func TestExportWritesEveryValueAtFullResolution(t *testing.T) {
	defer func(b int, s int64) { exportBand, tiffStrip = b, s }(exportBand, tiffStrip)
	exportBand, tiffStrip = 70, 100
	for _, c := range exportCases() {
		bits := 8
		if m := uint32(c.h.MaxValue()); m >= 1<<16 {
			bits = 32
		} else if m >= 1<<8 {
			bits = 16
		}
		for _, format := range []string{FormatPNG, FormatTIFF, "bigtiff", FormatNPY} {
			t.Run(fmt.Sprintf("%v-K%d-%dx%d-%s", c.h.Kind, c.h.Labels, c.h.Width, c.h.Height, format), func(t *testing.T) {
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
