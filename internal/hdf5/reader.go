package hdf5

import (
	"encoding/binary"
	"io"
)

// undefined is the undefined address (all bits set) once widened to 64 bits.
const undefined = ^uint64(0)

// readAt reads n bytes at the file-relative address addr (relative to the base
// address), checking that they lie inside the file before allocating.
func (f *File) readAt(addr uint64, n uint64, what string) ([]byte, error) {
	if addr == undefined {
		return nil, formatErr("%s: undefined address", what)
	}
	abs := f.base + addr
	if abs < f.base || abs > uint64(f.size) || n > uint64(f.size)-abs {
		return nil, formatErr("%s at offset %#x: %d bytes past the end of the file (size %d)", what, addr, n, f.size)
	}
	b := make([]byte, n)
	if err := readFull(f.r, b, int64(abs)); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, formatErr("%s at offset %#x: truncated", what, addr)
		}
		return nil, err
	}
	return b, nil
}

// inFile reports whether n bytes at addr lie inside the file.
func (f *File) inFile(addr, n uint64) bool {
	abs := f.base + addr
	return addr != undefined && abs >= f.base && abs <= uint64(f.size) && n <= uint64(f.size)-abs
}

// decoder reads little-endian fields from a byte slice. The first short read sets
// err; later reads return zeros, so a parser checks err once after a group of
// fields.
type decoder struct {
	b       []byte
	off     int
	err     error
	what    string // for the error message
	at      uint64 // file offset of b[0]
	offSize int    // size of offsets (addresses) in bytes
	lenSize int    // size of lengths in bytes
}

func (f *File) decoder(b []byte, at uint64, what string) *decoder {
	return &decoder{b: b, at: at, what: what, offSize: f.offSize, lenSize: f.lenSize}
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.err = formatErr("%s at offset %#x: field of %d bytes at +%d overruns its %d-byte block", d.what, d.at, n, d.off, len(d.b))
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) skip(n int) { d.take(n) }

func (d *decoder) u8() uint8 {
	p := d.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *decoder) u16() uint16 {
	p := d.take(2)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

func (d *decoder) u32() uint32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

// uint reads an n-byte unsigned little-endian integer (n ≤ 8).
func (d *decoder) uint(n int) uint64 {
	p := d.take(n)
	if p == nil {
		return 0
	}
	var v uint64
	for i := len(p) - 1; i >= 0; i-- {
		v = v<<8 | uint64(p[i])
	}
	return v
}

// addr reads an address; the all-ones value of any width becomes undefined.
func (d *decoder) addr() uint64 {
	v := d.uint(d.offSize)
	if d.err == nil && d.offSize < 8 && v == 1<<(8*uint(d.offSize))-1 {
		return undefined
	}
	return v
}

// length reads a length field.
func (d *decoder) length() uint64 { return d.uint(d.lenSize) }

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = formatErr("%s at offset %#x: "+format, append([]any{d.what, d.at}, args...)...)
	}
}

// readFull fills b from r at off. A ReaderAt may report io.EOF along with a full
// read at the end of its input; that is success.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}
