package hdf5

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/partopt/partopt/internal/expansion"
)

// MaxExpansion bounds how many bytes of values a file may decode to per byte of
// file: the datasets read from one file, each value counted as the 8 bytes it
// takes once read, may not need more than MaxExpansion × the file size plus 16
// MiB (expansion.Budget, the budget partopt's readers of .gz and .xz files
// share). A dataset that would pass it is refused with expansion.ErrBomb from
// its declared shape, before a chunk is read: deflate packs zeros 1032:1, so a
// small file can declare gigabytes that really inflate.
const MaxExpansion = expansion.MaxRatio

// maxBytes is the most bytes of values the datasets of this file may need.
func (f *File) maxBytes() uint64 {
	return uint64(expansion.Budget(f.size))
}

// spend reserves n bytes of values within maxBytes, and says whether they fit.
func (f *File) spend(n uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > f.maxBytes() || f.decoded > f.maxBytes()-n {
		return false
	}
	f.decoded += n
	return true
}

// spent is the bytes of values read so far.
func (f *File) spent() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.decoded
}

// bombErr is the refusal of a dataset that needs need bytes of values.
func (d *Dataset) bombErr(need uint64) error {
	before := ""
	if s := d.f.spent(); s > 0 {
		before = fmt.Sprintf(" (besides the %d bytes of the datasets read before)", s)
	}
	return fmt.Errorf("hdf5: %s: %d values, %d bytes once read%s, more than %d× the file's %d bytes plus %d MiB: %w",
		d.path, d.n, need, before, MaxExpansion, d.f.size, expansion.Slack>>20, expansion.ErrBomb)
}

// Uint64s reads the whole dataset, in C (row-major) order, as unsigned integers.
// It fails on floating-point data and on negative values. limit > 0 bounds the
// number of elements (ErrLimit beyond it); limit ≤ 0 leaves only the bound of the
// file's size (MaxExpansion).
func (d *Dataset) Uint64s(limit int) ([]uint64, error) {
	raw, err := d.raw(limit)
	if err != nil {
		return nil, err
	}
	if d.class != FixedPoint {
		return nil, fmt.Errorf("hdf5: %s: %s data cannot be read as unsigned integers: %w", d.path, d.class, ErrConversion)
	}
	out := make([]uint64, d.n)
	for i := range out {
		v, neg := d.int(raw, i)
		if neg {
			return nil, fmt.Errorf("hdf5: %s: element %d is negative (%d), cannot be read as unsigned: %w", d.path, i, int64(v), ErrConversion)
		}
		out[i] = v
	}
	return out, nil
}

// Int64s reads the whole dataset, in C (row-major) order, as signed integers. It
// fails on floating-point data and on unsigned values above math.MaxInt64. limit
// is as for Uint64s.
func (d *Dataset) Int64s(limit int) ([]int64, error) {
	raw, err := d.raw(limit)
	if err != nil {
		return nil, err
	}
	if d.class != FixedPoint {
		return nil, fmt.Errorf("hdf5: %s: %s data cannot be read as integers: %w", d.path, d.class, ErrConversion)
	}
	out := make([]int64, d.n)
	for i := range out {
		v, neg := d.int(raw, i)
		if !neg && v > math.MaxInt64 {
			return nil, fmt.Errorf("hdf5: %s: element %d (%d) overflows int64: %w", d.path, i, v, ErrConversion)
		}
		out[i] = int64(v)
	}
	return out, nil
}

// Float64s reads the whole dataset, in C (row-major) order, as float64: floats
// exactly, integers rounded to the nearest float64. limit is as for Uint64s.
func (d *Dataset) Float64s(limit int) ([]float64, error) {
	raw, err := d.raw(limit)
	if err != nil {
		return nil, err
	}
	out := make([]float64, d.n)
	switch d.class {
	case FixedPoint:
		for i := range out {
			v, neg := d.int(raw, i)
			if neg {
				out[i] = float64(int64(v))
			} else {
				out[i] = float64(v)
			}
		}
	case FloatingPoint:
		order := d.order()
		if d.size == 4 {
			for i := range out {
				out[i] = float64(math.Float32frombits(order.Uint32(raw[4*i:])))
			}
		} else {
			for i := range out {
				out[i] = math.Float64frombits(order.Uint64(raw[8*i:]))
			}
		}
	}
	return out, nil
}

