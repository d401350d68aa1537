package labelfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/partopt/partopt/internal/header"
)

// Magic is the first eight bytes of every label file.
const Magic = "PARTOPTL"

// Version is the format version this package writes and reads.
const Version = 1

// HeaderSize is the size in bytes of the fixed header at the start of a file.
const HeaderSize = 64

// Limits of the format, checked before anything is allocated.
const (
	// MaxSide is the largest width, height, tile width or tile height.
	MaxSide = math.MaxInt32
	// MaxLabels is the largest label count K, as in model/grid.
	MaxLabels = 1 << 16
	// MaxTileBytes is the largest stored tile (of the tile size clipped to the
	// raster); a tile is the unit of checksumming, so reads hold whole tiles.
	MaxTileBytes = 1 << 26
	// DefaultTileSize is the tile width and height used when a Header leaves them zero.
	DefaultTileSize = 128
)

// ErrCorrupt is wrapped by every error about a file whose bytes are inconsistent:
// checksum mismatches, truncation, unfinished files, values out of range.
var ErrCorrupt = errors.New("corrupt label file")

var castagnoli = header.Castagnoli

// Kind says what the values mean.
type Kind uint8

const (
	// Labeling: the value of a pixel is its label, in [0, Labels).
	Labeling Kind = iota
	// Persistent: label+1 for a proven (persistent) pixel, 0 for one not proven;
	// values in [0, Labels].
	Persistent
	// Alive: the labels a pixel has left after label elimination, as a mask of
	// up to AlivePlaneLabels bits: plane p (Header.Plane) holds labels
	// [32p, min(32p+32, Labels)), bit l−32p set when label l is alive. A model
	// of K labels takes AlivePlanes(K) planes (one file each); one plane when
	// K ≤ 32, where one set bit means persistent.
	Alive
)

// AlivePlaneLabels is the number of labels of one Alive plane: its values are
// 32-bit masks.
const AlivePlaneLabels = 32

// AlivePlanes is the number of Alive planes of a model of k labels.
func AlivePlanes(k int) int { return (k + AlivePlaneLabels - 1) / AlivePlaneLabels }

