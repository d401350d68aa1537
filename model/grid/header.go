package grid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/partopt/partopt/internal/header"
	"github.com/partopt/partopt/model"
)

// Magic is the first eight bytes of every grid file.
const Magic = "PARTOPTG"

// Version is the format version this package writes and reads.
const Version = 1

// HeaderSize is the size in bytes of the fixed header at the start of a file.
const HeaderSize = 128

// indexEntrySize is the size of one tile index entry: offset u64, length u32, crc u32.
const indexEntrySize = 16

// Limits of the format, checked before anything is allocated.
const (
	// MaxSide is the largest width or height.
	MaxSide = math.MaxInt32
	// MaxLabels is the largest label count K.
	MaxLabels = 1 << 16
	// MaxTileBytes is the largest encoded tile; a tile is the unit of reading.
	MaxTileBytes = 1 << 30
	// DefaultTileSize is the tile width and height used when a Header leaves them zero.
	DefaultTileSize = 128
)

// WeightMode says where the pairwise weights live.
type WeightMode uint8

const (
	// Shared: one weight W (and truncation T) for every edge.
	Shared WeightMode = iota
	// PerEdge: one float32 weight per edge, stored in the tile of the edge's first pixel.
	PerEdge
	// Table: one explicit K×K float32 table shared by every edge (Kind Explicit).
	Table
)

var modeNames = [...]string{"shared", "per-edge", "table"}

func (m WeightMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", m)
}

// ErrCorrupt is wrapped by every error about a file whose bytes are inconsistent:
// checksum mismatches, truncation, values out of range.
var ErrCorrupt = errors.New("corrupt grid file")

var castagnoli = header.Castagnoli

// Header describes a grid model. The zero TileWidth and TileHeight mean DefaultTileSize.
type Header struct {
	Width, Height int // pixels; variable of pixel (x, y) is y·Width+x
	Labels        int // K, the label count of every pixel
	// Connectivity is 4 (right and down edges) or 8 (also down-right and down-left).
	Connectivity int
	// Kind of every pairwise term: Potts, TruncatedLinear, TruncatedQuadratic with
	// Mode Shared or PerEdge, or Explicit with Mode Table.
	Kind model.Kind
	Mode WeightMode
	// W is the shared weight (Mode Shared); T the truncation of the truncated kinds
	// (> 0, +Inf allowed), 0 for Potts and Explicit.
	W, T float64
	// Table is the K×K table of Mode Table, first argument slowest.
	Table []float32
	// Offset is a constant added to every energy.
	Offset float64
	// TileWidth × TileHeight pixels per tile (edge tiles are smaller).
	TileWidth, TileHeight int
}

// Dirs returns the edge directions (dx, dy) stored per pixel, in storage order:
// right (1,0), down (0,1), and for 8-connectivity down-right (1,1), down-left (−1,1).
// The edge of direction d from pixel p=(x,y) joins p (first argument) to (x+dx, y+dy).
func (h *Header) Dirs() [][2]int {
	return dirs[:h.Connectivity/2]
}

var dirs = [4][2]int{{1, 0}, {0, 1}, {1, 1}, {-1, 1}}

// TilesX and TilesY are the numbers of tile columns and rows.
func (h *Header) TilesX() int { return (h.Width + h.TileWidth - 1) / h.TileWidth }

// TilesY is the number of tile rows.
func (h *Header) TilesY() int { return (h.Height + h.TileHeight - 1) / h.TileHeight }

// Function returns the pairwise function of an edge of weight w (ignored unless
// Mode is PerEdge).
func (h *Header) Function(w float64) model.Function {
	f := model.Function{Kind: h.Kind, Shape: []int{h.Labels, h.Labels}, W: h.W, T: h.T}
	switch h.Mode {
	case PerEdge:
		f.W = w
	case Table:
		f.W = 0
		f.Table = make([]float64, len(h.Table))
		for i, v := range h.Table {
			f.Table[i] = float64(v)
		}
	}
	return f
}

// perPixel is the number of float32 values stored per pixel.
func (h *Header) perPixel() int {
	n := h.Labels
	if h.Mode == PerEdge {
		n += h.Connectivity / 2
	}
	return n
}

