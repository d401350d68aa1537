package grid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// Reader reads windows of a grid file by random access. Open reads and checks only
// the header, the table and the tile index; every window reads the tiles it needs and
// checks their checksums. A Reader is safe for concurrent use when its io.ReaderAt is
// (an *os.File is).
type Reader struct {
	name   string
	r      io.ReaderAt
	closer io.Closer
	h      Header
	nd     int      // weights per pixel stored (0 unless PerEdge)
	index  []uint64 // per tile: offset
	crcs   []uint32 // per tile: CRC32C
}

// Open opens a grid file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := NewReader(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads a grid file of size bytes from r; name is used in errors.
func NewReader(r io.ReaderAt, size int64, name string) (*Reader, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", name, ErrCorrupt, fmt.Sprintf(format, args...))
	}
	f, err := readHead(r, size, name)
	if err != nil {
		return nil, err
	}
	h := f.h
	nTiles := f.nTiles
	dataStart := uint64(HeaderSize + h.tableBytes())
	ib := make([]byte, nTiles*indexEntrySize)
	if _, err := r.ReadAt(ib, int64(f.indexOff)); err != nil {
		return nil, fmt.Errorf("%s: reading the tile index: %w", name, err)
	}
	if got := crc32.Checksum(ib, castagnoli); got != f.indexCRC {
		return nil, corrupt("tile index checksum mismatch (CRC32C %08x, stored %08x)", got, f.indexCRC)
	}
	rd := &Reader{name: name, r: r, h: h, index: make([]uint64, nTiles), crcs: make([]uint32, nTiles)}
	if h.Mode == PerEdge {
		rd.nd = h.Connectivity / 2
	}
	off := dataStart
	for i := range rd.index {
		tx, ty := i%h.TilesX(), i/h.TilesX()
		e := ib[i*indexEntrySize:]
		o, n := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:])
		if want := h.tileBytes(tx, ty); o != off || int(n) != want {
			return nil, corrupt("tile (%d,%d): index says offset %d length %d, want %d and %d", tx, ty, o, n, off, want)
		}
		rd.index[i], rd.crcs[i] = o, binary.LittleEndian.Uint32(e[12:])
		off += uint64(n)
	}
	return rd, nil
}

// Close closes the file of a Reader made by Open.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// Header returns the file's header (the table is shared: do not modify it).
func (r *Reader) Header() Header { return r.h }

// Name is the file name used in errors.
func (r *Reader) Name() string { return r.name }

// readTile reads tile (tx, ty) into buf (grown as needed) and checks its checksum.
func (r *Reader) readTile(tx, ty int, buf []byte) ([]byte, error) {
	i := ty*r.h.TilesX() + tx
	n := r.h.tileBytes(tx, ty)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := r.r.ReadAt(buf, int64(r.index[i])); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return buf, fmt.Errorf("%s: %w: tile (%d,%d): truncated", r.name, ErrCorrupt, tx, ty)
		}
		return buf, fmt.Errorf("%s: tile (%d,%d): %w", r.name, tx, ty, err)
	}
	if got := crc32.Checksum(buf, castagnoli); got != r.crcs[i] {
		return buf, fmt.Errorf("%s: %w: tile (%d,%d): checksum mismatch (CRC32C %08x, stored %08x)", r.name, ErrCorrupt, tx, ty, got, r.crcs[i])
	}
	return buf, nil
}

// rect is the pixel rectangle [x0,x1)×[y0,y1).
type rect struct{ x0, y0, x1, y1 int }

func (a rect) contains(x, y int) bool { return x >= a.x0 && x < a.x1 && y >= a.y0 && y < a.y1 }

