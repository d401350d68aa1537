package partition

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// A window certificates file keeps, in merge order, every window proof a
// windowed run merged, so that its result can be re-checked later from the
// model alone (Replay*): for each window, what it was solved over (a raster
// window's node rectangle, or a graph window's node list) and its proof in the
// result file format (persistency.EncodeResult). Records follow the merges:
// round by round, in plan order, pbp windows before an elimination's (pbp+iri).
// Windows that proved nothing or were lost have no record; nothing in the file
// is believed, since every proof is checked on the model and the labels the
// replay itself fixed before its round.
//
// Layout: the magic line, then records, each a kind byte, its round (uvarint),
// its nodes (raster: x0, y0, w, h; graph and elimination: a count, the first
// variable and the gaps, uvarints), the proof's length (uvarint) and the proof;
// then a kind-0 byte and the record count, which tells a complete file from a
// truncated one.

const proofsMagic = "partopt window certificates v1\n"

// ProofKind is what a window certificate proves.
type ProofKind byte

const (
	ProofRaster      ProofKind = 1 // a raster pbp window (SolveWindow)
	ProofGraph       ProofKind = 2 // a graph pbp window (SolveGraphWindow, Solve)
	ProofElimination ProofKind = 3 // a label elimination window (EliminateWindow)
)

func (k ProofKind) String() string {
	switch k {
	case ProofRaster:
		return "raster pbp"
	case ProofGraph:
		return "graph pbp"
	case ProofElimination:
		return "elimination"
	}
	return fmt.Sprintf("kind %d", byte(k))
}

// ProofRecord is one window's entry in a window certificates file.
type ProofRecord struct {
	Kind  ProofKind
	Round int
	Rect  Rect  // a raster window's nodes
	Nodes []int // a graph window's nodes, or an elimination's undecided nodes; ascending
	// proof is the proof's place in the file (records read back).
	proof *io.SectionReader
}

// ProofWriter writes a window certificates file; its methods are called in
// merge order, from one goroutine.
type ProofWriter struct {
	w       *bufio.Writer
	buf     []byte
	records int64
	err     error
}

// NewProofWriter starts a window certificates file on w.
func NewProofWriter(w io.Writer) *ProofWriter {
	pw := &ProofWriter{w: bufio.NewWriterSize(w, 1<<16)}
	_, pw.err = pw.w.WriteString(proofsMagic)
	return pw
}

// Raster records a raster window's proof (a *persistency.Result, or its encoding).
func (pw *ProofWriter) Raster(round int, nodes Rect, proof any) error {
	return pw.write(ProofRecord{Kind: ProofRaster, Round: round, Rect: nodes}, proof)
}

// Graph records a graph window's proof over its nodes.
func (pw *ProofWriter) Graph(round int, nodes []int, proof any) error {
	return pw.write(ProofRecord{Kind: ProofGraph, Round: round, Nodes: nodes}, proof)
}

// Elimination records an elimination window's proof (a *persistency.Elimination,
// or its encoding) over its undecided nodes (WindowWork.Nodes).
func (pw *ProofWriter) Elimination(round int, nodes []int, proof any) error {
	if e, ok := proof.(*persistency.Elimination); ok {
		proof = &persistency.Result{Persistent: e.Persistent, Elimination: e}
	}
	return pw.write(ProofRecord{Kind: ProofElimination, Round: round, Nodes: nodes}, proof)
}

func (pw *ProofWriter) write(rec ProofRecord, proof any) error {
	if pw.err != nil {
		return pw.err
	}
	var data []byte
	switch p := proof.(type) {
	case []byte:
		data = p
	case *persistency.Result:
		if data, pw.err = persistency.EncodeResult(p); pw.err != nil {
			return pw.err
		}
	default:
		panic(fmt.Sprintf("partition: a proof of type %T", proof))
	}
	b := append(pw.buf[:0], byte(rec.Kind))
	b = binary.AppendUvarint(b, uint64(rec.Round))
	if rec.Kind == ProofRaster {
		for _, x := range []int{rec.Rect.X0, rec.Rect.Y0, rec.Rect.W, rec.Rect.H} {
			b = binary.AppendUvarint(b, uint64(x))
		}
	} else {
		b = binary.AppendUvarint(b, uint64(len(rec.Nodes)))
		prev := -1
		for _, v := range rec.Nodes {
			b = binary.AppendUvarint(b, uint64(v-prev))
			prev = v
		}
	}
	b = binary.AppendUvarint(b, uint64(len(data)))
	pw.buf = b
	if _, pw.err = pw.w.Write(b); pw.err == nil {
		_, pw.err = pw.w.Write(data)
	}
	pw.records++
	return pw.err
}

// Close ends the file (its record count) and flushes it; the writer under it
// stays open.
func (pw *ProofWriter) Close() error {
	if pw.err != nil {
		return pw.err
	}
	b := binary.AppendUvarint([]byte{0}, uint64(pw.records))
	if _, pw.err = pw.w.Write(b); pw.err == nil {
		pw.err = pw.w.Flush()
	}
	if err := pw.err; err != nil {
		return err
	}
	pw.err = errors.New("partition: window certificates file closed")
	return nil
}

// ProofReader reads a window certificates file record by record; the proofs
// stay in the file until a check decodes one (ProofRecord.Proof), so what is
// held is a record's nodes at a time.
type ProofReader struct {
	name    string
	ra      io.ReaderAt
	size    int64
	off     int64
	maxVars int64
	records int64
	peeked  *ProofRecord
	err     error
	buf     []byte // the file's bytes from bufAt on
	bufAt   int64
}

