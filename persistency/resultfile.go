package persistency

// Result files. WriteResult stores a Result with its certificate so that another
// process, later, can re-check the proof from the model alone (ReadResult, then
// Verify); partopt solve writes one and partopt verify reads it.
//
// The format is our own rather than encoding/gob: gob's documentation says its Decoder
// is not hardened against adversarial input, and a result file is input — it comes
// from disk, possibly another machine, possibly damaged or edited. With a format of a
// few plain fields the reader checks every count before it allocates and allocates in
// bounded chunks, so memory grows with the bytes actually present, never with a count
// a damaged file claims; every value is range-checked as it is read. Nothing in a file
// is trusted beyond its shape: Verify re-derives the proof from the model.
//
// Layout (version 1):
//
//	"partopt persistency result\n"   magic, uncompressed: a wrong file is named as such
//	uint16 big-endian                  version (1)
//	gzip stream (one member)           the body; gzip's CRC-32 and length detect damage
//
// The body is a sequence of unsigned (uvarint) and signed (varint) LEB128 integers,
// float64 values (8 bytes, little-endian IEEE 754) and int lists (a uvarint count, then
// the varint values):
//
//	uvarint  Variant
//	varint   PruningIterations, SolverIterations
//	float64  Energy, LowerBound, CertificateGap, Score, Fraction, Seconds, SolverSeconds
//	ints     Persistent (n values, each −1 or a label)
//	ints     Labeling (n values, or none)
//	byte     certificate kind: 0 none, 1 dual (TRW-S), 2 exhaustive, 3 dual of any order (SRMP)
//	 kind ≠ 0: ints  Certificate.Labeling (one label per persistent variable)
//	 kind 2:   uvarint  Certificate.Limit
//	 kind 1:   ints  Dual.Labeling; uvarint E, then 2E uvarints Dual.Edges;
//	           E bytes Dual.LaterIsSecond (0 or 1); E float64 Dual.Share;
//	           uvarint M, then M float64 Dual.Messages
//	 kind 3:   ints  Factor.Labeling; uvarint M, then M float64 Factor.Messages
//
// Version 2 adds, after the certificate, a byte 0 (no label elimination) or 1 and
// the elimination: ints Test; n int lists Alive; varint Eliminated, Rounds,
// SolverIterations; float64 Energy, LowerBound, Seconds, SolverSeconds; its
// certificate as above. Version 3 builds verification problems over the alive
// labels only, so version 2's elimination certificates are refused; it appends
// uvarint S, then S earlier stages, each ints Test, n int lists Alive and a
// certificate. Version 4 (written now) adds certificate kind 4, a TRW-S dual as
// its draft (trws.Draft: the messages before their polish, which the checker
// redoes): ints Certificate.Labeling (the draft's too); uvarint M, then M float32
// (4 bytes, little-endian) Draft.Messages — half of kind 1's bytes.
//
// The body must end there. Set is not stored: ReadResult derives it from Persistent.
// gzip pays for itself: labels and persistent flags are small repetitive integers, and
// normalised messages repeat a few values on regular models (Potts, truncated): the
// result of testdata/denoise32.uai.gz takes 53 KB instead of 156 KB.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/pgzip"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/srmp"
	"github.com/partopt/partopt/trws"
)

const (
	resultMagic = "partopt persistency result\n"
	// resultVersion is written; versions 1 (no elimination section), 2 without
	// an elimination and 3 (no drafts) are still read.
	resultVersion = 4

	// Counts in a result file: variables and edges are int32 in the model; messages
	// are at most Σ_e (K₁+K₂), which fits comfortably in 2^48.
	maxFileVars     = math.MaxInt32
	maxFileMessages = min(1<<48, math.MaxInt)
	// maxFileStages bounds an elimination's earlier stages (Eliminate runs a few).
	maxFileStages = 64
	// readChunk is the largest number of elements allocated ahead of the data.
	readChunk = 1 << 16
)

const (
	certNone byte = iota
	certDual
	certExhaustive
	certFactor
	certDraft // version 4
)