// tileRect returns the pixel rectangle [x0,x1)×[y0,y1) of tile (tx, ty).
func (h *Header) tileRect(tx, ty int) (x0, y0, x1, y1 int) {
	x0, y0 = tx*h.TileWidth, ty*h.TileHeight
	return x0, y0, min(x0+h.TileWidth, h.Width), min(y0+h.TileHeight, h.Height)
}

// tileBytes is the encoded size of tile (tx, ty).
func (h *Header) tileBytes(tx, ty int) int {
	x0, y0, x1, y1 := h.tileRect(tx, ty)
	return (x1 - x0) * (y1 - y0) * h.perPixel() * 4
}

func (h *Header) tableBytes() int {
	if h.Mode == Table {
		return h.Labels * h.Labels * 4
	}
	return 0
}

// mulOK returns a·b and whether it fits in int64 without overflow (a, b ≥ 0).
func mulOK(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int(lo), hi == 0 && lo <= math.MaxInt64
}

// normalise fills in defaults and checks every field, so that all sizes derived from
// the header fit in int without overflow. It returns the total size of the tiles.
func (h *Header) normalise() (int, error) {
	if h.TileWidth == 0 {
		h.TileWidth = DefaultTileSize
	}
	if h.TileHeight == 0 {
		h.TileHeight = DefaultTileSize
	}
	if h.Connectivity == 0 {
		h.Connectivity = 4
	}
	if h.Kind == model.Potts || h.Kind == model.Explicit {
		h.T = 0
	}
	switch {
	case h.Width < 1 || h.Width > MaxSide || h.Height < 1 || h.Height > MaxSide:
		return 0, fmt.Errorf("size %d×%d out of range [1,%d]", h.Width, h.Height, MaxSide)
	case h.Labels < 1 || h.Labels > MaxLabels:
		return 0, fmt.Errorf("%d labels out of range [1,%d]", h.Labels, MaxLabels)
	case h.Connectivity != 4 && h.Connectivity != 8:
		return 0, fmt.Errorf("connectivity %d, want 4 or 8", h.Connectivity)
	case h.TileWidth < 1 || h.TileWidth > MaxSide || h.TileHeight < 1 || h.TileHeight > MaxSide:
		return 0, fmt.Errorf("tile size %d×%d out of range [1,%d]", h.TileWidth, h.TileHeight, MaxSide)
	case math.IsNaN(h.Offset) || math.IsInf(h.Offset, 0):
		return 0, fmt.Errorf("offset %v, want finite", h.Offset)
	}
	switch h.Kind {
	case model.Potts, model.TruncatedLinear, model.TruncatedQuadratic:
		if h.Mode != Shared && h.Mode != PerEdge {
			return 0, fmt.Errorf("%v pairwise terms with weight mode %v, want shared or per-edge", h.Kind, h.Mode)
		}
		if h.Kind != model.Potts && !(h.T > 0) {
			return 0, fmt.Errorf("%v truncation %v, want > 0", h.Kind, h.T)
		}
		if h.Mode == Shared && (math.IsNaN(h.W) || math.IsInf(h.W, 0) || h.W < 0) {
			return 0, fmt.Errorf("shared weight %v, want finite and ≥ 0", h.W)
		}
		if h.Mode == PerEdge && h.W != 0 {
			return 0, fmt.Errorf("shared weight %v with per-edge weights, want 0", h.W)
		}
		if len(h.Table) != 0 {
			return 0, fmt.Errorf("a table with %v pairwise terms", h.Kind)
		}
	case model.Explicit:
		if h.Mode != Table {
			return 0, fmt.Errorf("explicit pairwise terms with weight mode %v, want table", h.Mode)
		}
		if h.Labels*h.Labels > model.MaxTableSize {
			return 0, fmt.Errorf("a %d×%d table has more than %d entries", h.Labels, h.Labels, model.MaxTableSize)
		}
		if h.W != 0 {
			return 0, fmt.Errorf("shared weight %v with a table, want 0", h.W)
		}
	default:
		return 0, fmt.Errorf("unknown pairwise kind %d", h.Kind)
	}
	if tb, ok := mulOK(h.TileWidth, h.TileHeight); !ok || tb > MaxTileBytes/4/h.perPixel() {
		return 0, fmt.Errorf("tile %d×%d of %d values per pixel exceeds %d bytes", h.TileWidth, h.TileHeight, h.perPixel(), MaxTileBytes)
	}
	pixels, _ := mulOK(h.Width, h.Height) // < 2^62
	total, ok := mulOK(pixels, h.perPixel()*4)
	if !ok || total > math.MaxInt64/2 {
		return 0, fmt.Errorf("%d×%d pixels of %d values overflow the file size", h.Width, h.Height, h.perPixel())
	}
	return total, nil
}

