// Package header is the frame shared by partopt's binary file headers (model/grid,
// model/labelfile): the 8-byte magic, the version (u32 at 8), the header size (u32 at
// 12), format fields, and the CRC32C (Castagnoli) of everything before it in the last
// 4 bytes; little-endian throughout.
package header

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Castagnoli is the CRC32C table of every checksum in the formats.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// New returns a header of size bytes with the magic, version and size written; the
// caller fills the format fields and calls Seal.
func New(magic string, version uint32, size int) []byte {
	b := make([]byte, size)
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[8:], version)
	binary.LittleEndian.PutUint32(b[12:], uint32(size))
	return b
}

// Seal writes the checksum into the last 4 bytes of b and returns b.
func Seal(b []byte) []byte {
	n := len(b) - 4
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], Castagnoli))
	return b
}

// Check checks the frame of a header of size bytes at the start of b: its length,
// magic (what names the format in the error), version, checksum and size field.
func Check(b []byte, magic, what string, version uint32, size int) error {
	le := binary.LittleEndian
	if len(b) < size {
		return fmt.Errorf("truncated header: %d bytes, want %d", len(b), size)
	}
	if string(b[:8]) != magic {
		return fmt.Errorf("bad magic %q, want %q (not a %s)", b[:8], magic, what)
	}
	if v := le.Uint32(b[8:]); v != version {
		return fmt.Errorf("version %d, this reader supports %d", v, version)
	}
	n := size - 4
	if got, want := crc32.Checksum(b[:n], Castagnoli), le.Uint32(b[n:]); got != want {
		return fmt.Errorf("header checksum mismatch (CRC32C %08x, stored %08x)", got, want)
	}
	if s := le.Uint32(b[12:]); s != uint32(size) {
		return fmt.Errorf("header size %d, want %d", s, size)
	}
	return nil
}
