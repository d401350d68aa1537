package grid

import (
	"io"
	"os"
)

// retileBandBytes bounds the band of rows Retile reads at a time (a band is one tile
// row of the source, or fewer rows when a tile row is larger).
const retileBandBytes = 64 << 20

// Retile writes the grid of r to w with tiles of tileWidth×tileHeight pixels (0:
// DefaultTileSize) and the header otherwise unchanged: every value is copied bit for
// bit, in any connectivity, kind and weight mode. It streams: it reads bands of whole
// rows (one tile row of r, or as many rows as fit in 64 MiB, at least one), and the
// Writer buffers one tile row of the output, so its memory is bounded by a band for a
// grid of any size. Errors reading r wrap ErrCorrupt when r's file is damaged.
func (r *Reader) Retile(w io.WriteSeeker, tileWidth, tileHeight int) error {
	h := r.h
	h.TileWidth, h.TileHeight = tileWidth, tileHeight
	wr, err := NewWriter(w, h)
	if err != nil {
		return err
	}
	rowBytes := r.h.Width * r.h.perPixel() * 4
	band := max(1, min(r.h.TileHeight, retileBandBytes/rowBytes))
	for y := 0; y < r.h.Height; y += band {
		u := rect{0, y, r.h.Width, min(y+band, r.h.Height)}
		unary, weights, err := r.load(u, u)
		if err != nil {
			return err
		}
		if err := wr.WriteRows(unary, weights); err != nil {
			return err
		}
	}
	return wr.Close()
}

// RetileFile writes the grid of r to a new file path with Retile. On failure the file
// is left unfinished (readers refuse it); the caller removes it.
func (r *Reader) RetileFile(path string, tileWidth, tileHeight int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = r.Retile(f, tileWidth, tileHeight)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