// WriteResult writes r in the result file format (see ReadResult). It refuses a
// result that ReadResult would reject, so every file it writes reads back.
func WriteResult(w io.Writer, r *Result) error {
	if err := checkResultShape(r); err != nil {
		return fmt.Errorf("persistency: cannot store the result: %w", err)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(resultMagic)
	bw.Write(binary.BigEndian.AppendUint16(nil, resultVersion))
	zw, err := newProofGzip(bw, r)
	if err != nil {
		return err
	}
	e := &resultEncoder{w: bufio.NewWriterSize(zw, 1<<16)}
	e.uvarint(uint64(r.Variant))
	e.varint(int64(r.PruningIterations))
	e.varint(int64(r.SolverIterations))
	for _, f := range []float64{r.Energy, r.LowerBound, r.CertificateGap, r.Score, r.Fraction, r.Seconds, r.SolverSeconds} {
		e.float(f)
	}
	e.ints(r.Persistent)
	e.ints(r.Labeling)
	e.certificate(r.Certificate)
	if el := r.Elimination; el == nil {
		e.byte(0)
	} else {
		e.byte(1)
		e.ints(el.Test)
		for _, ls := range el.Alive {
			e.ints(ls)
		}
		e.varint(int64(el.Eliminated))
		e.varint(int64(el.Rounds))
		e.varint(int64(el.SolverIterations))
		for _, f := range []float64{el.Energy, el.LowerBound, el.Seconds, el.SolverSeconds} {
			e.float(f)
		}
		e.certificate(el.Certificate)
		e.uvarint(uint64(len(el.Earlier)))
		for _, st := range el.Earlier {
			e.ints(st.Test)
			for _, ls := range st.Alive {
				e.ints(ls)
			}
			e.certificate(st.Certificate)
		}
	}
	if err := e.w.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// parallelProof is the size of a proof's certificates from which it is
// compressed on all cores: below it, the blocks' goroutines and buffers cost
// more than they save (Segmentation_12's 231 variables: +0.15 ms of 0.5).
const parallelProof = 1 << 21

// newProofGzip returns the compressor of r's proof. klauspost/compress's gzip
// (already in the module graph through nats-server) writes the standard
// format ReadResult reads with the standard library, at twice its speed; for
// a large proof, most of a whole model's serial work (a 10⁶-pixel window's is
// ~6 MB), klauspost/pgzip compresses 1 MiB blocks on all cores, still one
// standard gzip stream (tsukuba's proof 81 → 50 ms on two cores).
func newProofGzip(w io.Writer, r *Result) (io.WriteCloser, error) {
	size := certificateBytes(r.Certificate)
	if el := r.Elimination; el != nil {
		size += certificateBytes(el.Certificate)
		for _, st := range el.Earlier {
			size += certificateBytes(st.Certificate)
		}
	}
	if size >= parallelProof {
		return pgzip.NewWriterLevel(w, pgzip.BestSpeed)
	}
	return kgzip.NewWriterLevel(w, kgzip.BestSpeed)
}

// certificateBytes is about the bytes of c's messages in a proof.
func certificateBytes(c *Certificate) int {
	switch {
	case c == nil:
		return 0
	case c.Dual != nil:
		return 8 * len(c.Dual.Messages)
	case c.Draft != nil:
		return 4 * len(c.Draft.Messages)
	case c.Factor != nil:
		return 8 * len(c.Factor.Messages)
	}
	return 0
}

// checkResultShape checks what the file format needs of r: the same conditions that
// ReadResult checks on a file. Whether the result holds for a model is Verify's job.
func checkResultShape(r *Result) error {
	if r == nil {
		return errors.New("nil result")
	}
	if r.Variant != Invariant && r.Variant != Original {
		return fmt.Errorf("unknown variant %d", r.Variant)
	}
	n := len(r.Persistent)
	if n > maxFileVars {
		return fmt.Errorf("%d variables, at most %d can be stored", n, maxFileVars)
	}
	if len(r.Labeling) != 0 && len(r.Labeling) != n {
		return fmt.Errorf("labeling of %d variables, %d persistent flags", len(r.Labeling), n)
	}
	set := 0
	for v, l := range r.Persistent {
		if l < -1 || l >= math.MaxInt32 {
			return fmt.Errorf("variable %d: persistent label %d out of range", v, l)
		}
		if l >= 0 {
			set++
		}
	}
	for v, l := range r.Labeling {
		if l < 0 || l >= math.MaxInt32 {
			return fmt.Errorf("variable %d: label %d out of range", v, l)
		}
	}
	if err := checkEliminationShape(r.Elimination, n); err != nil {
		return fmt.Errorf("elimination: %w", err)
	}
	return checkCertificateShape(r.Certificate, set)
}

// checkEliminationShape checks what the file format needs of an elimination of n
// variables (nil: none).
func checkEliminationShape(el *Elimination, n int) error {
	if el == nil {
		return nil
	}
	if len(el.Test) != n || len(el.Alive) != n || len(el.Persistent) != n {
		return fmt.Errorf("%d test labels, %d domains and %d persistent flags for %d variables", len(el.Test), len(el.Alive), len(el.Persistent), n)
	}
	if err := checkLabels(el.Test); err != nil {
		return fmt.Errorf("test labeling: %w", err)
	}
	if err := checkAscending(el.Alive); err != nil {
		return err
	}
	for v, ls := range el.Alive {
		want := -1
		if len(ls) == 1 {
			want = ls[0]
		}
		if el.Persistent[v] != want {
			return fmt.Errorf("variable %d: persistent label %d with %d labels alive", v, el.Persistent[v], len(ls))
		}
	}
	if len(el.Earlier) > maxFileStages {
		return fmt.Errorf("%d earlier stages, at most %d", len(el.Earlier), maxFileStages)
	}
	for i, st := range el.Earlier {
		if err := checkStageShape(st, n); err != nil {
			return fmt.Errorf("stage %d: %w", i+1, err)
		}
	}
	if el.Eliminated < 0 || el.Rounds < 0 || el.SolverIterations < 0 || el.Eliminated > math.MaxInt32 || el.Rounds > math.MaxInt32 || el.SolverIterations > math.MaxInt32 {
		return fmt.Errorf("counts %d, %d, %d out of range", el.Eliminated, el.Rounds, el.SolverIterations)
	}
	return checkCertificateShape(el.Certificate, n)
}

// checkStageShape checks an earlier stage of an elimination of n variables.
func checkStageShape(st Stage, n int) error {
	if len(st.Test) != n || len(st.Alive) != n {
		return fmt.Errorf("%d test labels and %d domains for %d variables", len(st.Test), len(st.Alive), n)
	}
	if err := checkLabels(st.Test); err != nil {
		return fmt.Errorf("test labeling: %w", err)
	}
	if err := checkAscending(st.Alive); err != nil {
		return err
	}
	return checkCertificateShape(st.Certificate, n)
}

// checkAscending checks that every list of alive labels is ascending labels.
func checkAscending(alive [][]int) error {
	for v, ls := range alive {
		for i, l := range ls {
			if l < 0 || l >= math.MaxInt32 || (i > 0 && l <= ls[i-1]) {
				return fmt.Errorf("variable %d: alive labels %v not ascending labels", v, ls)
			}
		}
	}
	return nil
}

// checkCertificateShape checks a certificate (nil: none) of set variables.
func checkCertificateShape(c *Certificate, set int) error {
	if c == nil {
		return nil
	}
	if len(c.Labeling) != set {
		return fmt.Errorf("the certificate labels %d variables, %d are persistent", len(c.Labeling), set)
	}
	if err := checkLabels(c.Labeling); err != nil {
		return fmt.Errorf("certificate: %w", err)
	}
	if f := c.Factor; f != nil && c.Dual == nil {
		if len(f.Labeling) != set {
			return fmt.Errorf("the dual certificate labels %d variables, %d are persistent", len(f.Labeling), set)
		}
		if len(f.Messages) > maxFileMessages {
			return fmt.Errorf("dual certificate too large (%d messages)", len(f.Messages))
		}
		return checkLabels(f.Labeling)
	}
	if d := c.Draft; d != nil && c.Dual == nil {
		if !slices.Equal(d.Labeling, c.Labeling) {
			return errors.New("the draft certificate is for another labeling")
		}
		if len(d.Messages) > maxFileMessages {
			return fmt.Errorf("draft certificate too large (%d messages)", len(d.Messages))
		}
		return nil
	}
	if c.Dual == nil {
		if !c.Exhaustive {
			return errors.New("empty certificate")
		}
		if c.Limit < 0 || c.Limit > MaxCheckEnumeration {
			return fmt.Errorf("certificate limit %d, at most %d labelings are checked", c.Limit, MaxCheckEnumeration)
		}
		return nil
	}
	d := c.Dual
	if len(d.Labeling) != set {
		return fmt.Errorf("the dual certificate labels %d variables, %d are persistent", len(d.Labeling), set)
	}
	if err := checkLabels(d.Labeling); err != nil {
		return fmt.Errorf("dual certificate: %w", err)
	}
	if len(d.LaterIsSecond) != len(d.Edges) || len(d.Share) != len(d.Edges) {
		return fmt.Errorf("dual certificate with %d edges, %d flags and %d shares", len(d.Edges), len(d.LaterIsSecond), len(d.Share))
	}
	if len(d.Edges) > maxFileVars || len(d.Messages) > maxFileMessages {
		return fmt.Errorf("dual certificate too large (%d edges, %d messages)", len(d.Edges), len(d.Messages))
	}
	for e, ab := range d.Edges {
		if ab[0] < 0 || ab[0] >= set || ab[1] < 0 || ab[1] >= set {
			return fmt.Errorf("dual certificate: edge %d on %v outside the %d certified variables", e, ab, set)
		}
	}
	return nil
}

func checkLabels(x []int) error {
	for i, l := range x {
		if l < 0 || l >= math.MaxInt32 {
			return fmt.Errorf("variable %d: label %d out of range", i, l)
		}
	}
	return nil
}

// ReadResult reads a result written by WriteResult. A file that is not a result file,
// of another version, truncated, damaged (gzip checksum) or malformed gives an error
// that says which, never a panic; memory stays proportional to the file's content.
// The result's shape is checked (the certificate covers the persistent variables, its
// edges lie among them); whether it proves anything is for Verify to decide.
func ReadResult(r io.Reader) (*Result, error) { return readResult(r, -1) }

// ReadResultFor is ReadResult of a result of model m: a file that holds more than
// such a result can (ResultBudget) is refused as it is read, in memory
// proportional to m.
func ReadResultFor(r io.Reader, m *model.Model) (*Result, error) {
	return readResult(r, ResultBudget(m))
}

// readResult is ReadResult within budget list entries (−1: no bound).
func readResult(r io.Reader, budget int64) (*Result, error) {
	br := bufio.NewReader(r)
	head := make([]byte, len(resultMagic)+2)
	if n, err := io.ReadFull(br, head); err != nil {
		if n >= len(resultMagic) && string(head[:len(resultMagic)]) == resultMagic {
			return nil, errors.New("persistency: result file truncated in its header")
		}
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("persistency: result file: %w", err)
		}
		return nil, errors.New("persistency: not a result file (too short for the header)")
	}
	if string(head[:len(resultMagic)]) != resultMagic {
		return nil, errors.New("persistency: not a result file (no \"partopt persistency result\" header)")
	}
	version := binary.BigEndian.Uint16(head[len(resultMagic):])
	if version < 1 || version > resultVersion {
		return nil, fmt.Errorf("persistency: result file version %d, this partopt reads versions 1 to %d", version, resultVersion)
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, resultFileError(err)
	}
	zr.Multistream(false)
	d := &resultDecoder{r: bufio.NewReaderSize(zr, 1<<16), version: version, left: budget}
	res, err := d.result()
	if err != nil {
		return nil, resultFileError(err)
	}
	// The body must end here; reading on to the end of the gzip member also verifies
	// its checksum. Nothing may follow the member.
	if _, err := d.r.ReadByte(); err != io.EOF {
		if err == nil {
			return nil, errors.New("persistency: result file damaged: data after the result")
		}
		return nil, resultFileError(err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err == nil {
			return nil, errors.New("persistency: result file damaged: data after the compressed body")
		}
		return nil, resultFileError(err)
	}
	if err := checkResultShape(res); err != nil {
		return nil, fmt.Errorf("persistency: result file damaged: %w", err)
	}
	return res, nil
}

// resultFileError says how reading the body failed.
func resultFileError(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("persistency: result file truncated")
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("persistency: result file damaged (%w)", err)
	}
	var beyond errBeyondBudget
	if errors.As(err, &beyond) {
		return beyond
	}
	var fe *fileFormatError
	if errors.As(err, &fe) {
		return fmt.Errorf("persistency: result file damaged: %s", fe.msg)
	}
	// flate.CorruptInputError and read errors of the underlying reader.
	return fmt.Errorf("persistency: result file damaged or unreadable: %w", err)
}

// fileFormatError is a value in the body that no valid file holds.
type fileFormatError struct{ msg string }

func (e *fileFormatError) Error() string { return e.msg }

func badFile(format string, args ...any) error {
	return &fileFormatError{fmt.Sprintf(format, args...)}
}

type resultEncoder struct {
	w     *bufio.Writer
	buf   [binary.MaxVarintLen64]byte
	chunk []byte // floats64's and floats32's: a proof's messages are millions of floats
}

func (e *resultEncoder) byte(b byte) { e.w.WriteByte(b) }

func (e *resultEncoder) uvarint(x uint64) { e.w.Write(binary.AppendUvarint(e.buf[:0], x)) }

func (e *resultEncoder) varint(x int64) { e.w.Write(binary.AppendVarint(e.buf[:0], x)) }

func (e *resultEncoder) float(f float64) {
	e.w.Write(binary.LittleEndian.AppendUint64(e.buf[:0], math.Float64bits(f)))
}

// floats64 writes xs as float, in chunks (a Write a number took most of a
// large proof's encoding). It, floats32 and ints are written out, not one
// generic loop: with the encoding a function value, 600,000 float32s took 2 ms,
// written out 0.36 (the Write a number: 3.3).
func (e *resultEncoder) floats64(xs []float64) {
	for len(xs) > 0 {
		n := min(len(xs), 4096)
		b := e.chunk[:0]
		for _, f := range xs[:n] {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
		}
		e.w.Write(b)
		e.chunk, xs = b, xs[n:]
	}
}

// floats32 writes xs as little-endian float32s, in chunks.
func (e *resultEncoder) floats32(xs []float32) {
	for len(xs) > 0 {
		n := min(len(xs), 8192)
		b := e.chunk[:0]
		for _, f := range xs[:n] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
		e.w.Write(b)
		e.chunk, xs = b, xs[n:]
	}
}

func (e *resultEncoder) ints(x []int) {
	e.uvarint(uint64(len(x)))
	for len(x) > 0 {
		n := min(len(x), 4096)
		b := e.chunk[:0]
		for _, v := range x[:n] {
			b = binary.AppendVarint(b, int64(v))
		}
		e.w.Write(b)
		e.chunk, x = b, x[n:]
	}
}

// resultDecoder reads the body. The first error sticks: later reads return zero values.
type resultDecoder struct {
	r       *bufio.Reader
	err     error
	version uint16
	// left is how many more list entries (ints and floats) the file may hold
	// (ResultBudget), −1 for no bound.
	left int64
}

// take charges n list entries of what to the budget, failing beyond it.
func (d *resultDecoder) take(n int, what string) {
	if d.err != nil || d.left < 0 {
		return
	}
	if int64(n) > d.left {
		d.fail(errBeyondBudget{what, n})
		return
	}
	d.left -= int64(n)
}

// errBeyondBudget is a file that holds more than a result of the model can: a
// flipped bit in a length does that too.
type errBeyondBudget struct {
	what string
	n    int
}

func (e errBeyondBudget) Error() string {
	return fmt.Sprintf("persistency: the result file holds more than a result of this model can (%s: %d entries): damaged, a result of another model, or a forged one", e.what, e.n)
}

// ResultBudget is the most list entries (ints and floats) that a result file of
// m can hold, whatever its content: its labelings, a certificate's messages over
// m's factors, and a label elimination with every earlier stage the format
// allows, each with its own certificate. ReadResultFor refuses a file beyond it,
// so that what a file makes the reader allocate is tied to the model's size
// (a gzip stream expands a thousandfold: without the bound a 130 KB file made
// verify allocate 3 GB).
func ResultBudget(m *model.Model) int64 {
	n := int64(m.NumVars())
	var labels, edges, messages int64
	for v := range m.NumVars() {
		labels += int64(m.NumLabels(v))
	}
	for f := range m.NumFactors() {
		vars := m.FactorVars(f)
		if len(vars) >= 2 {
			edges++
		}
		for _, v := range vars {
			messages += int64(m.NumLabels(int(v)))
		}
	}
	certificate := 2*n + 3*edges + messages // two labelings; edges' ends and shares; messages
	stage := n + labels + certificate       // test labeling, alive labels, certificate
	return 2*n + (maxFileStages+2)*stage + 1024
}

// certificate writes a certificate's kind byte and body.
func (e *resultEncoder) certificate(c *Certificate) {
	switch {
	case c == nil:
		e.byte(certNone)
	case c.Dual != nil:
		e.byte(certDual)
		e.ints(c.Labeling)
		d := c.Dual
		e.ints(d.Labeling)
		e.uvarint(uint64(len(d.Edges)))
		for _, ab := range d.Edges {
			e.uvarint(uint64(ab[0]))
			e.uvarint(uint64(ab[1]))
		}
		for _, b := range d.LaterIsSecond {
			if b {
				e.byte(1)
			} else {
				e.byte(0)
			}
		}
		e.floats64(d.Share)
		e.uvarint(uint64(len(d.Messages)))
		e.floats64(d.Messages)
	case c.Draft != nil:
		e.byte(certDraft)
		e.ints(c.Labeling)
		e.uvarint(uint64(len(c.Draft.Messages)))
		e.floats32(c.Draft.Messages)
	case c.Factor != nil:
		e.byte(certFactor)
		e.ints(c.Labeling)
		e.ints(c.Factor.Labeling)
		e.uvarint(uint64(len(c.Factor.Messages)))
		e.floats64(c.Factor.Messages)
	default:
		e.byte(certExhaustive)
		e.ints(c.Labeling)
		e.uvarint(uint64(c.Limit))
	}
}

func (d *resultDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *resultDecoder) byte() byte {
	if d.err != nil {
		return 0
	}
	b, err := d.r.ReadByte()
	d.fail(err)
	return b
}

func (d *resultDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, err := binary.ReadUvarint(d.r)
	d.fail(err)
	return x
}

func (d *resultDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, err := binary.ReadVarint(d.r)
	d.fail(err)
	return x
}

func (d *resultDecoder) float() float64 {
	if d.err != nil {
		return 0
	}
	var b [8]byte
	_, err := io.ReadFull(d.r, b[:])
	d.fail(err)
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

// count reads a count of at most limit elements of what.
func (d *resultDecoder) count(limit uint64, what string) int {
	n := d.uvarint()
	if d.err == nil && n > limit {
		d.fail(badFile("%d %s, at most %d possible", n, what, limit))
	}
	if d.err != nil {
		return 0 // a failed read's value is garbage
	}
	return int(n)
}

// intsIn reads an int list with values in [lo, hi), at most maxFileVars long.
func (d *resultDecoder) intsIn(lo, hi int64, what string) []int {
	n := d.count(maxFileVars, what)
	d.take(n, what)
	x := make([]int, 0, min(n, readChunk))
	for i := 0; i < n && d.err == nil; i++ {
		v := d.varint()
		if d.err == nil && (v < lo || v >= hi) {
			d.fail(badFile("%s: entry %d is %d, outside [%d,%d)", what, i, v, lo, hi))
		}
		x = append(x, int(v))
	}
	return x
}

// floats reads n float64 values, allocating as the data arrives.
func (d *resultDecoder) floats(n int) []float64 {
	return readFixed(d, n, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
}

// floats32 reads n float32 values (4 bytes each, little-endian IEEE 754).
func (d *resultDecoder) floats32(n int) []float32 {
	return readFixed(d, n, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
}

// readFixed reads n values of size (at most 8) bytes each, decoded by decode,
// allocating as the data arrives.
func readFixed[T any](d *resultDecoder, n, size int, decode func([]byte) T) []T {
	d.take(n, "values")
	x := make([]T, 0, min(n, readChunk))
	var b [8 * 512]byte
	for len(x) < n && d.err == nil {
		k := min(n-len(x), 512)
		if _, err := io.ReadFull(d.r, b[:size*k]); err != nil {
			d.fail(err)
			break
		}
		for i := range k {
			x = append(x, decode(b[size*i:]))
		}
	}
	return x
}

func (d *resultDecoder) result() (*Result, error) {
	res := &Result{}
	switch v := d.uvarint(); {
	case d.err != nil:
	case v > uint64(Original):
		d.fail(badFile("unknown boundary variant %d", v))
	default:
		res.Variant = Variant(v)
	}
	res.PruningIterations = d.iterations("pruning iterations")
	res.SolverIterations = d.iterations("solver iterations")
	for _, f := range []*float64{&res.Energy, &res.LowerBound, &res.CertificateGap, &res.Score, &res.Fraction, &res.Seconds, &res.SolverSeconds} {
		*f = d.float()
	}
	res.Persistent = d.intsIn(-1, math.MaxInt32, "persistent labels")
	res.Labeling = d.intsIn(0, math.MaxInt32, "labeling")
	if d.err != nil {
		return nil, d.err
	}
	if len(res.Labeling) == 0 {
		res.Labeling = nil
	}
	for v, l := range res.Persistent {
		if l >= 0 {
			res.Set = append(res.Set, v)
		}
	}
	res.Certificate = d.certificate()
	if d.version >= 2 {
		switch flag := d.byte(); {
		case d.err != nil:
		case flag == 1 && d.version == 2:
			d.fail(badFile("version 2 label elimination (its certificate is of an older verification problem): solve again"))
		case flag == 1:
			res.Elimination = d.elimination(len(res.Persistent))
		case flag != 0:
			d.fail(badFile("elimination flag %d, want 0 or 1", flag))
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return res, nil
}

// elimination reads the label elimination of a result of n variables.
func (d *resultDecoder) elimination(n int) *Elimination {
	el := &Elimination{Persistent: make([]int, 0, min(n, readChunk))}
	el.Test = d.intsIn(0, math.MaxInt32, "test labeling")
	if d.err == nil && len(el.Test) != n {
		d.fail(badFile("test labeling of %d variables, want %d", len(el.Test), n))
	}
	for v := 0; v < n && d.err == nil; v++ {
		ls := d.intsIn(0, math.MaxInt32, "alive labels")
		el.Alive = append(el.Alive, ls)
		p := -1
		if len(ls) == 1 {
			p = ls[0]
		}
		el.Persistent = append(el.Persistent, p)
	}
	el.Eliminated = d.iterations("eliminated labels")
	el.Rounds = d.iterations("rounds")
	el.SolverIterations = d.iterations("solver iterations")
	for _, f := range []*float64{&el.Energy, &el.LowerBound, &el.Seconds, &el.SolverSeconds} {
		*f = d.float()
	}
	el.Certificate = d.certificate()
	stages := d.count(maxFileStages, "earlier stages")
	for range stages {
		if d.err != nil {
			break
		}
		st := Stage{Test: d.intsIn(0, math.MaxInt32, "stage test labeling")}
		for v := 0; v < n && d.err == nil; v++ {
			st.Alive = append(st.Alive, d.intsIn(0, math.MaxInt32, "stage alive labels"))
		}
		st.Certificate = d.certificate()
		el.Earlier = append(el.Earlier, st)
	}
	return el
}

// certificate reads a certificate's kind byte and body (nil for none).
func (d *resultDecoder) certificate() *Certificate {
	switch kind := d.byte(); {
	case d.err != nil:
	case kind == certNone:
	case kind == certExhaustive:
		c := &Certificate{Exhaustive: true}
		c.Labeling = d.intsIn(0, math.MaxInt32, "certificate labels")
		c.Limit = d.count(MaxCheckEnumeration, "labelings (certificate limit)")
		return c
	case kind == certDual:
		c := &Certificate{}
		c.Labeling = d.intsIn(0, math.MaxInt32, "certificate labels")
		dual := &trws.Certificate{}
		dual.Labeling = d.intsIn(0, math.MaxInt32, "dual certificate labels")
		k := uint64(len(dual.Labeling))
		edges := d.count(maxFileVars, "edges")
		d.take(2*edges, "edges")
		dual.Edges = make([][2]int, 0, min(edges, readChunk))
		for i := 0; i < edges && d.err == nil; i++ {
			a, b := d.uvarint(), d.uvarint()
			if d.err == nil && (a >= k || b >= k) {
				d.fail(badFile("dual certificate: edge %d on (%d,%d) outside the %d certified variables", i, a, b, k))
			}
			dual.Edges = append(dual.Edges, [2]int{int(a), int(b)})
		}
		dual.LaterIsSecond = make([]bool, 0, min(edges, readChunk))
		for i := 0; i < edges && d.err == nil; i++ {
			b := d.byte()
			if d.err == nil && b > 1 {
				d.fail(badFile("dual certificate: edge %d: flag %d, want 0 or 1", i, b))
			}
			dual.LaterIsSecond = append(dual.LaterIsSecond, b == 1)
		}
		dual.Share = d.floats(edges)
		dual.Messages = d.floats(d.count(maxFileMessages, "messages"))
		c.Dual = dual
		return c
	case kind == certDraft && d.version >= 4:
		c := &Certificate{}
		c.Labeling = d.intsIn(0, math.MaxInt32, "certificate labels")
		c.Draft = &trws.Draft{Labeling: c.Labeling, Messages: d.floats32(d.count(maxFileMessages, "messages"))}
		return c
	case kind == certFactor:
		c := &Certificate{}
		c.Labeling = d.intsIn(0, math.MaxInt32, "certificate labels")
		f := &srmp.Certificate{}
		f.Labeling = d.intsIn(0, math.MaxInt32, "dual certificate labels")
		f.Messages = d.floats(d.count(maxFileMessages, "messages"))
		c.Factor = f
		return c
	default:
		d.fail(badFile("unknown certificate kind %d", kind))
	}
	return nil
}

func (d *resultDecoder) iterations(what string) int {
	v := d.varint()
	if d.err == nil && (v < 0 || v > math.MaxInt32) {
		d.fail(badFile("%s %d", what, v))
		return 0
	}
	return int(v)
}

// EncodeElimination is e alone in the result file format (a Result of e's
// persistent labels and e): how a window's elimination travels to the process
// that merges it, certificates included.
func EncodeElimination(e *Elimination) ([]byte, error) {
	return EncodeResult(&Result{Persistent: e.Persistent, Elimination: e})
}

// EncodeResult is res in the result file format, in memory, without its
// timings (Seconds, SolverSeconds, zero): how a window's proof travels to the
// process that checks it and is kept in a run's window certificates, the same
// bytes wherever and whenever it was computed (ReadResult reads it back).
func EncodeResult(res *Result) ([]byte, error) {
	r := *res
	r.Seconds, r.SolverSeconds = 0, 0
	if r.Elimination != nil {
		e := *r.Elimination
		e.Seconds, e.SolverSeconds = 0, 0
		r.Elimination = &e
	}
	var buf bytes.Buffer
	if err := WriteResult(&buf, &r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeElimination reads what EncodeElimination wrote, with ReadResult's checks
// (memory proportional to len(data)); its proof is for VerifyElimination to
// check.
func DecodeElimination(data []byte) (*Elimination, error) {
	res, err := ReadResult(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if res.Elimination == nil {
		return nil, errors.New("persistency: a result without a label elimination")
	}
	return res.Elimination, nil
}
