// Package grid is a tiled, out-of-core file format for grid models: W×H pixels with K
// labels each, float32 unaries, and pairwise terms on the 4-neighbourhood (right and
// down edges) or the 8-neighbourhood (also down-right and down-left). A Writer streams
// a model of any size in memory bounded by one tile row; a Reader returns the model of
// any rectangle by reading only the tiles that intersect it, so workers can load their
// windows of a gigapixel model directly.
//
// The pairwise terms are all of one kind: Potts, truncated linear or truncated
// quadratic with one shared weight W (and truncation T) or a float32 weight per edge,
// or one explicit K×K float32 table shared by every edge. Unaries may be +Inf
// (forbidden labels); NaN and −Inf are refused by the Writer and reported by the Reader.
//
// Typical use:
//
//	w, err := grid.Create("img.grid", grid.Header{Width: 40000, Height: 30000, Labels: 2,
//		Kind: model.Potts, Mode: grid.Shared, W: 0.5, TileWidth: 256, TileHeight: 256})
//	for y := 0; y < 30000; y += 256 {
//		err = w.WriteRows(unaries, nil) // whole rows, in order; any number at a time
//	}
//	err = w.Close()
//
//	r, err := grid.Open("img.grid")
//	win, err := r.ReadWindow(1000, 2000, 512, 512) // win.Model, win.Crossing
//
// FromModel recognises an in-memory 4-connected grid model and WriteModel writes it;
// Reader.Model and ReadFile return the whole grid as a model.Model (which uai.Write
// can write), so UAI → grid → model keeps every energy up to float32 rounding.
// Describe tells what a file holds from its header alone (Stats: the variables and
// factors exactly, the functions and the memory of a whole read as bounds), in
// constant time and memory at any size; Reader.Retile copies a grid with new tiles
// by bands of rows.
//
// # Layout
//
// All numbers are little-endian and fixed-width; CRC32C is the Castagnoli CRC-32.
//
//	offset size  field
//	0      8     magic "PARTOPTG"
//	8      4     version (1)
//	12     4     header size (128)
//	16     4     width W
//	20     4     height H
//	24     4     labels K (1..65536)
//	28     1     connectivity (4 or 8)
//	29     1     pairwise kind (model.Kind: 0 explicit, 1 Potts, 2 truncated linear, 3 truncated quadratic)
//	30     1     weight mode (0 shared, 1 per-edge, 2 table)
//	31     1     reserved, 0
//	32     8     T, float64 (0 for Potts and explicit)
//	40     8     shared weight W, float64 (0 unless shared)
//	48     8     offset: constant energy, float64
//	56     4     tile width TW
//	60     4     tile height TH
//	64     8     table offset (128 in table mode, else 0)
//	72     4     table CRC32C
//	76     4     tile index CRC32C
//	80     8     tile index offset (0 while the file is being written)
//	88     8     number of tiles, ⌈W/TW⌉·⌈H/TH⌉
//	96     28    reserved, 0
//	124    4     CRC32C of bytes 0..123
//
// In table mode the K×K float32 table (first argument slowest) follows the header.
// Then come the tiles in row-major tile order, with no gaps. Tile (tx, ty) covers the
// pixels [tx·TW, min((tx+1)·TW, W)) × [ty·TH, min((ty+1)·TH, H)); it holds the K
// unaries of each of its pixels in raster order (label fastest), then, in per-edge
// mode, the weights of each pixel in raster order: one per direction (right, down,
// and for 8-connectivity down-right, down-left), so an edge is stored with its first
// pixel, the one above or left of the other. Weights of edges leaving the image are 0.
// The tile index, last in the file, has one 16-byte entry per tile in the same order:
// offset u64, length u32, CRC32C u32 of the tile's bytes.
//
// # Integrity
//
// Open checks the header checksum, every header field, the table and index checksums,
// that each index entry has the offset and length the header implies, and that the
// file has exactly the expected size, all before allocating by a declared count.
// Every tile read is checked against its CRC32C, and every value used against the
// format's rules. Errors name the file and what is wrong ("img.grid: corrupt grid
// file: tile (3,7): checksum mismatch ...") and wrap ErrCorrupt for damaged files.
//
// Limits: a window (and Reader.Model) has at most 2³¹−1 pixels, the model package's
// variable index; an encoded tile at most MaxTileBytes. FromModel recognises
// 4-connected grids only; 8-connected files are written with Writer.
package grid