func (k Kind) String() string {
	switch k {
	case Labeling:
		return "labeling"
	case Persistent:
		return "persistent"
	case Alive:
		return "alive"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Header describes a label raster. The zero TileWidth and TileHeight mean
// DefaultTileSize.
type Header struct {
	Width, Height int // pixels; the value of pixel (x, y) is the (y·Width+x)-th in raster order
	Labels        int // K ≥ 1, at most MaxLabels
	Kind          Kind
	Plane         int // Alive only: which 32 labels the masks hold (see Alive); 0 otherwise
	// TileWidth × TileHeight pixels per tile (edge tiles are smaller).
	TileWidth, TileHeight int
}

// MaxValue is the largest valid value: K−1 for Labeling, K for Persistent, 2^n − 1
// for Alive with the n ≤ 32 labels of its plane.
func (h Header) MaxValue() int {
	switch h.Kind {
	case Persistent:
		return h.Labels
	case Alive:
		return 1<<min(h.Labels-AlivePlaneLabels*h.Plane, AlivePlaneLabels) - 1
	}
	return h.Labels - 1
}

// BytesPerValue is the stored size of one value: 1 if MaxValue < 256, 2 if < 65536,
// else 4 (values are unsigned: an Alive mask of 32 labels may be negative as int32).
func (h Header) BytesPerValue() int {
	switch m := h.MaxValue(); {
	case m < 1<<8:
		return 1
	case m < 1<<16:
		return 2
	}
	return 4
}

// TilesX is the number of tile columns.
func (h Header) TilesX() int { return (h.Width + h.TileWidth - 1) / h.TileWidth }

// TilesY is the number of tile rows.
func (h Header) TilesY() int { return (h.Height + h.TileHeight - 1) / h.TileHeight }

// dataBytes is the size of all tiles; indexOff the offset of the tile index.
func (h Header) dataBytes() int64 { return int64(h.Width) * int64(h.Height) * int64(h.BytesPerValue()) }
func (h Header) indexOff() int64  { return HeaderSize + h.dataBytes() }
func (h Header) numTiles() int64  { return int64(h.TilesX()) * int64(h.TilesY()) }

// fileSize is the size of a finished file.
func (h Header) fileSize() int64 { return h.indexOff() + 4*h.numTiles() }

// mulOK returns a·b and whether it fits in int64 without overflow (a, b ≥ 0).
func mulOK(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int(lo), hi == 0 && lo <= math.MaxInt64
}

// normalise fills in the default tile size and checks every field, so that every
// size derived from the header fits in int64 without overflow.
func (h *Header) normalise() error {
	if h.TileWidth == 0 {
		h.TileWidth = DefaultTileSize
	}
	if h.TileHeight == 0 {
		h.TileHeight = DefaultTileSize
	}
	switch {
	case h.Width < 1 || h.Width > MaxSide || h.Height < 1 || h.Height > MaxSide:
		return fmt.Errorf("size %d×%d out of range [1,%d]", h.Width, h.Height, MaxSide)
	case h.Labels < 1 || h.Labels > MaxLabels:
		return fmt.Errorf("%d labels out of range [1,%d]", h.Labels, MaxLabels)
	case h.Kind != Labeling && h.Kind != Persistent && h.Kind != Alive:
		return fmt.Errorf("unknown kind %d", h.Kind)
	case h.Kind != Alive && h.Plane != 0:
		return fmt.Errorf("%v raster of plane %d, want 0 (planes are Alive's)", h.Kind, h.Plane)
	case h.Kind == Alive && (h.Plane < 0 || h.Plane >= AlivePlanes(h.Labels)):
		return fmt.Errorf("%v plane %d of %d labels, want one of [0,%d)", h.Kind, h.Plane, h.Labels, AlivePlanes(h.Labels))
	case h.TileWidth < 1 || h.TileWidth > MaxSide || h.TileHeight < 1 || h.TileHeight > MaxSide:
		return fmt.Errorf("tile size %d×%d out of range [1,%d]", h.TileWidth, h.TileHeight, MaxSide)
	}
	// Both factors are < 2³¹, so the product cannot overflow.
	if tb := min(h.TileWidth, h.Width) * min(h.TileHeight, h.Height) * h.BytesPerValue(); tb > MaxTileBytes {
		return fmt.Errorf("tile %d×%d of %d-byte values exceeds %d bytes", h.TileWidth, h.TileHeight, h.BytesPerValue(), MaxTileBytes)
	}
	pixels, _ := mulOK(h.Width, h.Height) // < 2⁶²
	// Values plus the index (at most 4 bytes per pixel) must fit, with room to spare.
	if total, ok := mulOK(pixels, h.BytesPerValue()+4); !ok || total > math.MaxInt64/2 {
		return fmt.Errorf("%d×%d pixels overflow the file size", h.Width, h.Height)
	}
	return nil
}

// fixed is the header as stored.
type fixed struct {
	h        Header
	nTiles   uint64
	indexOff uint64 // 0 until Close
	indexCRC uint32
}

func (f *fixed) encode() []byte {
	b := header.New(Magic, Version, HeaderSize)
	le := binary.LittleEndian
	le.PutUint32(b[16:], uint32(f.h.Width))
	le.PutUint32(b[20:], uint32(f.h.Height))
	le.PutUint32(b[24:], uint32(f.h.Labels))
	b[28] = byte(f.h.Kind)
	b[29] = byte(f.h.BytesPerValue())
	le.PutUint16(b[30:], uint16(f.h.Plane))
	le.PutUint32(b[32:], uint32(f.h.TileWidth))
	le.PutUint32(b[36:], uint32(f.h.TileHeight))
	le.PutUint64(b[40:], f.nTiles)
	le.PutUint64(b[48:], f.indexOff)
	le.PutUint32(b[56:], f.indexCRC)
	return header.Seal(b)
}

// decodeHeader parses and checks the fixed header. Errors do not name the file; the
// caller adds it.
func decodeHeader(b []byte) (*fixed, error) {
	le := binary.LittleEndian
	if err := header.Check(b, Magic, "label file", Version, HeaderSize); err != nil {
		return nil, err
	}
	f := &fixed{
		h: Header{
			Width: int(le.Uint32(b[16:])), Height: int(le.Uint32(b[20:])), Labels: int(le.Uint32(b[24:])),
			Kind: Kind(b[28]), Plane: int(le.Uint16(b[30:])), TileWidth: int(le.Uint32(b[32:])), TileHeight: int(le.Uint32(b[36:])),
		},
		nTiles: le.Uint64(b[40:]), indexOff: le.Uint64(b[48:]), indexCRC: le.Uint32(b[56:]),
	}
	if f.h.TileWidth == 0 || f.h.TileHeight == 0 {
		return nil, fmt.Errorf("tile size %d×%d, want nonzero", f.h.TileWidth, f.h.TileHeight)
	}
	if err := f.h.normalise(); err != nil {
		return nil, err
	}
	if bpv := int(b[29]); bpv != f.h.BytesPerValue() {
		return nil, fmt.Errorf("%d bytes per value, %v with %d labels has %d", bpv, f.h.Kind, f.h.Labels, f.h.BytesPerValue())
	}
	if want := uint64(f.h.numTiles()); f.nTiles != want {
		return nil, fmt.Errorf("header declares %d tiles, %d×%d pixels in %d×%d tiles make %d",
			f.nTiles, f.h.Width, f.h.Height, f.h.TileWidth, f.h.TileHeight, want)
	}
	return f, nil
}
