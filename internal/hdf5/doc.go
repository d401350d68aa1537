// Package hdf5 reads the subset of HDF5 that libhdf5 1.8–1.12 and h5py write by
// default: enough to load numeric datasets such as OpenGM's benchmark models,
// without cgo.
//
// Typical use:
//
//	f, err := hdf5.OpenFile("model.h5")
//	if err != nil { … }
//	defer f.Close()
//	names, err := f.List("gm")            // sorted member names of a group
//	d, err := f.Dataset("gm/header")      // metadata only
//	hdr, err := d.Uint64s(1 << 20)        // all values, at most 2^20 of them
//
// # Supported subset
//
//   - Superblock versions 0 and 1 (libhdf5's default, h5py's libver='earliest'),
//     2 and 3 (libver v108 and later), with or without a user block.
//   - Object headers version 1 and 2 with continuation chunks. Messages read:
//     dataspace, datatype, fill value (old and new), data layout, filter pipeline,
//     link, link info, group info, symbol table, continuation; the others (such
//     as attributes and modification times) are skipped, except unknown ones
//     marked must-understand.
//   - Old-style groups (symbol table: version 1 B-tree, symbol table nodes and
//     local heap) and new-style groups, compact (link messages) or dense (link
//     messages in a fractal heap indexed by a version 2 B-tree, which libver
//     v108+ files use for groups of more than 8 members; heaps with I/O filters
//     and huge objects are refused). Only hard links are followed.
//   - Datasets with compact, contiguous and chunked storage. Chunks indexed by a
//     version 1 B-tree (layout message versions 1–3) and, from layout message
//     version 4 (libver v110/'latest'), by a single chunk, the implicit index or
//     a fixed array (paged or not); the extensible array and version 2 B-tree
//     indexes of datasets with unlimited dimensions are refused. Unwritten chunks
//     and unallocated contiguous data read as the fill value.
//   - Filters deflate, shuffle and fletcher32 (verified); others (szip, lzf,
//     scale-offset, n-bit, …) are refused.
//   - Element types: fixed-point (signed or unsigned, 1, 2, 4 or 8 bytes) and
//     IEEE floating point (4 or 8 bytes), either byte order. Datasets of other
//     types open (Class, Shape and Len work) but reading them is refused.
//
// Uint64s, Int64s and Float64s read a whole dataset in C order, converted: any
// integer to float64, integers between signed and unsigned when the value fits;
// floats never to integers.
//
// # Errors and untrusted input
//
// Errors wrap ErrFormat (malformed file), ErrUnsupported (valid HDF5 outside the
// subset; the message names the feature), ErrLimit (a dataset larger than the
// caller's limit), expansion.ErrBomb (datasets needing more memory than the
// file's size allows, see MaxExpansion), ErrNotFound or ErrConversion, and name
// the object path or file offset concerned; I/O errors of the reader are
// returned as they are. A malformed file never makes this package panic, loop or
// allocate much more than the file's size: every offset and length is checked
// against the file size before it is read; B-trees are bounded in depth, each
// node is visited once and the nodes of one tree (likewise symbol table nodes,
// fractal heap blocks, object header chunks and stored chunks) may not add up to
// more than the file; a chunk must lie on the chunk grid, appear once, have a
// stored size its filters can account for (deflate expands at most 1100×) and
// decode to exactly its size; and the values of the datasets read from a file,
// 8 bytes each, may not exceed MaxExpansion times its size plus 16 MiB, which
// a dataset's declared shape is checked against before a chunk is inflated.
//
// A File caches the member lists of the groups it has read; it is safe for
// concurrent use when its io.ReaderAt is (an *os.File is).
//
// Checksums of version 2 metadata (superblock 2/3, object header v2, fixed
// arrays, fractal heaps, version 2 B-trees) are not verified; fletcher32
// checksums of chunks are.
package hdf5
