package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Version is the protocol version this build speaks. Receivers reject any other:
// bump it when a field is removed or changes meaning (adding a field does not
// need a bump, receivers skip unknown fields). Version 2 added label elimination
// (JobSpec.Method, GraphWindow.Domains, WindowResult.Elimination): a version 1
// worker would solve an iri job's task as pbp, so it must refuse it. Version 3
// added WindowResult.Proof: a coordinator refuses a raster window's result
// without its proof, so a version 2 worker's results would all be refused.
// Version 4 proves windows by draft certificates (result files of version 4,
// persistency.Certificate.Draft), which a version 3 coordinator cannot read: it
// would refuse every result of a version 4 worker.
const Version uint16 = 4

// Magic starts every message.
const Magic = "popt"

// HeaderSize is the length of the envelope before the msgpack body: Magic, the
// Version (big-endian uint16) and the Type (uint8).
const HeaderSize = len(Magic) + 2 + 1

// MaxMessageBytes is the default message size limit, the NATS server's default
// max_payload (1 MiB).
const MaxMessageBytes = 1 << 20

// Errors that Unmarshal and Decode wrap; a receiver that gets one drops the
// message (a redelivery would fail the same way).
var (
	ErrTooLarge  = errors.New("message too large")
	ErrVersion   = errors.New("protocol version mismatch")
	ErrMalformed = errors.New("malformed message")
)

// Type identifies a message's Go type in the envelope.
type Type uint8

// The message types. Values are part of the wire format: never reuse one.
const (
	TypeJobSpec Type = iota + 1
	TypeWindowTask
	TypeWindowResult
	TypeResultRef
	TypeProgress
	TypeError
	TypeCancel
)

var typeNames = [...]string{"", "JobSpec", "WindowTask", "WindowResult", "ResultRef", "Progress", "Error", "Cancel"}

func (t Type) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Message is one of the message types: JobSpec, WindowTask, WindowResult,
// ResultRef, Progress, Error, Cancel (or a pointer to one, for Marshal).
type Message interface {
	Validate() error
	messageType() Type
}

func (JobSpec) messageType() Type      { return TypeJobSpec }
func (WindowTask) messageType() Type   { return TypeWindowTask }
func (WindowResult) messageType() Type { return TypeWindowResult }
func (ResultRef) messageType() Type    { return TypeResultRef }
func (Progress) messageType() Type     { return TypeProgress }
func (Error) messageType() Type        { return TypeError }
func (Cancel) messageType() Type       { return TypeCancel }

// typeOf is the Type of a message or of a pointer to one; 0 for anything else,
// including a nil pointer (calling messageType on it would panic).
func typeOf(v any) Type {
	switch v := v.(type) {
	case JobSpec, WindowTask, WindowResult, ResultRef, Progress, Error, Cancel:
		return v.(Message).messageType()
	case *JobSpec:
		return nonNil(v != nil, TypeJobSpec)
	case *WindowTask:
		return nonNil(v != nil, TypeWindowTask)
	case *WindowResult:
		return nonNil(v != nil, TypeWindowResult)
	case *ResultRef:
		return nonNil(v != nil, TypeResultRef)
	case *Progress:
		return nonNil(v != nil, TypeProgress)
	case *Error:
		return nonNil(v != nil, TypeError)
	case *Cancel:
		return nonNil(v != nil, TypeCancel)
	}
	return 0
}

func nonNil(ok bool, t Type) Type {
	if ok {
		return t
	}
	return 0
}

// Marshal validates msg and encodes it: the header, then the msgpack body. It
// does not enforce a size limit (servers may allow more than MaxMessageBytes);
// the sender compares len against its server's max_payload.
func Marshal(msg Message) ([]byte, error) {
	t := typeOf(msg)
	if t == 0 {
		return nil, fmt.Errorf("protocol: cannot marshal %T", msg)
	}
	if err := msg.Validate(); err != nil {
		return nil, fmt.Errorf("protocol: marshal %v: %w", t, err)
	}
	var buf bytes.Buffer
	buf.Grow(256 + blobBytes(msg))
	buf.WriteString(Magic)
	buf.Write(binary.BigEndian.AppendUint16(nil, Version))
	buf.WriteByte(byte(t))
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(msg); err != nil {
		return nil, fmt.Errorf("protocol: marshal %v: %w", t, err)
	}
	return buf.Bytes(), nil
}

// blobBytes is the size of the byte blobs in msg, so that Marshal allocates
// its buffer once.
func blobBytes(msg Message) int {
	switch m := msg.(type) {
	case WindowResult:
		return len(m.Persistent.Data) + len(m.Relaxed.Data)
	case *WindowResult:
		return len(m.Persistent.Data) + len(m.Relaxed.Data)
	case WindowTask:
		return m.inlineBytes()
	case *WindowTask:
		return m.inlineBytes()
	}
	return 0
}