// checkTable validates the table of Mode Table (len K·K, no NaN or −Inf).
func (h *Header) checkTable() error {
	if h.Mode != Table {
		return nil
	}
	if len(h.Table) != h.Labels*h.Labels {
		return fmt.Errorf("table has %d entries, want %d×%d", len(h.Table), h.Labels, h.Labels)
	}
	for i, v := range h.Table {
		if err := model.CheckValue(float64(v)); err != nil {
			return fmt.Errorf("table entry %d: %w", i, err)
		}
	}
	return nil
}

// fixed is the header as stored, apart from the table.
type fixed struct {
	h                  Header
	tableOff, indexOff uint64
	tableCRC, indexCRC uint32
	nTiles             uint64
}

func (f *fixed) encode() []byte {
	b := header.New(Magic, Version, HeaderSize)
	le := binary.LittleEndian
	le.PutUint32(b[16:], uint32(f.h.Width))
	le.PutUint32(b[20:], uint32(f.h.Height))
	le.PutUint32(b[24:], uint32(f.h.Labels))
	b[28] = byte(f.h.Connectivity)
	b[29] = byte(f.h.Kind)
	b[30] = byte(f.h.Mode)
	le.PutUint64(b[32:], math.Float64bits(f.h.T))
	le.PutUint64(b[40:], math.Float64bits(f.h.W))
	le.PutUint64(b[48:], math.Float64bits(f.h.Offset))
	le.PutUint32(b[56:], uint32(f.h.TileWidth))
	le.PutUint32(b[60:], uint32(f.h.TileHeight))
	le.PutUint64(b[64:], f.tableOff)
	le.PutUint32(b[72:], f.tableCRC)
	le.PutUint32(b[76:], f.indexCRC)
	le.PutUint64(b[80:], f.indexOff)
	le.PutUint64(b[88:], f.nTiles)
	return header.Seal(b)
}

// decodeHeader parses and checks the fixed header (not the table). Errors do not name
// the file; the caller adds it.
func decodeHeader(b []byte) (*fixed, error) {
	le := binary.LittleEndian
	if err := header.Check(b, Magic, "grid file", Version, HeaderSize); err != nil {
		return nil, err
	}
	if b[31] != 0 {
		return nil, fmt.Errorf("reserved byte 31 is %d, want 0", b[31])
	}
	for i := 96; i < 124; i++ {
		if b[i] != 0 {
			return nil, fmt.Errorf("reserved byte %d is %d, want 0", i, b[i])
		}
	}
	f := &fixed{
		h: Header{
			Width: int(le.Uint32(b[16:])), Height: int(le.Uint32(b[20:])), Labels: int(le.Uint32(b[24:])),
			Connectivity: int(b[28]), Kind: model.Kind(b[29]), Mode: WeightMode(b[30]),
			T: math.Float64frombits(le.Uint64(b[32:])), W: math.Float64frombits(le.Uint64(b[40:])),
			Offset:    math.Float64frombits(le.Uint64(b[48:])),
			TileWidth: int(le.Uint32(b[56:])), TileHeight: int(le.Uint32(b[60:])),
		},
		tableOff: le.Uint64(b[64:]), tableCRC: le.Uint32(b[72:]), indexCRC: le.Uint32(b[76:]),
		indexOff: le.Uint64(b[80:]), nTiles: le.Uint64(b[88:]),
	}
	if f.h.TileWidth == 0 || f.h.TileHeight == 0 || f.h.Connectivity == 0 {
		return nil, fmt.Errorf("tile size %d×%d, connectivity %d: want nonzero", f.h.TileWidth, f.h.TileHeight, f.h.Connectivity)
	}
	if (f.h.Kind == model.Potts || f.h.Kind == model.Explicit) && f.h.T != 0 {
		return nil, fmt.Errorf("truncation %v with %v pairwise terms, want 0", f.h.T, f.h.Kind)
	}
	if _, err := f.h.normalise(); err != nil {
		return nil, err
	}
	return f, nil
}
