package uai

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/partopt/partopt/internal/expansion"
	"github.com/ulikunitz/xz/lzma"
)

// MaxExpansion bounds what a compressed model file may decode to, per byte of
// the file: past MaxExpansion × its size (plus 16 MiB) it is refused as a
// decompression bomb before it fills memory. It is the budget every reader of
// compressed input shares (package expansion), HDF5 datasets' too.
const MaxExpansion = expansion.MaxRatio

// maxXZDict is the dictionary any xz block may declare (xz -9 uses 64 MiB);
// beyond it a block's dictionary may not exceed twice what the block decodes
// to: the decoder allocates what the header declares, up to 4 GiB.
const maxXZDict = 64 << 20

// expansionBudget is how many bytes a compressed file of size bytes may decode to.
func expansionBudget(size int64) int64 { return expansion.Budget(size) }

// budgetReader reads r and fails once more than budget bytes came out of it.
type budgetReader struct {
	r      io.Reader
	left   int64
	name   string
	size   int64
	budget int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p[:min(int64(len(p)), b.left+1)])
	if b.left -= int64(n); b.left < 0 {
		return 0, fmt.Errorf("%s decompresses to more than %d bytes, %d× its %d bytes: %w", b.name, b.budget, MaxExpansion, b.size, expansion.ErrBomb)
	}
	return n, err
}

// checkXZ reads the indexes and block headers of the xz file f of size bytes
// (every stream, from the end) and refuses it, before anything is decoded,
// when it declares more decoded bytes than expansionBudget allows or a block
// dictionary larger than maxXZDict and twice the block.
func checkXZ(name string, f io.ReaderAt, size int64) error {
	bad := func(what string) error { return fmt.Errorf("%s: malformed xz file: %s", name, what) }
	read := func(off, n int64) ([]byte, error) {
		if off < 0 || n < 0 || off+n > size {
			return nil, bad("an offset beyond the file")
		}
		b := make([]byte, n)
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return b, nil
	}
	var total int64
	pos := size
	for pos > 0 {
		for pos >= 4 { // stream padding: zero bytes in fours
			b, err := read(pos-4, 4)
			if err != nil {
				return err
			}
			if binary.LittleEndian.Uint32(b) != 0 {
				break
			}
			pos -= 4
		}
		if pos == 0 {
			break
		}
		footer, err := read(pos-12, 12)
		if err != nil {
			return err
		}
		if string(footer[10:]) != "YZ" {
			return bad("no stream footer")
		}
		indexSize := (int64(binary.LittleEndian.Uint32(footer[4:8])) + 1) * 4
		index, err := read(pos-12-indexSize, indexSize)
		if err != nil {
			return err
		}
		if index[0] != 0 {
			return bad("no index")
		}
		p := 1
		records, ok := uvarint(index, &p)
		if !ok || records > uint64(indexSize) {
			return bad("index")
		}
		type block struct{ unpadded, decoded int64 }
		blocks := make([]block, records)
		var stored int64
		for i := range blocks {
			u, ok1 := uvarint(index, &p)
			d, ok2 := uvarint(index, &p)
			if !ok1 || !ok2 || u > uint64(size) || d > 1<<62 {
				return bad("index record")
			}
			blocks[i] = block{int64(u), int64(d)}
			stored += (int64(u) + 3) &^ 3
			if total += int64(d); total > expansionBudget(size) {
				return fmt.Errorf("%s declares more than %d decoded bytes, %d× its %d bytes: %w", name, expansionBudget(size), MaxExpansion, size, expansion.ErrBomb)
			}
		}
		start := pos - 12 - indexSize - stored - 12
		head, err := read(start, 12)
		if err != nil {
			return err
		}
		if string(head[:6]) != "\xfd7zXZ\x00" {
			return bad("no stream header")
		}
		off := start + 12
		for _, blk := range blocks {
			if err := checkXZBlock(name, read, off, blk.decoded); err != nil {
				return err
			}
			off += (blk.unpadded + 3) &^ 3
		}
		pos = start
	}
	return nil
}

// checkXZBlock checks the dictionaries that the block header at off declares
// for a block that decodes to decoded bytes.
func checkXZBlock(name string, read func(off, n int64) ([]byte, error), off, decoded int64) error {
	first, err := read(off, 1)
	if err != nil {
		return err
	}
	if first[0] == 0 {
		return fmt.Errorf("%s: malformed xz file: an index where a block should be", name)
	}
	h, err := read(off, (int64(first[0])+1)*4)
	if err != nil {
		return err
	}
	flags, p := h[1], 2
	for _, bit := range []byte{0x40, 0x80} { // the compressed and decoded sizes, when present
		if flags&bit == 0 {
			continue
		}
		if _, ok := uvarint(h, &p); !ok {
			return fmt.Errorf("%s: malformed xz file: block header", name)
		}
	}
	for range int(flags&3) + 1 {
		id, ok1 := uvarint(h, &p)
		n, ok2 := uvarint(h, &p)
		if !ok1 || !ok2 || uint64(p)+n > uint64(len(h)) {
			return fmt.Errorf("%s: malformed xz file: filter flags", name)
		}
		if id == 0x21 && n == 1 { // LZMA2: its dictionary
			dict, err := lzma.DecodeDictCap(h[p])
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if dict > maxXZDict && dict > 2*decoded {
				return fmt.Errorf("%s: a block of %d bytes declares a dictionary of %d bytes: refused (it would be allocated)", name, decoded, dict)
			}
		}
		p += int(n)
	}
	return nil
}

// uvarint reads an xz multibyte integer (7 bits a byte, low first, at most 9
// bytes) at b[*p], advancing *p.
func uvarint(b []byte, p *int) (uint64, bool) {
	var v uint64
	for i := 0; i < 9; i++ {
		if *p >= len(b) {
			return 0, false
		}
		c := b[*p]
		*p++
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i == 0 || c != 0
		}
	}
	return 0, false
}
