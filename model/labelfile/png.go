package labelfile

import (
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// pngChunk is the most data an IDAT chunk of exportPNG holds.
const pngChunk = 1 << 16

// exportPNG writes a grayscale PNG of bits bits a sample, streamed: every row
// has filter type None, so its bytes go to zlib piece by piece as pieces
// reads them and no row is ever held whole (image/png holds six, and reads an
// image.Image pixel by pixel).
func exportPNG(w io.Writer, r Raster, h Header, bits int) error {
	if _, err := io.WriteString(w, "\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	ihdr := make([]byte, 13) // colour type 0 (grey); standard compression and filtering; no interlace
	binary.BigEndian.PutUint32(ihdr, uint32(h.Width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h.Height))
	ihdr[8] = byte(bits)
	if err := writeChunk(w, "IHDR", ihdr); err != nil {
		return err
	}
	idat := &chunks{w: w, typ: "IDAT", buf: make([]byte, 0, pngChunk)}
	zw, err := zlib.NewWriterLevel(idat, zlib.BestSpeed)
	if err != nil {
		return err
	}
	var buf []byte
	err = pieces(r, h, func(x0, wd int, vals []int32) error {
		buf = buf[:0]
		for row := range len(vals) / wd {
			if x0 == 0 {
				buf = append(buf, 0) // the row's filter type: None
			}
			buf = appendValues(buf, vals[row*wd:][:wd], bits, true) // PNG's samples are big-endian
		}
		_, err := zw.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := idat.flush(); err != nil {
		return err
	}
	return writeChunk(w, "IEND", nil)
}

// writeChunk writes a PNG chunk: length, type, data, CRC-32 of type and data.
func writeChunk(w io.Writer, typ string, data []byte) error {
	var head [8]byte
	var tail [4]byte
	binary.BigEndian.PutUint32(head[:], uint32(len(data)))
	copy(head[4:], typ)
	binary.BigEndian.PutUint32(tail[:], crc32.Update(crc32.ChecksumIEEE(head[4:]), crc32.IEEETable, data))
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// chunks writes what is written to it as PNG chunks of type typ, each of at
// most cap(buf) bytes.
type chunks struct {
	w   io.Writer
	typ string
	buf []byte
}

func (c *chunks) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf, p = c.buf[:len(c.buf)+k], p[k:]
		if len(c.buf) == cap(c.buf) {
			if err := c.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flush writes what is buffered as a chunk, if anything.
func (c *chunks) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	err := writeChunk(c.w, c.typ, c.buf)
	c.buf = c.buf[:0]
	return err
}