func (d *Dataset) order() binary.ByteOrder {
	if d.bigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// int decodes integer element i: its bits widened to 64, and whether it is
// negative (then the bits are the sign-extended two's complement).
func (d *Dataset) int(raw []byte, i int) (uint64, bool) {
	p := raw[i*d.size : (i+1)*d.size]
	var v uint64
	if d.bigEndian {
		for _, c := range p {
			v = v<<8 | uint64(c)
		}
	} else {
		for j := len(p) - 1; j >= 0; j-- {
			v = v<<8 | uint64(p[j])
		}
	}
	if !d.signed {
		return v, false
	}
	shift := uint(64 - 8*d.size)
	s := int64(v<<shift) >> shift
	return uint64(s), s < 0
}

// raw returns the dataset's elements in the file's encoding, in C order.
func (d *Dataset) raw(limit int) ([]byte, error) {
	if d.typeErr != nil {
		return nil, fmt.Errorf("hdf5: %s: %w", d.path, d.typeErr)
	}
	if d.layoutErr != nil {
		return nil, fmt.Errorf("hdf5: %s: %w", d.path, d.layoutErr)
	}
	if limit > 0 && d.n > uint64(limit) {
		return nil, fmt.Errorf("hdf5: %s: %d elements, limit %d: %w", d.path, d.n, limit, ErrLimit)
	}
	// Every value read takes 8 bytes (Uint64s, Float64s), whatever its size
	// in the file (at most 8 for the types read): a dataset of bytes may not
	// inflate eightfold on conversion.
	need := 8 * d.n
	if d.n > 1<<43 || need > math.MaxInt || !d.f.spend(need) {
		return nil, d.bombErr(need)
	}
	nb := d.n * uint64(d.size)
	var out []byte
	var err error
	switch d.layout {
	case layoutCompact:
		if uint64(len(d.compact)) < nb {
			return nil, formatErr("hdf5: %s: compact data of %d bytes, want %d", d.path, len(d.compact), nb)
		}
		out = d.compact[:nb:nb]
	case layoutContiguous:
		if d.dataAddr == undefined {
			out = d.filled(int(nb))
			break
		}
		if d.dataSize < nb {
			return nil, formatErr("hdf5: %s: contiguous storage of %d bytes, want %d", d.path, d.dataSize, nb)
		}
		out, err = d.f.readAt(d.dataAddr, nb, "contiguous data")
	case layoutChunked:
		out, err = d.chunked(int(nb))
	default:
		return nil, formatErr("hdf5: %s: layout class %d", d.path, d.layout)
	}
	if err != nil {
		return nil, fmt.Errorf("hdf5: %s: %w", d.path, err)
	}
	return out, nil
}

// filled returns n bytes holding the fill value.
func (d *Dataset) filled(n int) []byte {
	out := make([]byte, n)
	if d.fill != nil && !allZero(d.fill) {
		for i := 0; i < n; i += d.size {
			copy(out[i:], d.fill)
		}
	}
	return out
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// chunked assembles a chunked dataset of nb bytes from its chunks. Every chunk must
// sit on the chunk grid inside the dataset, appear once, and decode to exactly the
// chunk's size (inflation stops one byte past it), so what is inflated is bounded
// by the chunk grid, itself checked against the file's budget before any chunk is
// read: declared sizes that lie cannot make it inflate more.
func (d *Dataset) chunked(nb int) ([]byte, error) {
	rank := len(d.shape)
	out := d.filled(nb)
	if d.n == 0 || d.dataAddr == undefined {
		return out, nil
	}
	// Chunk grid: counts per dimension, and the chunk's size in bytes.
	grid := make([]uint64, rank)
	cells := uint64(1)
	chunkBytes := uint64(d.size)
	for i := range rank {
		grid[i] = (d.shape[i] + d.chunk[i] - 1) / d.chunk[i]
		cells *= grid[i]                             // ≤ number of elements
		hi, lo := bits.Mul64(chunkBytes, d.chunk[i]) // a wrapped size would pass
		chunkBytes = lo
		if hi != 0 || chunkBytes > d.f.maxBytes() {
			return nil, fmt.Errorf("chunk shape %v of %d-byte elements, more than %d× the file's %d bytes plus %d MiB a chunk: %w",
				d.chunk, d.size, MaxExpansion, d.f.size, expansion.Slack>>20, expansion.ErrBomb)
		}
	}
	// Edge chunks overhang the dataset; the grid may hold twice the budget.
	if hi, lo := bits.Mul64(cells, chunkBytes); cells > d.n || hi != 0 || lo > 2*d.f.maxBytes() {
		return nil, fmt.Errorf("%d chunks of %d bytes, more than twice %d× the file's %d bytes plus %d MiB: %w",
			cells, chunkBytes, MaxExpansion, d.f.size, expansion.Slack>>20, expansion.ErrBomb)
	}
	done := make([]uint64, (cells+63)/64)
	var buf []byte       // inflated chunk, allocated at the first deflated chunk
	var total uint64     // stored bytes read
	var zr io.ReadCloser // reused across chunks: a new one allocates 40 KB
	var shuf []byte      // unshuffled chunk, reused
	use := func(offs []uint64, child, stored uint64, mask uint32) error {
		cell := uint64(0)
		partial := false
		for i := range rank {
			o := offs[i]
			if o%d.chunk[i] != 0 || o >= d.shape[i] {
				return formatErr("chunk at offset %#x: offset %d in dimension %d is off the chunk grid %v of shape %v", child, o, i, d.chunk, d.shape)
			}
			cell = cell*grid[i] + o/d.chunk[i]
			partial = partial || o+d.chunk[i] > d.shape[i]
		}
		if done[cell/64]&(1<<(cell%64)) != 0 {
			return formatErr("chunk at offset %#x: chunk %v appears twice", child, offs)
		}
		done[cell/64] |= 1 << (cell % 64)
		// Chunks do not overlap, so together they fit in the file; this
		// bounds the reading of chunks listed under several cells.
		total += stored
		if total > uint64(d.f.size) {
			return formatErr("chunk at offset %#x: stored chunks add up to more than the file", child)
		}
		if partial && d.rawEdges {
			mask = ^uint32(0)
		}
		if err := d.checkStored(stored, mask, chunkBytes, child); err != nil {
			return err
		}
		data, err := d.f.readAt(child, stored, "chunk")
		if err != nil {
			return err
		}
		if buf == nil && d.active(mask, filterDeflate) {
			buf = make([]byte, 0, chunkBytes+9)
		}
		data, err = d.decode(data, mask, buf, int(chunkBytes), child, &zr, &shuf)
		if err != nil {
			return err
		}
		d.place(out, data, offs)
		return nil
	}
	var err error
	switch d.index {
	case indexBTree1:
		offs := make([]uint64, rank)
		keySize := 8 + 8*(rank+1)
		err = d.f.walkBTree(d.dataAddr, 1, keySize, func(key []byte, child uint64) error {
			for i := range rank {
				offs[i] = binary.LittleEndian.Uint64(key[8+8*i:])
			}
			if binary.LittleEndian.Uint64(key[8+8*rank:]) != 0 {
				return formatErr("chunk at offset %#x: non-zero element offset", child)
			}
			return use(offs, child, uint64(binary.LittleEndian.Uint32(key)), binary.LittleEndian.Uint32(key[4:]))
		})
	case indexSingle:
		if cells != 1 {
			return nil, formatErr("single chunk index for %d chunks", cells)
		}
		stored, mask := chunkBytes, uint32(0)
		if len(d.filters) > 0 {
			stored, mask = d.single.size, d.single.mask
		}
		err = use(make([]uint64, rank), d.dataAddr, stored, mask)
	case indexImplicit:
		if len(d.filters) > 0 {
			return nil, formatErr("implicit chunk index with filters")
		}
		err = d.eachCell(grid, func(offs []uint64, lin uint64) error {
			hi, lo := bits.Mul64(lin, chunkBytes)
			if hi != 0 || !d.f.inFile(d.dataAddr+lo, chunkBytes) {
				return formatErr("implicit chunk %v outside the file", offs)
			}
			return use(offs, d.dataAddr+lo, chunkBytes, 0)
		})
	case indexFixedArray:
		err = d.fixedArray(grid, chunkBytes, use)
	default:
		return nil, unsupportedErr("chunk index type %d", d.index)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxInflate bounds deflate's compression ratio (at most about 1032:1), with
// room for the zlib framing.
const maxInflate = 1100

// active reports whether the filter id applies to a chunk with the given mask.
func (d *Dataset) active(mask uint32, id uint16) bool {
	for i, fl := range d.filters {
		if fl.id == id && (i >= 32 || mask&(1<<uint(i)) == 0) {
			return true
		}
	}
	return false
}

// checkStored checks a chunk's stored size against its decoded size before
// anything is read: without deflate only a checksum may be added, and deflate
// cannot shrink data by more than maxInflate.
func (d *Dataset) checkStored(stored uint64, mask uint32, want uint64, at uint64) error {
	extra := uint64(0)
	if d.active(mask, filterFletcher32) {
		extra = 4
	}
	if d.active(mask, filterDeflate) {
		if want > maxInflate*stored+1024 {
			return formatErr("chunk at offset %#x: %d stored bytes cannot inflate to %d", at, stored, want)
		}
	} else if stored != want+extra {
		return formatErr("chunk at offset %#x: %d stored bytes, want %d", at, stored, want+extra)
	}
	return nil
}

// place copies one decoded chunk at element offsets offs into out, clipping the
// parts past the dataset's edges.
func (d *Dataset) place(out, chunk []byte, offs []uint64) {
	rank := len(d.shape)
	// Extent of the chunk inside the dataset per dimension.
	ext := make([]uint64, rank)
	for i := range rank {
		ext[i] = min(d.chunk[i], d.shape[i]-offs[i])
	}
	row := int(ext[rank-1]) * d.size
	idx := make([]uint64, rank) // index inside the chunk, last dimension fixed at 0
	for {
		var src, dst uint64
		for i := range rank {
			src = src*d.chunk[i] + idx[i]
			dst = dst*d.shape[i] + offs[i] + idx[i]
		}
		src *= uint64(d.size)
		dst *= uint64(d.size)
		copy(out[dst:dst+uint64(row)], chunk[src:])
		// Next row: increment the index over dimensions 0..rank-2.
		i := rank - 2
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < ext[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// decode undoes the filter pipeline on one stored chunk (filters run in reverse
// order, skipping those the chunk's mask excludes) and checks that the result is
// exactly want bytes long. buf is scratch space of capacity want.
func (d *Dataset) decode(data []byte, mask uint32, buf []byte, want int, at uint64, zr *io.ReadCloser, shuf *[]byte) ([]byte, error) {
	for i := len(d.filters) - 1; i >= 0; i-- {
		if i < 32 && mask&(1<<uint(i)) != 0 {
			continue
		}
		fl := d.filters[i]
		switch fl.id {
		case filterDeflate:
			var err error
			if *zr == nil {
				*zr, err = zlib.NewReader(bytes.NewReader(data))
			} else {
				err = (*zr).(zlib.Resetter).Reset(bytes.NewReader(data), nil)
			}
			if err != nil {
				return nil, formatErr("chunk at offset %#x: deflate: %v", at, err)
			}
			// Read at most want+1 bytes: more than want is an error, whatever
			// the stream claims.
			lim := want + 8 // room for a following fletcher32 checksum
			if cap(buf) < lim+1 {
				buf = make([]byte, lim+1)
			}
			n, err := io.ReadFull(*zr, buf[:lim+1])
			if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
				return nil, formatErr("chunk at offset %#x: deflate: %v", at, err)
			}
			if n > lim {
				return nil, formatErr("chunk at offset %#x: inflates past its %d bytes", at, want)
			}
			data = buf[:n]
			buf = nil // data now lives in buf; the next stage must not overwrite it
		case filterShuffle:
			es := d.size
			if len(fl.client) > 0 {
				es = int(fl.client[0])
			}
			if cap(*shuf) < len(data) {
				*shuf = make([]byte, len(data))
			}
			data = unshuffle((*shuf)[:len(data)], data, es)
		case filterFletcher32:
			if len(data) < 4 {
				return nil, formatErr("chunk at offset %#x: shorter than its fletcher32 checksum", at)
			}
			body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
			if c := fletcher32(body); c != sum && swapHalves(c) != sum {
				return nil, formatErr("chunk at offset %#x: fletcher32 checksum mismatch", at)
			}
			data = body
		default:
			return nil, unsupportedErr("filter %d", fl.id)
		}
	}
	if len(data) != want {
		return nil, formatErr("chunk at offset %#x: %d bytes after filters, want %d", at, len(data), want)
	}
	return data, nil
}

// unshuffle undoes the shuffle filter into out (of data's length): the bytes of
// each significance were stored together. Trailing bytes that do not fill an
// element were left in place.
func unshuffle(out, data []byte, es int) []byte {
	if es <= 1 || len(data) < es {
		return data
	}
	n := len(data) / es
	for b := range es {
		src := data[b*n : (b+1)*n]
		for i, c := range src {
			out[i*es+b] = c
		}
	}
	copy(out[n*es:], data[n*es:])
	return out
}

// fletcher32 is HDF5's Fletcher checksum over 16-bit big-endian words (a trailing
// odd byte is the high byte of a last word).
func fletcher32(b []byte) uint32 {
	var s1, s2 uint32 = 0xffff, 0xffff
	for len(b) >= 2 {
		n := min(len(b)/2, 360)
		for range n {
			s1 += uint32(b[0])<<8 | uint32(b[1])
			s2 += s1
			b = b[2:]
		}
		s1 = (s1 & 0xffff) + (s1 >> 16)
		s2 = (s2 & 0xffff) + (s2 >> 16)
	}
	if len(b) == 1 {
		s1 += uint32(b[0]) << 8
		s2 += s1
		s1 = (s1 & 0xffff) + (s1 >> 16)
		s2 = (s2 & 0xffff) + (s2 >> 16)
	}
	s1 = (s1 & 0xffff) + (s1 >> 16)
	s2 = (s2 & 0xffff) + (s2 >> 16)
	return s2<<16 | s1
}

// swapHalves gives the checksum as files of libhdf5 before 1.6.3 stored it on
// little-endian machines.
func swapHalves(c uint32) uint32 {
	return (c&0xff)<<24 | (c&0xff00)<<8 | (c>>8)&0xff00 | c>>24
}
