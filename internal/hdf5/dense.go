package hdf5

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"
	"sort"
)

// Dense link storage: a group's link messages live as objects of a fractal heap,
// found through the records (name hash, heap ID) of a version 2 B-tree. Checksums
// are not verified.

// maxHeapRows bounds the rows of a fractal heap indirect block, and
// maxHeapDepth the nesting of indirect blocks (64-bit offsets need fewer).
const (
	maxHeapRows  = 64
	maxHeapDepth = 16
)

// encSize is the number of bytes libhdf5 uses to encode values up to n.
func encSize(n uint64) int { return (bits.Len64(n)-1)/8 + 1 }

// log2 of a power of two (or of the largest power of two ≤ n).
func log2(n uint64) int { return bits.Len64(n) - 1 }

// fractalHeap is what reading managed and tiny objects needs of a fractal heap.
type fractalHeap struct {
	addr       uint64
	idLen      int
	offBytes   int // bytes of an object's heap offset in a heap ID
	lenBytes   int // bytes of an object's length in a heap ID
	width      uint64
	start      uint64      // starting block size
	maxDirect  uint64      // maximum direct block size
	checksumDB bool        // direct blocks carry a checksum
	blocks     []heapBlock // sorted by offset once complete
	budget     uint64      // bytes of indirect blocks left to read
}

// heapBlock is one direct block: its heap offset, file address and size.
type heapBlock struct{ off, addr, size uint64 }

func (f *File) fractalHeap(addr uint64) (*fractalHeap, error) {
	n := uint64(4 + 1 + 2 + 2 + 1 + 4 + 12*f.lenSize + 3*f.offSize + 2 + 2 + 2 + 2 + 4)
	b, err := f.readAt(addr, n, "fractal heap header")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(b[:4], []byte("FRHP")) || b[4] != 0 {
		return nil, formatErr("fractal heap header at offset %#x: bad signature or version", addr)
	}
	d := f.decoder(b, addr, "fractal heap header")
	d.skip(5)
	h := &fractalHeap{addr: addr, budget: uint64(f.size)}
	h.idLen = int(d.u16())
	filterLen := d.u16()
	flags := d.u8()
	maxManaged := uint64(d.u32())
	d.length() // next huge object ID
	d.addr()   // v2 B-tree of huge objects
	d.length() // free space in managed blocks
	d.addr()   // free space manager
	d.length() // managed space
	d.length() // allocated managed space
	d.length() // direct block allocation iterator
	d.length() // managed objects
	d.length() // size of huge objects
	d.length() // huge objects
	d.length() // size of tiny objects
	d.length() // tiny objects
	h.width = uint64(d.u16())
	h.start = d.length()
	h.maxDirect = d.length()
	maxHeapBits := int(d.u16())
	d.u16() // starting rows of the root indirect block
	root := d.addr()
	rows := int(d.u16())
	if d.err != nil {
		return nil, d.err
	}
	if filterLen != 0 {
		return nil, unsupportedErr("fractal heap at offset %#x: I/O filters", addr)
	}
	pow2 := func(x uint64) bool { return x != 0 && x&(x-1) == 0 }
	if h.idLen < 2 || h.idLen > 64 || h.width == 0 || !pow2(h.width) || !pow2(h.start) || !pow2(h.maxDirect) ||
		h.maxDirect < h.start || h.maxDirect > 1<<40 || maxHeapBits < 1 || maxHeapBits > 64 || rows > maxHeapRows || maxManaged == 0 {
		return nil, formatErr("fractal heap header at offset %#x: implausible parameters", addr)
	}
	h.checksumDB = flags&2 != 0
	h.offBytes = (maxHeapBits + 7) / 8
	h.lenBytes = min((log2(h.maxDirect)+7)/8, encSize(maxManaged))
	if root == undefined {
		return h, nil
	}
	if rows == 0 {
		h.blocks = append(h.blocks, heapBlock{0, root, h.start})
		return h, nil
	}
	seen := map[uint64]bool{}
	if err := f.heapIndirect(h, root, rows, 0, seen); err != nil {
		return nil, err
	}
	slices.SortFunc(h.blocks, func(a, b heapBlock) int { return cmp.Compare(a.off, b.off) })
	return h, nil
}

