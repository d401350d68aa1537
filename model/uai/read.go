package uai

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/partopt/partopt/model"
	"github.com/ulikunitz/xz"
)

// Format is a model file format.
type Format int

const (
	// Unknown is returned by FormatOf for names it does not recognise.
	Unknown Format = iota
	// UAI is the probability-domain MARKOV / BAYES format (.uai).
	UAI
	// LG is the log-domain variant (.LG).
	LG
	// WCSP is toulbar2's weighted CSP format (.wcsp).
	WCSP
)

func (f Format) String() string {
	return [...]string{"unknown", "uai", "LG", "wcsp"}[f]
}

// maxCount bounds every declared count (variables, factors, labels, entries).
const maxCount = math.MaxInt32

// FormatOf returns the format of a file name and whether it is compressed (.gz, .xz).
func FormatOf(name string) (Format, string) {
	base, comp := name, ""
	for _, c := range []string{".gz", ".xz"} {
		if strings.HasSuffix(strings.ToLower(base), c) {
			base, comp = base[:len(base)-len(c)], c
			break
		}
	}
	switch strings.ToLower(filepath.Ext(base)) {
	case ".uai":
		return UAI, comp
	case ".lg":
		return LG, comp
	case ".wcsp":
		return WCSP, comp
	}
	return Unknown, comp
}