// inlineBytes is the size of a task's inline blobs.
func (t *WindowTask) inlineBytes() int {
	n := 0
	if t.Fixed != nil {
		n += len(t.Fixed.Data.Inline)
	}
	if g := t.Graph; g != nil {
		n += len(g.Nodes.Data.Inline)
		if g.Fixed != nil {
			n += len(g.Fixed.Data.Inline)
		}
	}
	return n
}

// Unmarshal decodes a message and returns it by value (JobSpec, WindowTask, …;
// use a type switch). limit ≤ 0 means MaxMessageBytes. Before any decoding it
// rejects data longer than limit (ErrTooLarge), a wrong magic or an unknown
// type (ErrMalformed) and another version (ErrVersion); then a body whose
// declared lengths exceed the bytes present, or that fails the message's
// Validate (ErrMalformed). It never panics, and allocates at most a small
// multiple of len(data).
func Unmarshal(data []byte, limit int) (any, error) {
	t, body, err := open(data, limit)
	if err != nil {
		return nil, err
	}
	switch t {
	case TypeJobSpec:
		return decodeAs[JobSpec](t, body)
	case TypeWindowTask:
		return decodeAs[WindowTask](t, body)
	case TypeWindowResult:
		return decodeAs[WindowResult](t, body)
	case TypeResultRef:
		return decodeAs[ResultRef](t, body)
	case TypeProgress:
		return decodeAs[Progress](t, body)
	case TypeError:
		return decodeAs[Error](t, body)
	case TypeCancel:
		return decodeAs[Cancel](t, body)
	}
	return nil, fmt.Errorf("protocol: unknown message type %d: %w", uint8(t), ErrMalformed)
}

// Decode is Unmarshal for a message that must be of type T (a value type such
// as WindowTask): any other type is ErrMalformed.
func Decode[T Message](data []byte, limit int) (T, error) {
	var zero T
	want := typeOf(&zero)
	if want == 0 {
		return zero, fmt.Errorf("protocol: Decode[%T]: not a message type", zero)
	}
	t, body, err := open(data, limit)
	if err != nil {
		return zero, err
	}
	if t != want {
		return zero, fmt.Errorf("protocol: got a %v message, want %v: %w", t, want, ErrMalformed)
	}
	v, err := decodeAs[T](t, body)
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}

// open checks the envelope and returns the type and the msgpack body, which
// has passed scan.
func open(data []byte, limit int) (Type, []byte, error) {
	if limit <= 0 {
		limit = MaxMessageBytes
	}
	if len(data) > limit {
		return 0, nil, fmt.Errorf("protocol: message of %d bytes, limit %d: %w", len(data), limit, ErrTooLarge)
	}
	if len(data) < HeaderSize || string(data[:len(Magic)]) != Magic {
		return 0, nil, fmt.Errorf("protocol: not a partopt message (no %q header): %w", Magic, ErrMalformed)
	}
	if v := binary.BigEndian.Uint16(data[len(Magic):]); v != Version {
		return 0, nil, fmt.Errorf("protocol: message version %d, this build speaks version %d: %w", v, Version, ErrVersion)
	}
	t := Type(data[HeaderSize-1])
	if t == 0 || int(t) >= len(typeNames) {
		return 0, nil, fmt.Errorf("protocol: unknown message type %d: %w", uint8(t), ErrMalformed)
	}
	body := data[HeaderSize:]
	if err := scan(body); err != nil {
		return 0, nil, fmt.Errorf("protocol: %v body: %w: %w", t, err, ErrMalformed)
	}
	return t, body, nil
}

// decodeAs decodes a scanned body into a T and validates it. It returns the
// value in an interface, or a nil interface with the error.
func decodeAs[T Message](t Type, body []byte) (any, error) {
	var v T
	// A fresh decoder, not msgpack.Unmarshal: that one turns on
	// UsePreallocateValues, which starts a goroutine per pointer type that
	// allocates values forever in the background.
	dec := msgpack.GetDecoder()
	dec.Reset(bytes.NewReader(body))
	err := dec.Decode(&v)
	msgpack.PutDecoder(dec)
	if err != nil {
		return nil, fmt.Errorf("protocol: %v body: %w: %w", t, err, ErrMalformed)
	}
	if n, ok := any(&v).(normalizer); ok {
		n.normalize()
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("protocol: %v: %w: %w", t, err, ErrMalformed)
	}
	return v, nil
}

// normalizer is implemented by messages that fix up decoded values which the
// wire cannot distinguish (a time's zone).
type normalizer interface{ normalize() }
