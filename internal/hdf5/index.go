package hdf5

import (
	"bytes"
	"math/bits"
)

// maxGrid returns the number of chunks per dimension of the dataset's maximum
// shape, which is what the layout version 4 indexes linearise chunk positions
// over, and their product.
func (d *Dataset) maxGrid() ([]uint64, uint64, error) {
	g := make([]uint64, len(d.shape))
	total := uint64(1)
	for i := range g {
		m := d.maxShape[i]
		if m == undefined || m < d.shape[i] {
			return nil, 0, formatErr("maximum dimension %d is %#x for a fixed or implicit chunk index", i, m)
		}
		g[i] = m/d.chunk[i] + min(1, m%d.chunk[i])
		hi, lo := bits.Mul64(total, g[i])
		if hi != 0 {
			return nil, 0, formatErr("chunk count of the maximum shape overflows")
		}
		total = lo
	}
	return g, total, nil
}

// eachCell calls fn with the element offsets of every chunk of the current grid
// and its linear index over the maximum shape's grid, in C order.
func (d *Dataset) eachCell(grid []uint64, fn func(offs []uint64, lin uint64) error) error {
	mg, _, err := d.maxGrid()
	if err != nil {
		return err
	}
	rank := len(grid)
	idx := make([]uint64, rank)
	offs := make([]uint64, rank)
	for {
		var lin uint64
		for i := range rank {
			lin = lin*mg[i] + idx[i]
			offs[i] = idx[i] * d.chunk[i]
		}
		if err := fn(offs, lin); err != nil {
			return err
		}
		i := rank - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < grid[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return nil
		}
	}
}

// fixedArray feeds use with the chunks listed in a fixed array chunk index
// (header "FAHD", data block "FADB", optionally paged). Checksums are not
// verified.
func (d *Dataset) fixedArray(grid []uint64, chunkBytes uint64, use func(offs []uint64, addr, size uint64, mask uint32) error) error {
	f := d.f
	hs := uint64(8 + f.lenSize + f.offSize + 4)
	b, err := f.readAt(d.dataAddr, hs, "fixed array header")
	if err != nil {
		return err
	}
	if !bytes.Equal(b[:4], []byte("FAHD")) || b[4] != 0 {
		return formatErr("fixed array header at offset %#x: bad signature or version", d.dataAddr)
	}
	filtered := len(d.filters) > 0
	client, esize, pageBits := b[5], uint64(b[6]), uint(b[7])
	dd := f.decoder(b, d.dataAddr, "fixed array header")
	dd.skip(8)
	n := dd.length()
	dblk := dd.addr()
	if dd.err != nil {
		return dd.err
	}
	sizeLen := 0 // bytes of a filtered chunk's size
	switch {
	case !filtered && client == 0 && esize == uint64(f.offSize):
	case filtered && client == 1 && esize > uint64(f.offSize)+4 && esize <= uint64(f.offSize)+12:
		sizeLen = int(esize) - f.offSize - 4
	default:
		return formatErr("fixed array header at offset %#x: client %d with %d-byte entries", d.dataAddr, client, esize)
	}
	if pageBits == 0 || pageBits > 32 {
		return formatErr("fixed array header at offset %#x: %d page bits", d.dataAddr, pageBits)
	}
	mg, cells, err := d.maxGrid()
	if err != nil {
		return err
	}
	if n != cells {
		return formatErr("fixed array header at offset %#x: %d entries for %d chunks", d.dataAddr, n, cells)
	}
	if dblk == undefined {
		return nil
	}
	if n > uint64(f.size) {
		return formatErr("fixed array header at offset %#x: %d entries in a %d-byte file", d.dataAddr, n, f.size)
	}
	page := uint64(1) << pageBits
	paged := n > page
	prefix := uint64(6 + f.offSize)
	var bitmap []byte
	if paged {
		npages := (n + page - 1) / page
		bm, err := f.readAt(dblk+prefix, (npages+7)/8, "fixed array page bitmap")
		if err != nil {
			return err
		}
		bitmap = bm
		prefix += uint64(len(bm)) + 4
	}
	head, err := f.readAt(dblk, 6, "fixed array data block")
	if err != nil {
		return err
	}
	if !bytes.Equal(head[:4], []byte("FADB")) || head[4] != 0 || head[5] != client {
		return formatErr("fixed array data block at offset %#x: bad signature, version or client", dblk)
	}
	rank := len(d.shape)
	offs := make([]uint64, rank)
	entries := func(at, first, count uint64) error {
		b, err := f.readAt(at, count*esize, "fixed array entries")
		if err != nil {
			return err
		}
		dd := f.decoder(b, at, "fixed array entries")
		for k := range count {
			addr := dd.addr()
			size, mask := chunkBytes, uint32(0)
			if filtered {
				size = dd.uint(sizeLen)
				mask = dd.u32()
			}
			if dd.err != nil {
				return dd.err
			}
			if addr == undefined {
				continue
			}
			lin := first + k
			for i := rank - 1; i >= 0; i-- {
				offs[i] = lin % mg[i] * d.chunk[i]
				lin /= mg[i]
			}
			if err := use(offs, addr, size, mask); err != nil {
				return err
			}
		}
		return nil
	}
	if !paged {
		return entries(dblk+prefix, 0, n)
	}
	at := dblk + prefix
	for p, first := uint64(0), uint64(0); first < n; p, first = p+1, first+page {
		count := min(page, n-first)
		if bitmap[p/8]&(0x80>>(p%8)) != 0 {
			if err := entries(at, first, count); err != nil {
				return err
			}
		}
		at += count*esize + 4
		if !f.inFile(at, 0) {
			return formatErr("fixed array data block at offset %#x: pages past the end of the file", dblk)
		}
	}
	return nil
}
