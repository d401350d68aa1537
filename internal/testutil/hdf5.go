package testutil

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"math/bits"
)

// OpenGMTableBomb is an OpenGM HDF5 file of two variables of k1 and k2 labels
// and one factor, an explicit function over both whose k1·k2 values — all
// zero — are a chunked, deflated dataset: what an attacker crafts to make a
// reader inflate 8·k1·k2 bytes from a file of about a thousandth of that.
// Every value the model asks for is there, so only the file's size can tell
// it from a model. The chunks are deflated at zlib's fastest level, about
// 820:1 on zeros, as in the 1.5 MB file of 2^27 values that found the attack.
//
// The file is laid out as libhdf5 1.10 lays out one with libver v108:
// superblock 2, version 2 object headers, compact groups, contiguous datasets
// but for the values, whose 32 chunks a version 1 B-tree leaf indexes.
func OpenGMTableBomb(k1, k2 int) []byte {
	var w h5Writer
	w.b = make([]byte, 48) // the superblock, written last
	u64 := func(x ...uint64) dataset { return dataset{class: 0, n: uint64(len(x)), data: le64(x...)} }
	header := w.dataset(u64(2, 0, 2, 1, 1, 16000, 1, 1))
	states := w.dataset(u64(uint64(k1), uint64(k2)))
	factors := w.dataset(u64(0, 0, 2, 0, 1))
	indices := w.dataset(u64(2, uint64(k1), uint64(k2)))
	values := w.zeros(uint64(k1)*uint64(k2), 32)
	fn := w.group(member{"indices", indices}, member{"values", values})
	gm := w.group(member{"header", header}, member{"numbers-of-states", states}, member{"factors", factors}, member{"function-id-16000", fn})
	root := w.group(member{"gm", gm})
	sb := append([]byte("\x89HDF\r\n\x1a\n"), 2, 8, 8, 0) // version 2, 8-byte offsets and lengths
	sb = append(sb, le64(0, undefinedAddr, uint64(len(w.b)), root)...)
	sb = binary.LittleEndian.AppendUint32(sb, lookup3(sb))
	copy(w.b, sb)
	return w.b
}

// undefinedAddr is HDF5's undefined address.
const undefinedAddr = ^uint64(0)

// h5Writer lays out an HDF5 file object by object; an object is written after
// the objects it points to.
type h5Writer struct{ b []byte }

// put appends p and returns its address.
func (w *h5Writer) put(p []byte) uint64 {
	at := uint64(len(w.b))
	w.b = append(w.b, p...)
	return at
}

// dataset is a one-dimensional dataset of 8-byte elements: unsigned integers
// (class 0) or IEEE doubles (class 1).
type dataset struct {
	class byte
	n     uint64
	data  []byte // contiguous data, n·8 bytes
}

// message is an object header message.
type message struct {
	typ  byte
	data []byte
}

// object writes a version 2 object header holding msgs.
func (w *h5Writer) object(msgs ...message) uint64 {
	var body []byte
	for _, m := range msgs {
		body = append(body, m.typ)
		body = binary.LittleEndian.AppendUint16(body, uint16(len(m.data)))
		body = append(body, 0) // flags
		body = append(body, m.data...)
	}
	h := append([]byte("OHDR"), 2, 2) // version 2, chunk size in 4 bytes
	h = binary.LittleEndian.AppendUint32(h, uint32(len(body)))
	h = append(h, body...)
	return w.put(binary.LittleEndian.AppendUint32(h, lookup3(h)))
}

// member is a group's link to the object header at addr.
type member struct {
	name string
	addr uint64
}

// group writes a group of the members, compactly (link messages in its
// header).
func (w *h5Writer) group(members ...member) uint64 {
	msgs := []message{
		{0x02, append([]byte{0, 0}, le64(undefinedAddr, undefinedAddr)...)}, // link info: no dense storage
		{0x0a, []byte{0, 0}}, // group info
	}
	for _, m := range members {
		l := append([]byte{1, 0, byte(len(m.name))}, m.name...) // version 1, hard link, 1-byte name length
		msgs = append(msgs, message{0x06, append(l, le64(m.addr)...)})
	}
	return w.object(msgs...)
}

