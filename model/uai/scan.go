package uai

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"
)

// scanner splits a text stream into whitespace-separated tokens without allocating per
// token, and remembers the line of the last token for error messages.
type scanner struct {
	r          io.Reader
	name       string
	buf        []byte
	start, end int
	line       int // line of the last token returned
	cur        int // line of the read position
	sizeHint   int // input bytes when known, else a small default: bounds preallocation
	eof        bool
	err        error // read error other than EOF

	// the last failure of readInt / readFloat
	prob  problem
	tok   string
	limit int
	ioErr error
}

const maxToken = 1 << 12

// newScanner reads r; sizeHint (the input length when known) sizes the buffer.
func newScanner(r io.Reader, name string, sizeHint int) *scanner {
	n := min(max(sizeHint+1, 4*maxToken), 1<<20)
	return &scanner{r: r, name: name, buf: make([]byte, n), line: 1, cur: 1, sizeHint: sizeHint}
}

// errorf formats an error that names the file and the line of the last token.
func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s", s.name, s.line, fmt.Sprintf(format, args...))
}

// fill reads more input, keeping buf[start:end]. It returns false at end of input.
func (s *scanner) fill() bool {
	if s.eof {
		return false
	}
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	for s.end < len(s.buf) {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.err = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	return true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

// next returns the next token, valid until the following call, or io.EOF.
func (s *scanner) next() ([]byte, error) {
	for {
		for s.start < s.end && isSpace(s.buf[s.start]) {
			if s.buf[s.start] == '\n' {
				s.cur++
			}
			s.start++
		}
		if s.start < s.end {
			break
		}
		if !s.fill() {
			if s.err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, s.err)
			}
			return nil, io.EOF
		}
	}
	s.line = s.cur
	i := s.start
	for {
		for i < s.end && !isSpace(s.buf[i]) {
			i++
		}
		if i < s.end || s.eof {
			break
		}
		if i-s.start >= maxToken {
			return nil, s.errorf("token longer than %d bytes", maxToken)
		}
		off := i - s.start
		if !s.fill() && s.err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, s.err)
		}
		i = s.start + off
	}
	tok := s.buf[s.start:i]
	s.start = i
	return tok, nil
}

// want returns the next token, or an error naming what was expected at end of input.
func (s *scanner) want(what string) ([]byte, error) {
	tok, err := s.next()
	if err == io.EOF {
		return nil, s.errorf("unexpected end of file, expected %s", what)
	}
	return tok, err
}

// The hot paths read numbers with readInt / readFloat, which report failure as a flag
// so that no description is formatted per token; fail then builds the error.
type problem uint8

const (
	okay problem = iota
	atEOF
	readErr
	notNumber
	overLimit
)

// readInt reads a non-negative integer no larger than limit.
func (s *scanner) readInt(limit int) (int, bool) {
	tok, err := s.next()
	if err != nil {
		s.setProblem(err)
		return 0, false
	}
	v, ok := parseInt(tok)
	if !ok {
		s.prob, s.tok, s.limit = notNumber, clip(tok), limit
		return 0, false
	}
	if v > limit {
		s.prob, s.tok, s.limit = overLimit, clip(tok), limit
		return 0, false
	}
	return v, true
}

// readFloat reads a floating-point number (inf and nan spellings included; callers check).
func (s *scanner) readFloat() (float64, bool) {
	tok, err := s.next()
	if err != nil {
		s.setProblem(err)
		return 0, false
	}
	return s.parseFloat(tok)
}

// parseFloat parses a token as readFloat does.
func (s *scanner) parseFloat(tok []byte) (float64, bool) {
	// The string does not outlive this call unless ParseFloat fails, handled below.
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(tok), len(tok)), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return v, true // ±Inf or 0 after over/underflow, as a decimal parser would
		}
		s.prob, s.tok = notNumber, clip(tok)
		return 0, false
	}
	return v, true
}

func (s *scanner) setProblem(err error) {
	if err == io.EOF {
		s.prob = atEOF
	} else {
		s.prob, s.ioErr = readErr, err
	}
}

// fail describes the last failed readInt or readFloat; what names the expected value.
func (s *scanner) fail(what string) error {
	switch s.prob {
	case atEOF:
		return s.errorf("unexpected end of file, expected %s", what)
	case readErr:
		return s.ioErr
	case overLimit:
		return s.errorf("%s is %s, more than the limit %d", what, s.tok, s.limit)
	}
	return s.errorf("expected %s, found %q", what, s.tok)
}

// int reads a non-negative integer no larger than limit, outside hot loops.
func (s *scanner) int(what string, limit int) (int, error) {
	v, ok := s.readInt(limit)
	if !ok {
		return 0, s.fail(what + " (a non-negative integer)")
	}
	return v, nil
}

// word reads a token as a string.
func (s *scanner) word(what string) (string, error) {
	tok, err := s.want(what)
	if err != nil {
		return "", err
	}
	return string(tok), nil
}

// end reports an error when tokens remain.
func (s *scanner) expectEOF() error {
	tok, err := s.next()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	return s.errorf("unexpected %q after the end of the data", clip(tok))
}

func parseInt(tok []byte) (int, bool) {
	if len(tok) == 0 || len(tok) > 18 {
		return 0, false
	}
	v := 0
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func clip(tok []byte) string {
	if len(tok) > 40 {
		return string(tok[:40]) + "…"
	}
	return string(tok)
}
