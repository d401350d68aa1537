package grid

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// Writer streams a grid model to a file, one band of whole rows at a time. It buffers
// one tile row (TileHeight rows) of the image, TileHeight·Width·(K + per-edge weights)
// float32 values, and one encoded tile; nothing else grows with the model.
type Writer struct {
	name   string
	w      io.WriteSeeker
	bw     *bufio.Writer
	closer io.Closer // set by Create: the file the Writer owns
	f      fixed
	nd     int // weights per pixel (0 unless PerEdge)

	y      int       // rows received
	band   []float32 // rows y0..y of the current tile row, perPixel values per pixel
	bandY0 int
	tile   []byte
	pos    uint64 // bytes written so far
	index  []byte // the tile index, 16 bytes per tile
	err    error
	closed bool
}

// Create creates the file path and returns a Writer that closes it on Close.
func Create(path string, hdr Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(f, hdr)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.closer = f
	return w, nil
}

// NewWriter starts a grid file on w, which must be positioned at its start (an
// *os.File just created, for example). Errors name the file when w has a Name method.
// The header is checked (sizes, kinds, the table's values) and written at once with
// the table; Close completes it. The caller then sends every row with WriteRows.
func NewWriter(w io.WriteSeeker, hdr Header) (*Writer, error) {
	name := "grid"
	if n, ok := w.(interface{ Name() string }); ok {
		name = n.Name()
	}
	hdr.Table = append([]float32(nil), hdr.Table...)
	if _, err := hdr.normalise(); err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	if err := hdr.checkTable(); err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	if pos, err := w.Seek(0, io.SeekCurrent); err != nil || pos != 0 {
		return nil, fmt.Errorf("%s: writer must start at offset 0 (at %d, %v)", name, pos, err)
	}
	wr := &Writer{name: name, w: w, bw: bufio.NewWriterSize(w, 1<<20)}
	wr.f.h = hdr
	if hdr.Mode == PerEdge {
		wr.nd = hdr.Connectivity / 2
	}
	nTiles := uint64(hdr.TilesX()) * uint64(hdr.TilesY())
	if nTiles*indexEntrySize > 1<<40 {
		return nil, fmt.Errorf("%s: header: %d tiles is too many", name, nTiles)
	}
	wr.f.nTiles = nTiles
	// The header is rewritten by Close; until then its index offset is 0, which
	// readers report as an unfinished file.
	wr.write(wr.f.encode())
	if hdr.Mode == Table {
		b := make([]byte, 4*len(hdr.Table))
		for i, v := range hdr.Table {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		wr.f.tableOff = HeaderSize
		wr.f.tableCRC = crc32.Checksum(b, castagnoli)
		wr.write(b)
	}
	if wr.err != nil {
		return nil, wr.err
	}
	return wr, nil
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	_, w.err = w.bw.Write(b)
	if w.err != nil {
		w.err = fmt.Errorf("%s: %w", w.name, w.err)
	}
	w.pos += uint64(len(b))
}

// Header returns the header being written, with defaults filled in.
func (w *Writer) Header() Header { return w.f.h }

// RowsWritten is the number of rows received so far.
func (w *Writer) RowsWritten() int { return w.y }

// WriteRows appends n ≥ 1 whole rows: unary holds n·Width·K values (pixel-major, label
// fastest) and, in Mode PerEdge, weights holds n·Width·D values (D = Connectivity/2,
// directions in the order of Header.Dirs); otherwise weights must be empty. Weights of
// edges that leave the image are ignored and stored as 0. Unaries may be +Inf
// (forbidden labels) but not NaN or −Inf; weights must be finite and ≥ 0. A rejected
// call writes nothing and leaves the Writer usable. The slices are not retained.
func (w *Writer) WriteRows(unary, weights []float32) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("%s: WriteRows after Close", w.name)
	}
	h := &w.f.h
	rowU := h.Width * h.Labels
	if len(unary) == 0 || len(unary)%rowU != 0 {
		return fmt.Errorf("%s: WriteRows: %d unary values is not a positive multiple of the row size %d×%d", w.name, len(unary), h.Width, h.Labels)
	}
	n := len(unary) / rowU
	if len(weights) != n*h.Width*w.nd {
		return fmt.Errorf("%s: WriteRows: %d weights for %d rows, want %d", w.name, len(weights), n, n*h.Width*w.nd)
	}
	if w.y+n > h.Height {
		return fmt.Errorf("%s: WriteRows: rows %d..%d beyond the height %d", w.name, w.y, w.y+n-1, h.Height)
	}
	for i, v := range unary {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), -1) {
			p := i / h.Labels
			return fmt.Errorf("%s: pixel (%d,%d) label %d: unary %v, want a number or +Inf", w.name, p%h.Width, w.y+p/h.Width, i%h.Labels, v)
		}
	}
	for i, v := range weights {
		p := i / w.nd
		x, y, d := p%h.Width, w.y+p/h.Width, dirs[i%w.nd]
		if !w.inside(x+d[0], y+d[1]) {
			continue
		}
		if !(v >= 0) || math.IsInf(float64(v), 1) {
			return fmt.Errorf("%s: pixel (%d,%d) edge to (%d,%d): weight %v, want finite and ≥ 0", w.name, x, y, x+d[0], y+d[1], v)
		}
	}
	pp := h.perPixel()
	for r := range n {
		if w.band == nil {
			w.band = make([]float32, 0, min(h.TileHeight, h.Height)*h.Width*pp)
		}
		for x := range h.Width {
			w.band = append(w.band, unary[(r*h.Width+x)*h.Labels:][:h.Labels]...)
			for d := range w.nd {
				v := weights[(r*h.Width+x)*w.nd+d]
				if !w.inside(x+dirs[d][0], w.y+dirs[d][1]) {
					v = 0
				}
				w.band = append(w.band, v)
			}
		}
		w.y++
		if w.y-w.bandY0 == h.TileHeight || w.y == h.Height {
			w.flushBand()
			if w.err != nil {
				return w.err
			}
		}
	}
	return nil
}

