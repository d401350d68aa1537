package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxDepth bounds the nesting of maps and arrays in a body. Ours nest three
// deep; the bound stops msgpack's recursive Skip of an unknown field from
// growing the stack by a frame per byte of a deeply nested input.
const maxDepth = 32

var errTruncated = errors.New("truncated")

// scan checks that b is exactly one msgpack value whose every declared length
// (str, bin, ext bytes; array and map entries) fits in the bytes that follow it,
// nested at most maxDepth deep. It allocates nothing.
//
// msgpack/v5 (v5.4.1) trusts declared lengths: decoding a bin into a []byte
// allocates the declared length up front (readN: make([]byte, 0, n), up to
// 4 GiB from a 6-byte header), and decoding an array into a typed slice
// allocates n elements at once (decodeSliceValue's alloc limit never applies:
// its check `flags&disableAllocLimitFlag != 1` is always true). Strings and
// skipped values are read in chunks of at most 1 MiB. After scan every
// declared length is at most len(b), so decoding allocates O(len(b)).
func scan(b []byte) error {
	n, err := skip(b, 0, 0)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("%d bytes after the body", len(b)-n)
	}
	return nil
}

// skip returns the offset just past the value that starts at b[i].
func skip(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errTruncated
	}
	c := b[i]
	i++
	switch {
	case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		return i, nil
	case c <= 0x8f: // fixmap
		return skipItems(b, i, 2*uint64(c&0x0f), depth)
	case c <= 0x9f: // fixarray
		return skipItems(b, i, uint64(c&0x0f), depth)
	case c <= 0xbf: // fixstr
		return skipBytes(b, i, uint64(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return i, nil
	case 0xcc, 0xd0: // uint8, int8
		return skipBytes(b, i, 1)
	case 0xcd, 0xd1: // uint16, int16
		return skipBytes(b, i, 2)
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return skipBytes(b, i, 4)
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return skipBytes(b, i, 8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 (plus the type byte)
		return skipBytes(b, i, 1+1<<(c-0xd4))
	case 0xc4, 0xd9: // bin8, str8
		return lengthThen(b, i, 1, 0, skipBytes)
	case 0xc5, 0xda: // bin16, str16
		return lengthThen(b, i, 2, 0, skipBytes)
	case 0xc6, 0xdb: // bin32, str32
		return lengthThen(b, i, 4, 0, skipBytes)
	case 0xc7: // ext8: length, type, data
		return lengthThen(b, i, 1, 1, skipBytes)
	case 0xc8: // ext16
		return lengthThen(b, i, 2, 1, skipBytes)
	case 0xc9: // ext32
		return lengthThen(b, i, 4, 1, skipBytes)
	case 0xdc: // array16
		return lengthThen(b, i, 2, 0, container(depth, 1))
	case 0xdd: // array32
		return lengthThen(b, i, 4, 0, container(depth, 1))
	case 0xde: // map16
		return lengthThen(b, i, 2, 0, container(depth, 2))
	case 0xdf: // map32
		return lengthThen(b, i, 4, 0, container(depth, 2))
	}
	return 0, fmt.Errorf("invalid msgpack code 0x%02x at byte %d", c, i-1)
}

// lengthThen reads a big-endian length of size bytes at b[i] and calls next
// with the offset after it and the length plus extra.
func lengthThen(b []byte, i, size int, extra uint64, next func([]byte, int, uint64) (int, error)) (int, error) {
	if len(b)-i < size {
		return 0, errTruncated
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(b[i])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[i:]))
	default:
		n = uint64(binary.BigEndian.Uint32(b[i:]))
	}
	return next(b, i+size, n+extra)
}

// skipBytes skips n raw bytes.
func skipBytes(b []byte, i int, n uint64) (int, error) {
	if n > uint64(len(b)-i) {
		return 0, fmt.Errorf("declares %d bytes at byte %d, %d remain", n, i, len(b)-i)
	}
	return i + int(n), nil
}

// container returns a skipper of an array (per = 1) or a map (per = 2) of n
// entries, nested one level below depth.
func container(depth int, per uint64) func([]byte, int, uint64) (int, error) {
	return func(b []byte, i int, n uint64) (int, error) {
		return skipItems(b, i, per*n, depth)
	}
}

// skipItems skips n values of a container at depth+1. Every value takes at
// least a byte, so a count above the bytes left is rejected at once.
func skipItems(b []byte, i int, n uint64, depth int) (int, error) {
	if depth+1 > maxDepth {
		return 0, fmt.Errorf("nested deeper than %d at byte %d", maxDepth, i)
	}
	if n > uint64(len(b)-i) {
		return 0, fmt.Errorf("declares %d entries at byte %d, %d bytes remain", n, i, len(b)-i)
	}
	var err error
	for range n {
		if i, err = skip(b, i, depth+1); err != nil {
			return 0, err
		}
	}
	return i, nil
}
