package labelfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// runBytes is the size up to which tiles adjacent in a tile row are read or written
// with one call: a 512×512 rectangle of 128×128 tiles takes 4 or 5 calls, not one
// per tile or per row.
const runBytes = 1 << 20

// run is the tiles tx0..tx1 of tile row ty, contiguous in the file: the pixels
// [x0,x1)×[y0,y1), stored tile after tile, each in raster order.
type run struct {
	ty, tx0, tx1   int
	x0, y0, x1, y1 int
	tw, bpv        int   // full tile width, bytes per value
	off            int64 // file offset of tile (tx0, ty)
}

func (r run) rows() int  { return r.y1 - r.y0 }
func (r run) bytes() int { return (r.x1 - r.x0) * r.rows() * r.bpv }

// tile returns the byte offset within the run of tile tx, its first column and width.
func (r run) tile(tx int) (lo, x0, w int) {
	x0 = tx * r.tw
	return (x0 - r.x0) * r.rows() * r.bpv, x0, min(r.tw, r.x1-x0)
}

// runs calls fn for the runs that cover the tiles meeting [x0,x1)×[y0,y1) (not
// empty), in file order. A run holds at most runBytes, or one tile if that is larger.
func (f *File) runs(x0, y0, x1, y1 int, fn func(run) error) error {
	h := &f.h
	for ty := y0 / h.TileHeight; ty <= (y1-1)/h.TileHeight; ty++ {
		ry0 := ty * h.TileHeight
		ry1 := min(ry0+h.TileHeight, h.Height)
		rows := ry1 - ry0
		per := max(1, runBytes/(min(h.TileWidth, h.Width)*rows*f.bpv)) // tiles per run; ≤ MaxTileBytes each
		for tx := x0 / h.TileWidth; tx <= (x1-1)/h.TileWidth; tx += per {
			tx1 := min(tx+per, (x1-1)/h.TileWidth+1) - 1
			r := run{ty: ty, tx0: tx, tx1: tx1,
				x0: tx * h.TileWidth, y0: ry0, x1: min((tx1+1)*h.TileWidth, h.Width), y1: ry1,
				tw: h.TileWidth, bpv: f.bpv,
				off: HeaderSize + (int64(ry0)*int64(h.Width)+int64(tx*h.TileWidth)*int64(rows))*int64(f.bpv)}
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// bufPool holds *[]byte run buffers, reused across calls and goroutines.
var bufPool sync.Pool

// getBuf returns a pooled buffer of length n; the caller puts it back.
func getBuf(n int) *[]byte {
	if p, _ := bufPool.Get().(*[]byte); p != nil && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n)
	return &b
}

func (f *File) readRun(b []byte, off int64) error {
	if _, err := f.f.ReadAt(b, off); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: %w: truncated at offset %d", f.name, ErrCorrupt, off)
		}
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return nil
}

// checkRect checks that [x0,x0+w)×[y0,y0+h) lies in the raster and that n = w·h.
func checkRect(name string, hd *Header, op string, x0, y0, w, h, n int) error {
	// Written so that nothing overflows: w, h ≥ 0 and the sides are < 2³¹.
	if x0 < 0 || y0 < 0 || w < 0 || h < 0 || x0 > hd.Width-w || y0 > hd.Height-h {
		return fmt.Errorf("%s: %s: rectangle at (%d,%d) of %d×%d outside the %d×%d raster", name, op, x0, y0, w, h, hd.Width, hd.Height)
	}
	if n != w*h {
		return fmt.Errorf("%s: %s: %d values for a %d×%d rectangle, want %d", name, op, n, w, h, w*h)
	}
	return nil
}

// ReadRect fills dst (len w·h, row-major) with the values of [x0,x0+w)×[y0,y0+h). It
// reads every tile the rectangle touches, whole, with one call per run of adjacent
// tiles in a tile row. On a File from Open each of those tiles is checked against its
// CRC32C; on every File a value above the kind's maximum is reported. Both wrap
// ErrCorrupt and name the tile. On error dst is partly filled. A rectangle being
// written concurrently may be read partly old and partly new.
func (f *File) ReadRect(x0, y0, w, h int, dst []int32) error {
	if err := checkRect(f.name, &f.h, "ReadRect", x0, y0, w, h, len(dst)); err != nil {
		return err
	}
	if w == 0 || h == 0 {
		return nil
	}
	x1, y1 := x0+w, y0+h
	return f.runs(x0, y0, x1, y1, func(r run) error {
		bp := getBuf(r.bytes())
		defer bufPool.Put(bp)
		b := *bp
		if err := f.readRun(b, r.off); err != nil {
			return err
		}
		var crcs []byte // of the run's tiles, adjacent in the index
		if !f.writable {
			crcs = make([]byte, 4*(r.tx1-r.tx0+1))
			if err := f.readRun(crcs, f.h.indexOff()+4*(int64(r.ty)*int64(f.h.TilesX())+int64(r.tx0))); err != nil {
				return err
			}
		}
		for tx := r.tx0; tx <= r.tx1; tx++ {
			lo, tx0, tw := r.tile(tx)
			tb := b[lo : lo+tw*r.rows()*f.bpv]
			if crcs != nil {
				want := binary.LittleEndian.Uint32(crcs[4*(tx-r.tx0):])
				if got := crc32.Checksum(tb, castagnoli); got != want {
					return fmt.Errorf("%s: %w: tile (%d,%d): checksum mismatch (CRC32C %08x, stored %08x)", f.name, ErrCorrupt, tx, r.ty, got, want)
				}
			}
			cx0, cx1 := max(x0, tx0), min(x1, tx0+tw)
			for y := max(y0, r.y0); y < min(y1, r.y1); y++ {
				d := dst[(y-y0)*w+cx0-x0:][:cx1-cx0]
				if decode(d, tb[((y-r.y0)*tw+cx0-tx0)*f.bpv:], f.bpv) > f.max {
					for i, v := range d {
						if uint32(v) > f.max { // a 4-byte value ≥ 2³¹ is negative as int32
							return fmt.Errorf("%s: %w: tile (%d,%d): pixel (%d,%d): value %d, %v with %d labels has at most %d",
								f.name, ErrCorrupt, tx, r.ty, cx0+i, y, uint32(v), f.h.Kind, f.h.Labels, f.max)
						}
					}
				}
			}
		}
		return nil
	})
}

// WriteRect stores src (len w·h, row-major) into [x0,x0+w)×[y0,y0+h). Only a File
// from Create can be written. Every value is checked first: a value outside [0,
// MaxValue] is an error and nothing is written. Writes of disjoint rectangles may run
// concurrently, even when they share tiles (a partly covered run of tiles is read,
// patched and written back under a per-tile-row lock). Concurrent writes of
// overlapping rectangles may interleave tile run by tile run; the caller serialises
// those.
func (f *File) WriteRect(x0, y0, w, h int, src []int32) error {
	if !f.writable {
		return fmt.Errorf("%s: WriteRect on a file opened read-only", f.name)
	}
	if err := checkRect(f.name, &f.h, "WriteRect", x0, y0, w, h, len(src)); err != nil {
		return err
	}
	if maxUint32(src) > f.max {
		for i, v := range src {
			if uint32(v) > f.max { // negative values wrap above it
				return fmt.Errorf("%s: WriteRect: pixel (%d,%d): value %d outside [0,%d] (%v with %d labels)",
					f.name, x0+i%w, y0+i/w, v, f.max, f.h.Kind, f.h.Labels)
			}
		}
	}
	if w == 0 || h == 0 {
		return nil
	}
	x1, y1 := x0+w, y0+h
	return f.runs(x0, y0, x1, y1, func(r run) error {
		// Only the span from the rectangle's first row in the first tile to its last
		// row in the last tile is written.
		ra, rb := max(y0, r.y0)-r.y0, min(y1, r.y1)-r.y0
		lo0, _, tw0 := r.tile(r.tx0)
		lo1, _, tw1 := r.tile(r.tx1)
		s, e := lo0+ra*tw0*f.bpv, lo1+rb*tw1*f.bpv
		bp := getBuf(e - s)
		defer bufPool.Put(bp)
		b := *bp
		mu := &f.rowLocks[r.ty%lockStripes]
		mu.Lock()
		defer mu.Unlock()
		// Unless the span holds only pixels of the rectangle, the others are read
		// and written back unchanged.
		if full := x0 <= r.x0 && x1 >= r.x1 && (r.tx0 == r.tx1 || ra == 0 && rb == r.rows()); !full {
			if err := f.readRun(b, r.off+int64(s)); err != nil {
				return err
			}
		}
		for tx := r.tx0; tx <= r.tx1; tx++ {
			lo, tx0, tw := r.tile(tx)
			cx0, cx1 := max(x0, tx0), min(x1, tx0+tw)
			for y := r.y0 + ra; y < r.y0+rb; y++ {
				encode(b[lo+((y-r.y0)*tw+cx0-tx0)*f.bpv-s:], src[(y-y0)*w+cx0-x0:][:cx1-cx0], f.bpv)
			}
		}
		if _, err := f.f.WriteAt(b, r.off+int64(s)); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		return nil
	})
}

// decode stores the len(dst) little-endian values of src in dst and returns the
// largest.
func decode(dst []int32, src []byte, bpv int) uint32 {
	switch bpv {
	case 1:
		return decode1(dst, src[:len(dst)])
	case 2:
		return decode2(dst, src[:2*len(dst)])
	}
	var m uint32
	src = src[:4*len(dst)]
	for i := range dst {
		v := binary.LittleEndian.Uint32(src[4*i:])
		dst[i] = int32(v)
		m = max(m, v)
	}
	return m
}

// decode1 is decode of bytes, unrolled by 8 with two maxima (twice as fast as the
// plain loop: the loop-carried max was the bottleneck).
func decode1(dst []int32, src []byte) uint32 {
	var m0, m1 byte
	i := 0
	for ; i+8 <= len(src); i += 8 {
		s, d := src[i:i+8:i+8], dst[i:i+8:i+8]
		d[0], d[1], d[2], d[3] = int32(s[0]), int32(s[1]), int32(s[2]), int32(s[3])
		d[4], d[5], d[6], d[7] = int32(s[4]), int32(s[5]), int32(s[6]), int32(s[7])
		m0 = max(m0, s[0], s[2], s[4], s[6])
		m1 = max(m1, s[1], s[3], s[5], s[7])
	}
	for ; i < len(src); i++ {
		dst[i] = int32(src[i])
		m0 = max(m0, src[i])
	}
	return uint32(max(m0, m1))
}

// decode2 is decode of 2-byte values, unrolled by 4 with two maxima.
func decode2(dst []int32, src []byte) uint32 {
	var m0, m1 uint16
	le := binary.LittleEndian
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		s, d := src[2*i:2*i+8:2*i+8], dst[i:i+4:i+4]
		a, b, c, e := le.Uint16(s), le.Uint16(s[2:]), le.Uint16(s[4:]), le.Uint16(s[6:])
		d[0], d[1], d[2], d[3] = int32(a), int32(b), int32(c), int32(e)
		m0, m1 = max(m0, a, c), max(m1, b, e)
	}
	for ; i < len(dst); i++ {
		v := le.Uint16(src[2*i:])
		dst[i] = int32(v)
		m0 = max(m0, v)
	}
	return uint32(max(m0, m1))
}