// NewProofReader reads the window certificates file of size bytes in ra
// (named name in errors), for a model of maxVars variables: longer node lists
// are refused before they are read.
func NewProofReader(name string, ra io.ReaderAt, size, maxVars int64) (*ProofReader, error) {
	head := make([]byte, len(proofsMagic))
	if _, err := ra.ReadAt(head, 0); err != nil || string(head) != proofsMagic {
		return nil, fmt.Errorf("%s: %w: not a window certificates file (no %q header)", name, ErrDamaged, proofsMagic[:len(proofsMagic)-1])
	}
	return &ProofReader{name: name, ra: ra, size: size, off: int64(len(proofsMagic)), maxVars: maxVars}, nil
}

// Peek returns the next record without consuming it; io.EOF after the last.
func (r *ProofReader) Peek() (*ProofRecord, error) {
	if r.peeked == nil && r.err == nil {
		r.peeked, r.err = r.read()
	}
	return r.peeked, r.err
}

// Next returns the next record and consumes it; io.EOF after the last.
func (r *ProofReader) Next() (*ProofRecord, error) {
	rec, err := r.Peek()
	r.peeked = nil
	return rec, err
}

// Records is the number of records read so far.
func (r *ProofReader) Records() int64 { return r.records }

// readByte reads the byte at off and advances it, through a buffer of the
// bytes from bufAt on (record headers are read a byte at a time; proofs are
// skipped, and read later through their sections).
func (r *ProofReader) readByte() (byte, error) {
	if i := r.off - r.bufAt; i < 0 || i >= int64(len(r.buf)) {
		if r.buf == nil {
			r.buf = make([]byte, 0, 1<<16)
		}
		n, err := r.ra.ReadAt(r.buf[:cap(r.buf)], r.off)
		if n == 0 {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		r.buf, r.bufAt = r.buf[:n], r.off
	}
	b := r.buf[r.off-r.bufAt]
	r.off++
	return b, nil
}

// byteFunc is an io.ByteReader.
type byteFunc func() (byte, error)

func (f byteFunc) ReadByte() (byte, error) { return f() }

func (r *ProofReader) read() (*ProofRecord, error) {
	uv := func(what string, limit int64) (int64, error) {
		x, err := binary.ReadUvarint(byteFunc(r.readByte))
		if err != nil {
			return 0, r.damaged("%s: %v", what, err)
		}
		if x > uint64(limit) {
			return 0, r.damaged("%s %d, at most %d", what, x, limit)
		}
		return int64(x), nil
	}
	kind, err := r.readByte()
	if err != nil {
		return nil, r.damaged("truncated after %d records", r.records)
	}
	rec := &ProofRecord{Kind: ProofKind(kind)}
	switch rec.Kind {
	case 0:
		n, err := uv("record count", 1<<62)
		if err != nil {
			return nil, err
		}
		if n != r.records || r.off != r.size {
			return nil, r.damaged("it ends with a count of %d records after %d, %d bytes before its end", n, r.records, r.size-r.off)
		}
		return nil, io.EOF
	case ProofRaster, ProofGraph, ProofElimination:
	default:
		return nil, r.damaged("record %d has kind %d", r.records+1, kind)
	}
	round, err := uv("round", 1<<30)
	if err != nil {
		return nil, err
	}
	rec.Round = int(round)
	if rec.Kind == ProofRaster {
		var xs [4]int64
		for i := range xs {
			if xs[i], err = uv("window rectangle", 1<<31); err != nil {
				return nil, err
			}
		}
		rec.Rect = Rect{int(xs[0]), int(xs[1]), int(xs[2]), int(xs[3])}
	} else {
		n, err := uv("node count", r.maxVars)
		if err != nil {
			return nil, err
		}
		rec.Nodes = make([]int, n)
		v := int64(-1)
		for i := range rec.Nodes {
			gap, err := uv("node gap", r.maxVars)
			if err != nil {
				return nil, err
			}
			if v += gap; gap == 0 || v >= r.maxVars {
				return nil, r.damaged("record %d: node %d of a model of %d variables, or not ascending", r.records+1, v, r.maxVars)
			}
			rec.Nodes[i] = int(v)
		}
	}
	n, err := uv("proof length", r.size-r.off)
	if err != nil {
		return nil, err
	}
	rec.proof = io.NewSectionReader(r.ra, r.off, n)
	r.off += n
	r.records++
	return rec, nil
}

// ErrDamaged is the error of a window certificates file that is not one or is
// damaged (truncated, malformed), as opposed to one whose proofs do not hold.
var ErrDamaged = errors.New("window certificates file damaged")

func (r *ProofReader) damaged(format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", r.name, ErrDamaged, fmt.Sprintf(format, args...))
}

// Proof decodes the record's proof as a result of the window problem m
// (persistency.ReadResultFor: within what such a proof can hold).
func (rec *ProofRecord) Proof(m *model.Model) (*persistency.Result, error) {
	return persistency.ReadResultFor(io.NewSectionReader(rec.proof, 0, rec.proof.Size()), m)
}

// A ProofSource gives a window's proof once the window's problem, m, is built:
// a decoder bounds what it allocates by what a proof of m can hold.
type ProofSource func(m *model.Model) (*persistency.Result, error)

// ProofValue is a proof already in memory.
func ProofValue(res *persistency.Result) ProofSource {
	return func(*model.Model) (*persistency.Result, error) { return res, nil }
}

// ProofBytes is a proof in the result file format (a message from a worker),
// decoded within the budget of the window problem.
func ProofBytes(data []byte) ProofSource {
	return func(m *model.Model) (*persistency.Result, error) {
		if len(data) == 0 {
			return nil, errors.New("partition: a window result without its proof")
		}
		return persistency.ReadResultFor(bytes.NewReader(data), m)
	}
}