// typeMessages are the dataspace and datatype messages of n elements of class.
func typeMessages(class byte, n uint64) []message {
	space := append([]byte{2, 1, 0, 1}, le64(n)...)       // version 2, rank 1, simple
	typ := []byte{0x10, 0, 0, 0, 8, 0, 0, 0, 0, 0, 64, 0} // unsigned, little-endian, 64 bits
	if class == 1 {
		typ = []byte{0x11, 0x20, 63, 0, 8, 0, 0, 0, 0, 0, 64, 0, 52, 11, 0, 52, 0xff, 0x03, 0, 0} // IEEE double
	}
	return []message{{0x01, space}, {0x03, typ}}
}

// dataset writes d contiguously.
func (w *h5Writer) dataset(d dataset) uint64 {
	at := w.put(d.data)
	msgs := append(typeMessages(d.class, d.n),
		message{0x05, []byte{3, 0x0a}}, // fill value version 3: allocated late, written if set, undefined
		message{0x08, append([]byte{3, 1}, le64(at, uint64(len(d.data)))...)})
	return w.object(msgs...)
}

// zeros writes a dataset of n doubles, all zero, in chunks deflated chunks
// (n a multiple of chunks), indexed by one version 1 B-tree leaf.
func (w *h5Writer) zeros(n uint64, chunks int) uint64 {
	size := n / uint64(chunks) // elements a chunk
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	zeros := make([]byte, 1<<20)
	for left := 8 * size; left > 0; left -= min(left, uint64(len(zeros))) {
		zw.Write(zeros[:min(left, uint64(len(zeros)))])
	}
	zw.Close()
	addrs := make([]uint64, chunks)
	for i := range addrs {
		addrs[i] = w.put(z.Bytes())
	}
	// The leaf: libhdf5 reads nodes of 2K = 64 entries whatever they hold.
	key := func(stored, offset uint64) []byte {
		k := binary.LittleEndian.AppendUint32(nil, uint32(stored))
		return append(k, append([]byte{0, 0, 0, 0}, le64(offset, 0)...)...) // filter mask, offsets
	}
	node := append([]byte("TREE"), 1, 0) // chunk node, level 0
	node = binary.LittleEndian.AppendUint16(node, uint16(chunks))
	node = append(node, le64(undefinedAddr, undefinedAddr)...) // siblings
	for i, a := range addrs {
		node = append(node, key(uint64(z.Len()), uint64(i)*size)...)
		node = append(node, le64(a)...)
	}
	node = append(node, key(0, n)...)
	node = append(node, make([]byte, (64-chunks)*(24+8))...)
	tree := w.put(node)
	layout := append([]byte{3, 2, 2}, le64(tree)...) // version 3, chunked, rank 1 + element size
	layout = binary.LittleEndian.AppendUint32(layout, uint32(size))
	layout = binary.LittleEndian.AppendUint32(layout, 8)
	filters := []byte{2, 1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0} // version 2, deflate, level 1
	msgs := append(typeMessages(1, n),
		message{0x05, []byte{3, 0x0b}}, // fill value version 3: allocated incrementally
		message{0x08, layout},
		message{0x0b, filters})
	return w.object(msgs...)
}

func le64(x ...uint64) []byte {
	b := make([]byte, 0, 8*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// lookup3 is Bob Jenkins' hashlittle with initial value 0: the checksum of
// HDF5's version 2 metadata.
func lookup3(k []byte) uint32 {
	a := 0xdeadbeef + uint32(len(k))
	b, c := a, a
	for ; len(k) > 12; k = k[12:] {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a -= c
		a ^= bits.RotateLeft32(c, 4)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 6)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 8)
		b += a
		a -= c
		a ^= bits.RotateLeft32(c, 16)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 19)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 4)
		b += a
	}
	if len(k) == 0 {
		return c
	}
	var t [12]byte // the last 1–12 bytes, zero-padded
	copy(t[:], k)
	a += binary.LittleEndian.Uint32(t[:])
	b += binary.LittleEndian.Uint32(t[4:])
	c += binary.LittleEndian.Uint32(t[8:])
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}
