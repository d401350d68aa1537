package labelfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// Export formats (FormatOf names them by file extension).
const (
	FormatPNG  = "png"  // grayscale PNG, 8 or 16 bits
	FormatTIFF = "tiff" // baseline grayscale TIFF, 8 or 16 bits, uncompressed strips (BigTIFF past 4 GB)
	FormatNPY  = "npy"  // NumPy array of shape (height, width), uint8, uint16 or uint32
)

// FormatOf returns the export format of a file name by its extension: .png,
// .tif or .tiff, .npy.
func FormatOf(name string) (string, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png":
		return FormatPNG, nil
	case ".tif", ".tiff":
		return FormatTIFF, nil
	case ".npy":
		return FormatNPY, nil
	}
	return "", fmt.Errorf("%s: unknown export format: want .png, .tif/.tiff or .npy", name)
}

// exportBand is how many values Export holds at a time, and tiffStrip the
// bytes of a TIFF strip (variables for the tests).
var exportBand, tiffStrip = 1 << 22, int64(1 << 20)

// Export writes the raster r at full resolution in format, one value per
// pixel as r stores it (a label; label+1 or 0 for a persistency map; a mask
// for an alive plane), in the fewest bits that hold the kind's largest value:
// 8 below 256, else 16 (PNG, TIFF) and 32 where even 16 do not suffice (NumPy
// only; PNG and TIFF refuse such a raster). It reads r a piece at a time
// (see pieces), so a gigapixel raster costs a few pieces of memory, not the
// raster, whatever its shape.
func Export(w io.Writer, r Raster, format string) error {
	h := r.Header()
	if err := h.normalise(); err != nil {
		return fmt.Errorf("labelfile: export: %w", err)
	}
	bits := 8
	switch m := uint64(uint32(h.MaxValue())); {
	case m >= 1<<16:
		bits = 32
	case m >= 1<<8:
		bits = 16
	}
	if bits == 32 && format != FormatNPY {
		return fmt.Errorf("labelfile: export: values up to %d need 32 bits, which %s images do not hold: export as .npy", uint32(h.MaxValue()), format)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var err error
	switch format {
	case FormatPNG:
		err = exportPNG(bw, r, h, bits)
	case FormatTIFF:
		err = exportTIFF(bw, r, h, bits)
	case FormatNPY:
		err = exportNPY(bw, r, h, bits)
	default:
		err = fmt.Errorf("labelfile: export: format %q: want %s, %s or %s", format, FormatPNG, FormatTIFF, FormatNPY)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// pieces calls each with the values of r in raster order, at most
// exportBand at a time: bands of whole rows while a row holds at most
// exportBand values, else each row in pieces of exportBand columns (rounded
// down to whole tiles), so that a raster of one row of 2³¹−1 pixels costs no
// more than a square one. A piece is w columns from column x0 of one or more
// rows, row-major in vals.
func pieces(r Raster, h Header, each func(x0, w int, vals []int32) error) error {
	cols := min(h.Width, exportBand)
	if cols < h.Width && h.TileWidth <= cols {
		cols -= cols % h.TileWidth // a tile that two pieces share is read twice
	}
	rows := max(1, min(h.Height, exportBand/h.Width))
	buf := make([]int32, rows*cols)
	for y := 0; y < h.Height; y += rows {
		k := min(rows, h.Height-y)
		for x := 0; x < h.Width; x += cols {
			w := min(cols, h.Width-x)
			if err := r.ReadRect(x, y, w, k, buf[:w*k]); err != nil {
				return err
			}
			if err := each(x, w, buf[:w*k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeValues writes r's values row-major, little-endian, in bits each.
func writeValues(w io.Writer, r Raster, h Header, bits int) error {
	var buf []byte
	return pieces(r, h, func(_, _ int, vals []int32) error {
		buf = appendValues(buf[:0], vals, bits, false)
		_, err := w.Write(buf)
		return err
	})
}

// exportNPY writes a NumPy .npy file (format version 1.0): a header naming
// dtype, order and shape, padded to 64 bytes, then the values row-major.
func exportNPY(w io.Writer, r Raster, h Header, bits int) error {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", map[int]string{8: "|u1", 16: "<u2", 32: "<u4"}[bits], h.Height, h.Width)
	pad := 64 - (10+len(dict)+1)%64
	if pad == 64 {
		pad = 0
	}
	dict += strings.Repeat(" ", pad) + "\n"
	head := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)), byte(len(dict)>>8))
	if _, err := w.Write(append(head, dict...)); err != nil {
		return err
	}
	return writeValues(w, r, h, bits)
}

// exportTIFF writes a baseline grayscale TIFF: the header, one IFD, the strip
// offsets and byte counts, then the strips. The raster's size fixes every
// offset, so all is written in one pass; BigTIFF (8-byte offsets) when the
// file passes 4 GB.
func exportTIFF(w io.Writer, r Raster, h Header, bits int) error {
	le := binary.LittleEndian
	row := int64(h.Width) * int64(bits/8)
	perStrip := max(1, min(int64(h.Height), tiffStrip/row))
	strips := (int64(h.Height) + perStrip - 1) / perStrip
	big := forceBigTIFF || row*int64(h.Height)+16*strips+1024 >= 1<<32
	const entries = 11
	off, entrySize, countSize, header, long := int64(4), int64(12), int64(2), int64(8), uint16(4) // LONG offsets
	if big {
		off, entrySize, countSize, header, long = 8, 20, 8, 16, 16 // LONG8 offsets
	}
	offsetsAt := header + countSize + entries*entrySize + off
	countsAt, dataAt := offsetsAt, offsetsAt
	if strips > 1 { // the arrays follow the IFD; one strip's values sit in its entries
		countsAt = offsetsAt + off*strips
		dataAt = countsAt + off*strips
	}
	var b []byte
	word := func(v int64) { // an offset-sized value
		if big {
			b = le.AppendUint64(b, uint64(v))
		} else {
			b = le.AppendUint32(b, uint32(v))
		}
	}
	if big {
		b = append(b, 'I', 'I', 43, 0, 8, 0, 0, 0)
	} else {
		b = append(b, 'I', 'I', 42, 0)
	}
	word(header) // the IFD's offset
	if big {
		b = le.AppendUint64(b, entries)
	} else {
		b = le.AppendUint16(b, entries)
	}
	// entry writes an IFD entry of n values of type typ (SHORT 3, LONG 4,
	// LONG8 16): one value inline, left-justified, or the offset of n.
	entry := func(tag, typ uint16, n, v int64) {
		b = le.AppendUint16(b, tag)
		b = le.AppendUint16(b, typ)
		word(n)
		start := len(b)
		switch {
		case n > 1:
			word(v)
		case typ == 3:
			b = le.AppendUint16(b, uint16(v))
		case typ == 4:
			b = le.AppendUint32(b, uint32(v))
		default:
			b = le.AppendUint64(b, uint64(v))
		}
		b = append(b, make([]byte, int(off)-(len(b)-start))...)
	}
	entry(256, 4, 1, int64(h.Width))  // ImageWidth
	entry(257, 4, 1, int64(h.Height)) // ImageLength
	entry(258, 3, 1, int64(bits))     // BitsPerSample
	entry(259, 3, 1, 1)               // Compression: none
	entry(262, 3, 1, 1)               // PhotometricInterpretation: BlackIsZero
	if strips > 1 {
		entry(273, long, strips, offsetsAt) // StripOffsets
	} else {
		entry(273, long, 1, dataAt)
	}
	entry(277, 3, 1, 1)        // SamplesPerPixel
	entry(278, 4, 1, perStrip) // RowsPerStrip
	if strips > 1 {
		entry(279, long, strips, countsAt) // StripByteCounts
	} else {
		entry(279, long, 1, row*int64(h.Height))
	}
	entry(284, 3, 1, 1) // PlanarConfiguration: chunky
	entry(339, 3, 1, 1) // SampleFormat: unsigned
	word(0)             // no next IFD
	// The strip arrays (16 bytes a row when a row fills a strip) are written
	// as they are made, not held.
	for s := int64(0); s < 2*strips && strips > 1; s++ {
		if len(b) >= 4<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		if i := s % strips; s < strips {
			word(dataAt + i*perStrip*row)
		} else {
			word(min(perStrip, int64(h.Height)-i*perStrip) * row)
		}
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return writeValues(w, r, h, bits)
}

// forceBigTIFF makes exportTIFF write BigTIFF whatever the size (tests).
var forceBigTIFF = false

// appendValues appends vals to buf in bits each (the low bits; they fit),
// big-endian if big else little-endian, and returns it.
func appendValues(buf []byte, vals []int32, bits int, big bool) []byte {
	n := len(buf)
	buf = slices.Grow(buf, len(vals)*bits/8)[:n+len(vals)*bits/8]
	b := buf[n:]
	switch {
	case bits == 8:
		for i, v := range vals {
			b[i] = byte(v)
		}
	case bits == 16 && big:
		for i, v := range vals {
			binary.BigEndian.PutUint16(b[2*i:], uint16(v))
		}
	case bits == 16:
		for i, v := range vals {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
		}
	default: // NumPy only: little-endian
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		}
	}
	return buf
}
