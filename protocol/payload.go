package protocol

import (
	"fmt"
	"hash"
	"hash/crc32"
)

// InlineLimit is the most bytes a Payload carries inline; above it senders put
// the bytes in the object store. Half of MaxMessageBytes, so a task with an
// inline payload always fits, and large enough for the fixed labels of the
// default window (512-pixel core, 32-pixel halo, grown by 2: 580² bytes at one
// byte per label).
const InlineLimit = 512 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the Castagnoli CRC-32 of data, the checksum of Payload and ModelRef.
func CRC32C(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }

// Payload is bytes that travel either inline, or as the name of an object in
// ObjectBucket with its size and CRC32C. Exactly one is used: with Object set,
// Inline is empty; with Object empty the content is Inline (possibly empty),
// and Size and CRC32C are zero.
type Payload struct {
	Inline []byte `msgpack:"b,omitempty"`
	Object string `msgpack:"o,omitempty"`
	Size   int64  `msgpack:"s,omitempty"`
	CRC32C uint32 `msgpack:"c,omitempty"`
}

// NewPayload returns content inline when it fits InlineLimit, and otherwise a
// reference to object, which the caller must put in ObjectBucket.
func NewPayload(content []byte, object string) Payload {
	return NewPayloadWithin(content, object, InlineLimit)
}

// NewPayloadWithin is NewPayload with a lower inline limit (min(limit,
// InlineLimit)), for a server whose max_payload is below MaxMessageBytes.
func NewPayloadWithin(content []byte, object string, limit int) Payload {
	if len(content) <= min(limit, InlineLimit) {
		return Payload{Inline: content}
	}
	return Payload{Object: object, Size: int64(len(content)), CRC32C: CRC32C(content)}
}

// Validate checks that exactly one form is used, the inline size limit, and
// the object name.
func (p Payload) Validate() error {
	if p.Object == "" {
		if len(p.Inline) > InlineLimit {
			return fmt.Errorf("payload: %d inline bytes, limit %d: use the object store", len(p.Inline), InlineLimit)
		}
		if p.Size != 0 || p.CRC32C != 0 {
			return fmt.Errorf("payload: inline, but with an object size %d or CRC32C %08x", p.Size, p.CRC32C)
		}
		return nil
	}
	if len(p.Inline) > 0 {
		return fmt.Errorf("payload: both %d inline bytes and object %q", len(p.Inline), p.Object)
	}
	if p.Size < 0 {
		return fmt.Errorf("payload: object %q of negative size %d", p.Object, p.Size)
	}
	return ValidateObject(p.Object)
}

// Verify checks an object's content, fetched from the store, against Size and
// CRC32C. An inline payload needs no check (it came in a message).
func (p Payload) Verify(content []byte) error {
	if p.Object == "" {
		return nil
	}
	if int64(len(content)) != p.Size {
		return fmt.Errorf("payload: object %q has %d bytes, want %d", p.Object, len(content), p.Size)
	}
	if c := CRC32C(content); c != p.CRC32C {
		return fmt.Errorf("payload: object %q has CRC32C %08x, want %08x", p.Object, c, p.CRC32C)
	}
	return nil
}

// NewCRC32C returns a hash computing CRC32C incrementally (of a file being
// streamed).
func NewCRC32C() hash.Hash32 { return crc32.New(castagnoli) }
