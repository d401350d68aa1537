package hdf5

import (
	"bytes"
	"fmt"
)

// Object header message types used by this package.
const (
	msgNil          = 0x00
	msgDataspace    = 0x01
	msgLinkInfo     = 0x02
	msgDatatype     = 0x03
	msgFillOld      = 0x04
	msgFill         = 0x05
	msgLink         = 0x06
	msgExternal     = 0x07
	msgLayout       = 0x08
	msgGroupInfo    = 0x0a
	msgFilters      = 0x0b
	msgContinuation = 0x10
	msgSymbolTable  = 0x11
)

// Message flags.
const (
	msgFlagShared        = 0x02
	msgFlagFailIfUnknown = 0x80
)

// maxContinuations bounds the chunks of one object header (libhdf5 writes a
// handful); it stops continuation chains that loop or fan out.
const maxContinuations = 4096

// message is one object header message.
type message struct {
	typ   uint16
	flags uint8
	data  []byte
	at    uint64 // file offset of data
}

// objectHeader is the decoded list of messages of one object.
type objectHeader struct {
	addr uint64
	msgs []message
}

// first returns the first message of type typ, or nil.
func (h *objectHeader) first(typ uint16) *message {
	for i := range h.msgs {
		if h.msgs[i].typ == typ {
			return &h.msgs[i]
		}
	}
	return nil
}

// objectHeader reads the object header at addr (versions 1 and 2) and its
// continuation chunks. path names the object in errors.
func (f *File) objectHeader(addr uint64, path string) (*objectHeader, error) {
	h, err := f.readObjectHeader(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

type chunkRef struct{ addr, n uint64 }

func (f *File) readObjectHeader(addr uint64) (*objectHeader, error) {
	if !f.inFile(addr, 16) {
		return nil, formatErr("object header at offset %#x: outside the file", addr)
	}
	pre, err := f.readAt(addr, 16, "object header")
	if err != nil {
		return nil, err
	}
	h := &objectHeader{addr: addr}
	var v2 bool
	var crtOrder bool
	var first chunkRef // the first chunk's messages
	switch {
	case pre[0] == 1:
		// Version 1: version, reserved, number of messages (2), reference count
		// (4), header size (4), padding to 8 bytes; messages follow.
		d := f.decoder(pre, addr, "object header")
		d.skip(8)
		size := uint64(d.u32())
		first = chunkRef{addr + 16, size}
	case bytes.Equal(pre[:4], []byte("OHDR")):
		if pre[4] != 2 {
			return nil, unsupportedErr("object header at offset %#x: version %d", addr, pre[4])
		}
		v2 = true
		flags := pre[5]
		n := 6
		if flags&0x20 != 0 {
			n += 16 // access, modification, change, birth times
		}
		if flags&0x10 != 0 {
			n += 4 // attribute phase change values
		}
		crtOrder = flags&0x04 != 0
		sizeLen := 1 << (flags & 3)
		b, err := f.readAt(addr, uint64(n+sizeLen), "object header")
		if err != nil {
			return nil, err
		}
		d := f.decoder(b, addr, "object header")
		d.skip(n)
		size := d.uint(sizeLen)
		first = chunkRef{addr + uint64(n+sizeLen), size}
	default:
		return nil, formatErr("object header at offset %#x: unknown version or signature % x", addr, pre[:4])
	}

	queue := []chunkRef{first}
	seen := map[uint64]bool{}
	var total uint64
	for i := 0; i < len(queue); i++ {
		c := queue[i]
		if i >= maxContinuations {
			return nil, formatErr("object header at offset %#x: more than %d continuation chunks", addr, maxContinuations)
		}
		if seen[c.addr] {
			return nil, formatErr("object header at offset %#x: continuation chunk %#x repeats", addr, c.addr)
		}
		seen[c.addr] = true
		total += c.n
		if total > uint64(f.size) || !f.inFile(c.addr, c.n) {
			return nil, formatErr("object header at offset %#x: chunk at %#x of %d bytes outside the file", addr, c.addr, c.n)
		}
		b, err := f.readAt(c.addr, c.n, "object header chunk")
		if err != nil {
			return nil, err
		}
		start := c.addr
		if v2 {
			if i > 0 {
				if len(b) < 8 || !bytes.Equal(b[:4], []byte("OCHK")) {
					return nil, formatErr("object header continuation at offset %#x: bad signature", c.addr)
				}
				b = b[4 : len(b)-4] // signature, checksum
				start += 4
			}
		}
		more, err := f.parseMessages(h, b, start, v2, crtOrder)
		if err != nil {
			return nil, err
		}
		queue = append(queue, more...)
	}
	return h, nil
}

// parseMessages appends the messages in one header chunk to h and returns the
// continuation chunks they point to.
func (f *File) parseMessages(h *objectHeader, b []byte, at uint64, v2, crtOrder bool) ([]chunkRef, error) {
	var more []chunkRef
	d := f.decoder(b, at, "object header message")
	hdr := 8
	if v2 {
		hdr = 4
		if crtOrder {
			hdr = 6
		}
	}
	for d.remaining() >= hdr {
		var m message
		var size int
		if v2 {
			m.typ = uint16(d.u8())
			size = int(d.u16())
			m.flags = d.u8()
			if crtOrder {
				d.u16()
			}
		} else {
			m.typ = d.u16()
			size = int(d.u16())
			m.flags = d.u8()
			d.skip(3)
		}
		m.at = at + uint64(d.off)
		m.data = d.take(size)
		if d.err != nil {
			return nil, d.err
		}
		switch m.typ {
		case msgNil:
			continue
		case msgContinuation:
			cd := f.decoder(m.data, m.at, "continuation message")
			c := chunkRef{cd.addr(), cd.length()}
			if cd.err != nil {
				return nil, cd.err
			}
			more = append(more, c)
			continue
		}
		h.msgs = append(h.msgs, m)
	}
	return more, nil
}

// checkShared refuses a message stored elsewhere (shared object header
// messages and committed datatypes).
func checkShared(m *message, what string) error {
	if m.flags&msgFlagShared != 0 {
		return unsupportedErr("%s message at offset %#x is shared (committed datatype or shared message table)", what, m.at)
	}
	return nil
}