// load reads the tiles intersecting u (unaries wanted in the rectangle u) and e (weights
// wanted in the rectangle e, PerEdge only; e ⊇ u or empty). It returns the unaries of u
// (pixel-major within u) and the weights of e (D per pixel).
func (r *Reader) load(u, e rect) ([]float32, []float32, error) {
	h := &r.h
	uw, ew := u.x1-u.x0, e.x1-e.x0
	unary := make([]float32, uw*(u.y1-u.y0)*h.Labels)
	var weights []float32
	if r.nd > 0 {
		weights = make([]float32, ew*(e.y1-e.y0)*r.nd)
	}
	all := u
	if r.nd > 0 {
		all = e
	}
	var buf []byte
	le := binary.LittleEndian
	for ty := all.y0 / h.TileHeight; ty <= (all.y1-1)/h.TileHeight; ty++ {
		for tx := all.x0 / h.TileWidth; tx <= (all.x1-1)/h.TileWidth; tx++ {
			var err error
			if buf, err = r.readTile(tx, ty, buf); err != nil {
				return nil, nil, err
			}
			x0, y0, x1, y1 := h.tileRect(tx, ty)
			tw := x1 - x0
			wOff := tw * (y1 - y0) * h.Labels * 4
			for y := max(y0, all.y0); y < min(y1, all.y1); y++ {
				for x := max(x0, all.x0); x < min(x1, all.x1); x++ {
					p := (y-y0)*tw + (x - x0)
					if u.contains(x, y) {
						dst := unary[((y-u.y0)*uw+(x-u.x0))*h.Labels:][:h.Labels]
						for l := range dst {
							v := math.Float32frombits(le.Uint32(buf[(p*h.Labels+l)*4:]))
							if math.IsNaN(float64(v)) || math.IsInf(float64(v), -1) {
								return nil, nil, fmt.Errorf("%s: %w: tile (%d,%d): pixel (%d,%d) label %d: unary %v", r.name, ErrCorrupt, tx, ty, x, y, l, v)
							}
							dst[l] = v
						}
					}
					if r.nd > 0 && e.contains(x, y) {
						dst := weights[((y-e.y0)*ew+(x-e.x0))*r.nd:][:r.nd]
						for d := range dst {
							v := math.Float32frombits(le.Uint32(buf[wOff+(p*r.nd+d)*4:]))
							if !(v >= 0) || math.IsInf(float64(v), 1) {
								return nil, nil, fmt.Errorf("%s: %w: tile (%d,%d): pixel (%d,%d) edge %d: weight %v", r.name, ErrCorrupt, tx, ty, x, y, d, v)
							}
							dst[d] = v
						}
					}
				}
			}
		}
	}
	return unary, weights, nil
}

// readHead reads and checks what precedes the tiles: the header, checked against the
// file's size (so that every size it declares is backed by the file), and the table
// of Mode Table, checked against its checksum, in f.h.Table. It reads no tile and not
// the tile index, so its cost does not grow with the image.
func readHead(r io.ReaderAt, size int64, name string) (*fixed, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", name, ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if size < HeaderSize {
		return nil, corrupt("truncated: %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	b := make([]byte, HeaderSize)
	if _, err := r.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", name, err)
	}
	f, err := decodeHeader(b)
	if err != nil {
		return nil, corrupt("%v", err)
	}
	h := &f.h
	tiles, _ := h.normalise()
	nTiles := uint64(h.TilesX()) * uint64(h.TilesY())
	if f.indexOff == 0 {
		return nil, corrupt("unfinished file (the writer was not closed)")
	}
	if f.nTiles != nTiles {
		return nil, corrupt("header declares %d tiles, %d×%d pixels in %d×%d tiles make %d", f.nTiles, h.Width, h.Height, h.TileWidth, h.TileHeight, nTiles)
	}
	wantOff := uint64(HeaderSize+h.tableBytes()) + uint64(tiles)
	if f.indexOff != wantOff {
		return nil, corrupt("index offset %d, want %d", f.indexOff, wantOff)
	}
	if want := wantOff + nTiles*indexEntrySize; uint64(size) != want {
		if uint64(size) < want {
			return nil, corrupt("truncated: %d bytes, want %d", size, want)
		}
		return nil, corrupt("%d bytes, want %d (trailing data)", size, want)
	}
	// Every size is now backed by the file's length, so allocating by it is safe.
	if h.Mode == Table {
		if f.tableOff != HeaderSize {
			return nil, corrupt("table offset %d, want %d", f.tableOff, HeaderSize)
		}
		tb := make([]byte, h.tableBytes())
		if _, err := r.ReadAt(tb, HeaderSize); err != nil {
			return nil, fmt.Errorf("%s: reading the table: %w", name, err)
		}
		if got := crc32.Checksum(tb, castagnoli); got != f.tableCRC {
			return nil, corrupt("table checksum mismatch (CRC32C %08x, stored %08x)", got, f.tableCRC)
		}
		h.Table = make([]float32, h.Labels*h.Labels)
		for i := range h.Table {
			h.Table[i] = math.Float32frombits(binary.LittleEndian.Uint32(tb[4*i:]))
		}
		if err := h.checkTable(); err != nil {
			return nil, corrupt("%v", err)
		}
	} else if f.tableOff != 0 || f.tableCRC != 0 {
		return nil, corrupt("table offset %d in weight mode %v, want 0", f.tableOff, h.Mode)
	}
	return f, nil
}