// heapIndirect collects the direct blocks under the indirect block at addr.
func (f *File) heapIndirect(h *fractalHeap, addr uint64, rows, depth int, seen map[uint64]bool) error {
	if depth > maxHeapDepth || seen[addr] {
		return formatErr("fractal heap indirect block at offset %#x: nested too deep or visited twice", addr)
	}
	seen[addr] = true
	hdr := uint64(5 + f.offSize + h.offBytes)
	entries := uint64(rows) * h.width
	n := hdr + entries*uint64(f.offSize)
	if n > h.budget {
		return formatErr("fractal heap indirect block at offset %#x: the heap's blocks add up to more than the file", addr)
	}
	h.budget -= n
	b, err := f.readAt(addr, n, "fractal heap indirect block")
	if err != nil {
		return err
	}
	if !bytes.Equal(b[:4], []byte("FHIB")) || b[4] != 0 {
		return formatErr("fractal heap indirect block at offset %#x: bad signature or version", addr)
	}
	d := f.decoder(b, addr, "fractal heap indirect block")
	d.skip(5 + f.offSize)
	off := d.uint(h.offBytes)
	size := h.start
	for r := range rows {
		if r >= 2 {
			size *= 2
		}
		if size > 1<<56 {
			return formatErr("fractal heap indirect block at offset %#x: %d rows", addr, rows)
		}
		for c := range h.width {
			child := d.addr()
			if d.err != nil {
				return d.err
			}
			if child == undefined {
				continue
			}
			coff := off + rowOffset(h, r) + c*size
			if size <= h.maxDirect {
				h.blocks = append(h.blocks, heapBlock{coff, child, size})
				continue
			}
			childRows := log2(size) - log2(h.start*h.width) + 1
			if childRows < 1 || childRows > maxHeapRows {
				return formatErr("fractal heap indirect block at offset %#x: child of %d rows", addr, childRows)
			}
			if err := f.heapIndirect(h, child, childRows, depth+1, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowOffset is the heap offset of row r of an indirect block, relative to the block.
func rowOffset(h *fractalHeap, r int) uint64 {
	if r == 0 {
		return 0
	}
	return h.width * h.start << uint(r-1)
}

// object returns the bytes of the object with the given heap ID.
func (f *File) heapObject(h *fractalHeap, id []byte) ([]byte, error) {
	if len(id) != h.idLen {
		return nil, formatErr("fractal heap at offset %#x: heap ID of %d bytes, want %d", h.addr, len(id), h.idLen)
	}
	if id[0]>>6 != 0 {
		return nil, unsupportedErr("fractal heap at offset %#x: heap ID version %d", h.addr, id[0]>>6)
	}
	switch typ := (id[0] >> 4) & 3; typ {
	case 0: // managed
		d := f.decoder(id, h.addr, "heap ID")
		d.skip(1)
		off := d.uint(h.offBytes)
		n := d.uint(h.lenBytes)
		if d.err != nil {
			return nil, d.err
		}
		// The last block starting at or before off.
		i := sort.Search(len(h.blocks), func(i int) bool { return h.blocks[i].off > off }) - 1
		if i >= 0 {
			b := h.blocks[i]
			if off-b.off < b.size && n <= b.size-(off-b.off) {
				return f.readAt(b.addr+(off-b.off), n, "fractal heap object")
			}
		}
		return nil, formatErr("fractal heap at offset %#x: object at heap offset %d in no direct block", h.addr, off)
	case 2: // tiny: the object is inside the ID
		n := int(id[0]&0x0f) + 1
		if 1+n > len(id) {
			return nil, formatErr("fractal heap at offset %#x: tiny object of %d bytes in a %d-byte ID", h.addr, n, len(id))
		}
		return id[1 : 1+n], nil
	default:
		return nil, unsupportedErr("fractal heap at offset %#x: huge objects", h.addr)
	}
}

// btree2Records returns the records of the version 2 B-tree at addr, whose type
// must be typ.
func (f *File) btree2Records(addr uint64, typ uint8) ([][]byte, error) {
	n := uint64(4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + f.offSize + 2 + f.lenSize + 4)
	b, err := f.readAt(addr, n, "v2 B-tree header")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(b[:4], []byte("BTHD")) || b[4] != 0 {
		return nil, formatErr("v2 B-tree header at offset %#x: bad signature or version", addr)
	}
	if b[5] != typ {
		return nil, formatErr("v2 B-tree header at offset %#x: type %d, want %d", addr, b[5], typ)
	}
	d := f.decoder(b, addr, "v2 B-tree header")
	d.skip(6)
	nodeSize := uint64(d.u32())
	recSize := uint64(d.u16())
	depth := int(d.u16())
	d.skip(2)
	root := d.addr()
	rootN := uint64(d.u16())
	total := d.length()
	if d.err != nil {
		return nil, d.err
	}
	const prefix = 10 // signature, version, type, checksum
	if recSize == 0 || nodeSize < prefix+recSize || nodeSize > 1<<24 || depth > 32 || total > uint64(f.size) {
		return nil, formatErr("v2 B-tree header at offset %#x: implausible parameters", addr)
	}
	// Per depth: the most records a node holds, and the most below it.
	maxRec := make([]uint64, depth+1)
	cumMax := make([]uint64, depth+1)
	cumSize := make([]int, depth+1)
	maxRec[0] = (nodeSize - prefix) / recSize
	cumMax[0] = maxRec[0]
	nrecSize := encSize(maxRec[0])
	for u := 1; u <= depth; u++ {
		ptr := uint64(f.offSize + nrecSize + cumSize[u-1])
		if nodeSize < prefix+ptr {
			return nil, formatErr("v2 B-tree header at offset %#x: node size %d too small", addr, nodeSize)
		}
		maxRec[u] = (nodeSize - prefix - ptr) / (recSize + ptr)
		hi, lo := bits.Mul64(maxRec[u]+1, cumMax[u-1])
		if hi != 0 || lo+maxRec[u] < lo {
			return nil, formatErr("v2 B-tree header at offset %#x: record counts overflow", addr)
		}
		cumMax[u] = lo + maxRec[u]
		cumSize[u] = encSize(cumMax[u])
	}
	var recs [][]byte
	seen := map[uint64]bool{}
	budget := uint64(f.size) // nodes do not overlap
	var walk func(addr, nrec uint64, depth int) error
	walk = func(addr, nrec uint64, depth int) error {
		if seen[addr] {
			return formatErr("v2 B-tree node at offset %#x: visited twice", addr)
		}
		seen[addr] = true
		if nrec > maxRec[depth] || uint64(len(recs))+nrec > total {
			return formatErr("v2 B-tree node at offset %#x: %d records", addr, nrec)
		}
		sig := "BTLF"
		size := 6 + nrec*recSize
		ptr := uint64(f.offSize + nrecSize)
		if depth > 0 {
			sig = "BTIN"
			if depth > 1 {
				ptr += uint64(cumSize[depth-1])
			}
			size += (nrec + 1) * ptr
		}
		if size > budget {
			return formatErr("v2 B-tree node at offset %#x: the tree's nodes add up to more than the file", addr)
		}
		budget -= size
		b, err := f.readAt(addr, size, "v2 B-tree node")
		if err != nil {
			return err
		}
		if !bytes.Equal(b[:4], []byte(sig)) || b[4] != 0 || b[5] != typ {
			return formatErr("v2 B-tree node at offset %#x: bad signature, version or type", addr)
		}
		if depth == 0 {
			for i := range nrec {
				recs = append(recs, b[6+i*recSize:6+(i+1)*recSize])
			}
			return nil
		}
		d := f.decoder(b, addr, "v2 B-tree internal node")
		d.skip(int(6 + nrec*recSize))
		for i := range nrec + 1 {
			child := d.addr()
			cn := d.uint(nrecSize)
			if depth > 1 {
				d.uint(cumSize[depth-1])
			}
			if d.err != nil {
				return d.err
			}
			if err := walk(child, cn, depth-1); err != nil {
				return err
			}
			if i < nrec {
				recs = append(recs, b[6+i*recSize:6+(i+1)*recSize])
			}
		}
		return nil
	}
	if root == undefined || rootN == 0 {
		return nil, nil
	}
	if err := walk(root, rootN, depth); err != nil {
		return nil, err
	}
	return recs, nil
}

// denseLinks returns the links of a group with dense link storage.
func (f *File) denseLinks(heapAddr, nameIndex uint64) ([]link, error) {
	h, err := f.fractalHeap(heapAddr)
	if err != nil {
		return nil, err
	}
	recs, err := f.btree2Records(nameIndex, 5)
	if err != nil {
		return nil, err
	}
	ls := make([]link, 0, len(recs))
	for _, r := range recs {
		if len(r) < 5 {
			return nil, formatErr("v2 B-tree at offset %#x: %d-byte link record", nameIndex, len(r))
		}
		obj, err := f.heapObject(h, r[4:])
		if err != nil {
			return nil, err
		}
		l, err := f.decodeLink(obj, heapAddr)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}
