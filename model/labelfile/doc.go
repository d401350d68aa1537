// Package labelfile is a tiled, random-access on-disk raster of labels for W×H grid
// models: a labeling (one label per pixel), a persistency map (label+1 where the
// label is proven persistent, 0 elsewhere) or an alive map (the mask of the labels
// label elimination left, 32 labels per plane, one file each). Any rectangle is
// read or written by touching only the tiles that meet it, from many goroutines at
// once, so workers can store the results of their windows of a gigapixel model
// directly. Memory does not grow with the raster's pixels or tiles: a call buffers
// the tiles it touches and their checksums, and an opened File holds nothing per
// tile. RenderPNG draws a persistency map as the paper's figures do, RenderAlivePNG
// an alive map (all its planes) by the labels each pixel has left, and Export writes
// a raster as a PNG, TIFF or NumPy file, all streaming the rasters a band at a time,
// whatever their shape (a single row of 2³¹−1 pixels is read in pieces).
//
// Typical use:
//
//	f, err := labelfile.Create("persistent.plf", labelfile.Header{Width: 40000, Height: 30000,
//		Labels: 2, Kind: labelfile.Persistent}) // sparse, every value 0
//	err = f.WriteRect(x0, y0, w, h, values)     // any rectangle, from any goroutine
//	err = f.Close()                             // checksums every tile; now valid
//
//	p, err := labelfile.Open("persistent.plf")
//	err = p.ReadRect(1000, 2000, 512, 512, dst) // checks the tiles it reads
//	err = labelfile.RenderPNG(out, labeling, p, 4096)
//
// Values are int32 in the API and stored in the fewest bytes that hold the kind's
// largest value (Header.BytesPerValue): K−1 for a Labeling, K for a Persistent map,
// 2^n − 1 for an Alive plane of n labels (read as uint32: 32 labels fill the sign
// bit).
//
// # Layout
//
// All numbers are little-endian and fixed-width; CRC32C is the Castagnoli CRC-32.
//
//	offset size  field
//	0      8     magic "PARTOPTL"
//	8      4     version (1)
//	12     4     header size (64)
//	16     4     width W
//	20     4     height H
//	24     4     labels K (1..65536)
//	28     1     kind (0 labeling, 1 persistent, 2 alive)
//	29     1     bytes per value B (1, 2 or 4, implied by kind and K)
//	30     2     plane (alive: labels 32·plane onwards; 0 for the other kinds)
//	32     4     tile width TW
//	36     4     tile height TH
//	40     8     number of tiles, ⌈W/TW⌉·⌈H/TH⌉
//	48     8     tile index offset, 64 + W·H·B (0 while the file is unfinished)
//	56     4     tile index CRC32C
//	60     4     CRC32C of bytes 0..59
//
// Then come the tiles in row-major tile order, with no gaps. Tile (tx, ty) covers the
// pixels [tx·TW, min((tx+1)·TW, W)) × [ty·TH, min((ty+1)·TH, H)) and holds their
// values in raster order, B bytes each; its offset is implied by the fixed tile sizes,
// so tiles adjacent in a tile row are adjacent in the file and are read with one call.
// The tile index, last in the file, is the CRC32C (4 bytes) of each tile in the same
// order.
//
// # Integrity
//
// Create extends the file to its full size (sparse, all zeros) and writes a header
// whose index offset is 0; Close computes the tile checksums, writes the index, syncs,
// then writes the final header and syncs, so a file that was never closed is refused
// by Open as unfinished. Open checks the header checksum and every field, that the
// file has exactly the size the header implies and the index checksum (a megabyte
// at a time); it allocates nothing by a declared count, since a sparse file backs any
// size with a hole. ReadRect on an opened file checks every tile it reads against its
// CRC32C, read from the index with it, and every value against the kind's maximum. Errors name
// the file and what is wrong ("x.plf: corrupt label file: tile (3,7): checksum
// mismatch ...") and wrap ErrCorrupt for damaged files.
//
// Limits: sides up to 2³¹−1 with W·H·(B+4) ≤ 2⁶², K ≤ 65536 (as model/grid), a tile
// (clipped to the raster) at most MaxTileBytes. Writes of overlapping rectangles must be serialised by the
// caller; Close must not run concurrently with reads or writes.
package labelfile