// maxUint32 returns the largest of the values of src as uint32 (a negative value
// counts as at least 2³¹), unrolled like decode1.
func maxUint32(src []int32) uint32 {
	var m0, m1 uint32
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s := src[i : i+4 : i+4]
		m0 = max(m0, uint32(s[0]), uint32(s[2]))
		m1 = max(m1, uint32(s[1]), uint32(s[3]))
	}
	for _, v := range src[i:] {
		m0 = max(m0, uint32(v))
	}
	return max(m0, m1)
}

// encode stores the values of src (checked to fit) little-endian in dst.
func encode(dst []byte, src []int32, bpv int) {
	switch bpv {
	case 1:
		dst = dst[:len(src)]
		i := 0
		for ; i+8 <= len(src); i += 8 {
			s, d := src[i:i+8:i+8], dst[i:i+8:i+8]
			d[0], d[1], d[2], d[3] = byte(s[0]), byte(s[1]), byte(s[2]), byte(s[3])
			d[4], d[5], d[6], d[7] = byte(s[4]), byte(s[5]), byte(s[6]), byte(s[7])
		}
		for ; i < len(src); i++ {
			dst[i] = byte(src[i])
		}
	case 2:
		dst = dst[:2*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(v))
		}
	default:
		dst = dst[:4*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(v))
		}
	}
}