func (w *Writer) inside(x, y int) bool {
	return x >= 0 && x < w.f.h.Width && y >= 0 && y < w.f.h.Height
}

// flushBand encodes the buffered tile row as tiles, left to right.
func (w *Writer) flushBand() {
	h := &w.f.h
	pp := h.perPixel()
	ty := w.bandY0 / h.TileHeight
	rows := w.y - w.bandY0
	for tx := range h.TilesX() {
		x0, _, x1, _ := h.tileRect(tx, ty)
		w.tile = w.tile[:0]
		// unaries of the tile's pixels in raster order, then their weights
		for r := range rows {
			for x := x0; x < x1; x++ {
				for _, v := range w.band[(r*h.Width+x)*pp:][:h.Labels] {
					w.tile = binary.LittleEndian.AppendUint32(w.tile, math.Float32bits(v))
				}
			}
		}
		for r := range rows {
			for x := x0; x < x1; x++ {
				for _, v := range w.band[(r*h.Width+x)*pp+h.Labels:][:w.nd] {
					w.tile = binary.LittleEndian.AppendUint32(w.tile, math.Float32bits(v))
				}
			}
		}
		w.index = binary.LittleEndian.AppendUint64(w.index, w.pos)
		w.index = binary.LittleEndian.AppendUint32(w.index, uint32(len(w.tile)))
		w.index = binary.LittleEndian.AppendUint32(w.index, crc32.Checksum(w.tile, castagnoli))
		w.write(w.tile)
	}
	w.band = w.band[:0]
	w.bandY0 = w.y
}

// Close writes the tile index and the final header. It fails, leaving an unfinished
// file that readers refuse, unless all Height rows were written. A Writer made by
// Create closes its file.
func (w *Writer) Close() error {
	if w.closed {
		return errors.New(w.name + ": Writer closed twice")
	}
	w.closed = true
	err := w.finish()
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (w *Writer) finish() error {
	if w.err != nil {
		return w.err
	}
	if w.y != w.f.h.Height {
		w.bw.Flush() // what was written stays, marked unfinished by its header
		return fmt.Errorf("%s: closed after %d of %d rows; the file is unfinished", w.name, w.y, w.f.h.Height)
	}
	w.f.indexOff = w.pos
	w.f.indexCRC = crc32.Checksum(w.index, castagnoli)
	w.write(w.index)
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	if _, err := w.w.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	if _, err := w.w.Write(w.f.encode()); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	_, err := w.w.Seek(int64(w.pos), io.SeekStart)
	return err
}