// Open opens a file for reading, decompressing .gz and .xz.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	_, comp := FormatOf(path)
	var r io.Reader = bufio.NewReaderSize(f, 1<<16)
	if comp == "" {
		return readCloser{r, f}, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch comp {
	case ".gz":
		zr, err := gzip.NewReader(r)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	case ".xz":
		// Its declarations first: the decoder allocates the dictionary a block
		// header asks for.
		if err := checkXZ(path, f, st.Size()); err != nil {
			f.Close()
			return nil, err
		}
		zr, err := xz.NewReader(r)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	budget := expansionBudget(st.Size())
	return readCloser{&budgetReader{r: r, left: budget, name: path, size: st.Size(), budget: budget}, f}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// ReadFile reads a model, choosing the format by the file name.
func ReadFile(path string) (*model.Model, error) {
	format, _ := FormatOf(path)
	if format == Unknown {
		return nil, fmt.Errorf("%s: unknown model format (want .uai, .LG or .wcsp, optionally .gz or .xz)", path)
	}
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	hint := 1 << 16
	if st, err := os.Stat(path); err == nil && !strings.HasSuffix(path, "z") {
		hint = max(hint, int(min(st.Size(), maxCount)))
	}
	return read(r, path, format, hint)
}

// Read reads a model in the given format; name is used in error messages.
func Read(r io.Reader, name string, format Format) (*model.Model, error) {
	return read(r, name, format, 1<<16)
}

// read reads a model; sizeHint bounds preallocation (the input length when known).
func read(r io.Reader, name string, format Format, sizeHint int) (*model.Model, error) {
	s := newScanner(r, name, sizeHint)
	switch format {
	case UAI, LG:
		return readUAI(s, format == LG)
	case WCSP:
		return readWCSP(s)
	}
	return nil, fmt.Errorf("%s: cannot read format %v", name, format)
}

func readUAI(s *scanner, logDomain bool) (*model.Model, error) {
	kind, err := s.word("MARKOV or BAYES")
	if err != nil {
		return nil, err
	}
	if k := strings.ToUpper(kind); k != "MARKOV" && k != "BAYES" {
		return nil, s.errorf("expected MARKOV or BAYES, found %q", clip([]byte(kind)))
	}
	labels, err := readLabels(s)
	if err != nil {
		return nil, err
	}
	b := model.NewBuilder(labels)
	nf, err := s.int("the number of factors", maxCount)
	if err != nil {
		return nil, err
	}
	// Scopes come first, tables after; keep them flat, growing with the file (a factor
	// takes at least 4 bytes of it, scope and table).
	order := make([]int32, 0, min(nf, s.sizeHint/4))
	vars := make([]int32, 0, min(2*nf, s.sizeHint/4))
	for f := 0; f < nf; f++ {
		k, ok := s.readInt(len(labels))
		if !ok {
			return nil, s.fail(fmt.Sprintf("the number of variables of factor %d (at most %d)", f, len(labels)))
		}
		order = append(order, int32(k))
		for i := 0; i < k; i++ {
			v, ok := s.readInt(len(labels) - 1)
			if !ok {
				return nil, s.fail(fmt.Sprintf("a variable of factor %d (0..%d)", f, len(labels)-1))
			}
			vars = append(vars, int32(v))
		}
	}
	b.Grow(len(order), len(vars))
	if err := addTables(s, b, labels, order, vars, logDomain); err != nil {
		return nil, err
	}
	return b.Build()
}

// tableChunk is the parsed tables of factors first, first+1, …: factor
// first+i's entries are entries[ends[i−1]:ends[i]], its last token on line
// lines[i]; err ended the tables there (a malformed entry, trailing data).
type tableChunk struct {
	first   int
	ends    []int
	lines   []int
	entries []float64
	err     error
}

// chunkEntries is about how many entries a chunk holds: large enough that
// handing one over costs nothing, small enough to stay in cache.
const chunkEntries = 1 << 14

// addTables reads the function tables of the factors whose scopes are order
// and vars and adds them to b. Parsing the text and building the functions
// (interning, recognising Potts and truncated forms) cost about the same, so
// one goroutine parses while this one builds (seg2.LG's 3·10⁶ tables: 1.75 →
// ~1 s on two cores). Everything happens in the file's order, errors too.
func addTables(s *scanner, b *model.Builder, labels []int, order, vars []int32, logDomain bool) error {
	full, free := make(chan *tableChunk, 2), make(chan *tableChunk, 3)
	for range cap(free) {
		free <- &tableChunk{entries: make([]float64, 0, chunkEntries)}
	}
	quit, parsed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(parsed)
		parseTables(s, labels, order, vars, logDomain, full, free, quit)
	}()
	defer func() { close(quit); <-parsed }() // the scanner is the caller's again
	scope := make([]int, 0, 8)
	pos := 0
	for c := range full {
		from := 0
		for i, to := range c.ends {
			f := c.first + i
			scope = scope[:0]
			for _, v := range vars[pos : pos+int(order[f])] {
				scope = append(scope, int(v))
			}
			pos += int(order[f])
			if err := b.AddTable(scope, c.entries[from:to]); err != nil {
				return fmt.Errorf("%s: line %d: factor %d: %v", s.name, c.lines[i], f, err)
			}
			from = to
		}
		if c.err != nil {
			return c.err
		}
		if cap(c.entries) > 4*chunkEntries {
			c.entries = make([]float64, 0, chunkEntries) // a huge table's buffer is not kept
		}
		free <- c
	}
	return nil
}

// parseTables parses the tables for addTables into chunks taken from free and
// sent on full, which it closes after the last; it stops early when quit is
// closed.
func parseTables(s *scanner, labels []int, order, vars []int32, logDomain bool, full, free chan *tableChunk, quit chan struct{}) {
	defer close(full)
	var c *tableChunk
	send := func() bool {
		select {
		case full <- c:
			c = nil
			return true
		case <-quit:
			return false
		}
	}
	var energies energyCache
	pos := 0
	for f := 0; ; f++ {
		if c == nil {
			select {
			case c = <-free:
			case <-quit:
				return
			}
			c.first, c.ends, c.lines, c.entries, c.err = f, c.ends[:0], c.lines[:0], c.entries[:0], nil
		}
		if f == len(order) {
			c.err = s.expectEOF()
			send()
			return
		}
		if c.err = parseTable(s, labels, vars[pos:pos+int(order[f])], f, logDomain, &energies, c); c.err != nil {
			send()
			return
		}
		pos += int(order[f])
		c.ends, c.lines = append(c.ends, len(c.entries)), append(c.lines, s.line)
		if len(c.entries) >= chunkEntries && !send() {
			return
		}
	}
}

// parseTable appends factor f's table, over the variables scope, to c.
func parseTable(s *scanner, labels []int, scope []int32, f int, logDomain bool, energies *energyCache, c *tableChunk) error {
	size := 1
	for _, v := range scope {
		k := labels[v]
		if size > model.MaxTableSize/k {
			return s.errorf("factor %d: table over %v would have more than %d entries", f, scope, model.MaxTableSize)
		}
		size *= k
	}
	cnt, ok := s.readInt(maxCount)
	if !ok {
		return s.fail(fmt.Sprintf("the number of table entries of factor %d", f))
	}
	if cnt != size {
		return s.errorf("factor %d has %d table entries, its scope %v needs %d", f, cnt, scope, size)
	}
	for i := 0; i < cnt; i++ {
		tok, err := s.next()
		if err != nil {
			s.setProblem(err)
			return s.fail(fmt.Sprintf("entry %d of the table of factor %d (a number)", i, f))
		}
		e, ok := energies.get(tok)
		if !ok {
			v, ok := s.parseFloat(tok)
			if !ok {
				return s.fail(fmt.Sprintf("entry %d of the table of factor %d (a number)", i, f))
			}
			if e, err = toEnergy(v, logDomain); err != nil {
				return s.errorf("factor %d, entry %d: %v", f, i, err)
			}
			energies.put(tok, e)
		}
		c.entries = append(c.entries, e)
	}
	return nil
}

// energyCache remembers the energies of recent table entries by their text: a
// model's tables repeat few values (a stereo model's millions of pairwise
// entries take a handful), and parsing a number and taking its logarithm cost
// most of reading one. Direct-mapped, by a hash of the token.
type energyCache struct {
	tok    [512]string
	energy [512]float64
}

// maxCachedToken bounds the tokens kept (longer ones are rarely repeated).
const maxCachedToken = 24

func energySlot(tok []byte) int {
	h := uint32(2166136261) // FNV-1a
	for _, c := range tok {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h^h>>16) & 511
}

// get returns the energy of tok if it is cached.
func (c *energyCache) get(tok []byte) (float64, bool) {
	if len(tok) > maxCachedToken {
		return 0, false
	}
	i := energySlot(tok)
	return c.energy[i], c.tok[i] == string(tok) && c.tok[i] != ""
}

// put caches the energy of tok.
func (c *energyCache) put(tok []byte, e float64) {
	if len(tok) <= maxCachedToken {
		i := energySlot(tok)
		c.tok[i], c.energy[i] = string(tok), e
	}
}

// toEnergy converts a probability (or its logarithm) to an energy.
func toEnergy(v float64, logDomain bool) (float64, error) {
	if math.IsNaN(v) {
		return 0, fmt.Errorf("NaN is not allowed")
	}
	if logDomain {
		if math.IsInf(v, 1) {
			return 0, fmt.Errorf("log value +Inf (energy −Inf) is not allowed")
		}
		return -v, nil
	}
	if v < 0 {
		return 0, fmt.Errorf("negative probability %v", v)
	}
	if math.IsInf(v, 1) {
		return 0, fmt.Errorf("probability +Inf (energy −Inf) is not allowed")
	}
	if v == 0 {
		return math.Inf(1), nil
	}
	return -math.Log(v), nil
}

func readLabels(s *scanner) ([]int, error) {
	n, err := s.int("the number of variables", maxCount)
	if err != nil {
		return nil, err
	}
	labels := make([]int, 0, min(n, s.sizeHint/2))
	for v := 0; v < n; v++ {
		k, ok := s.readInt(maxCount)
		if !ok {
			return nil, s.fail(fmt.Sprintf("the label count of variable %d", v))
		}
		if k < 1 {
			return nil, s.errorf("variable %d has %d labels, want ≥ 1", v, k)
		}
		labels = append(labels, k)
	}
	return labels, nil
}
