package opengm

import (
	"errors"
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
)

// The function type ids of OpenGM's FunctionRegistration (FUNCTION_TYPE_ID_OFFSET is
// 16000), and what each stores in its group function-id-<ID> ("indices" are uint64,
// "values" the model's value type), per function, one after the other:
const (
	Explicit     = 16000 // indices: order, K_1..K_order (just 0 for order 0); values: the table, first variable fastest
	Sparse       = 16001 // indices: order, K_1..K_order, n, n linear keys; values: the default, n values
	AbsDiff      = 16002 // indices: K_1, K_2; values: w (w·|a−b|)
	TruncAbsDiff = 16003 // indices: K_1, K_2; values: t, w (w·min(|a−b|, t))
	SqDiff       = 16004 // indices: K_1, K_2; values: w (w·(a−b)²)
	TruncSqDiff  = 16005 // indices: K_1, K_2; values: t, w (w·min((a−b)², t))
	Potts        = 16006 // indices: K_1, K_2; values: equal, not equal
	PottsN       = 16007 // indices: order, K_1..K_order; values: all equal, otherwise
	Constant     = 16008 // indices: order, K_1..K_order; values: the value
)

var typeNames = map[uint64]string{
	Explicit: "explicit", Sparse: "sparse", AbsDiff: "absolute difference", TruncAbsDiff: "truncated absolute difference",
	SqDiff: "squared difference", TruncSqDiff: "truncated squared difference", Potts: "Potts", PottsN: "Potts-N", Constant: "constant",
}

// ErrFormat marks a model that does not follow OpenGM's layout.
var ErrFormat = errors.New("opengm: malformed model")

// Source holds the datasets of an OpenGM model's group, by name relative to the group
// ("header", "numbers-of-states", "factors", "function-id-16000/indices", …). Each
// read refuses more than limit elements, so that a corrupt header cannot make Decode
// allocate beyond what the file holds.
type Source interface {
	Uint64s(name string, limit int) ([]uint64, error)
	Float64s(name string, limit int) ([]float64, error)
}

// maxCount bounds the variables, factors and functions a model may declare (they are
// int32 in package model).
const maxCount = math.MaxInt32

// MaxExpanded bounds the table entries Decode creates from parametric functions that
// package model has no parametric form for (Potts-N, sparse, constant-plus-Potts and
// negative-weight differences are expanded to tables): 2^24 entries, 128 MiB, in all.
// A few bytes of a file can declare such a function of any size; the tables the file
// stores explicitly are bounded by its data instead.
const MaxExpanded = 1 << 24

// Decode builds the model an OpenGM group describes. It checks everything it reads
// against the header and the label counts: a file that does not follow the layout
// gives an error wrapping ErrFormat, never a panic or an allocation beyond the
// datasets' sizes. Values are energies (OpenGM's Adder models; the file does not say
// which operator was used).
func Decode(src Source) (*model.Model, error) {
	header, err := src.Uint64s("header", 5+2*1024+1)
	if err != nil {
		return nil, fmt.Errorf("opengm: header: %w", err)
	}
	if len(header) < 5 {
		return nil, fmt.Errorf("%w: header has %d entries, want at least 5", ErrFormat, len(header))
	}
	if header[0] != 2 || header[1] != 0 {
		return nil, fmt.Errorf("%w: file format version %d.%d, want 2.0", ErrFormat, header[0], header[1])
	}
	nVars, nFactors, nTypes := header[2], header[3], header[4]
	if nVars > maxCount || nFactors > maxCount {
		return nil, fmt.Errorf("%w: %d variables and %d factors (at most %d each)", ErrFormat, nVars, nFactors, maxCount)
	}
	if want := 5 + 2*nTypes; nTypes > 1024 || (uint64(len(header)) != want && uint64(len(header)) != want+1) {
		return nil, fmt.Errorf("%w: header has %d entries for %d function types, want %d or %d", ErrFormat, len(header), nTypes, 5+2*nTypes, 6+2*nTypes)
	}
	states, err := src.Uint64s("numbers-of-states", int(nVars))
	if err != nil {
		return nil, fmt.Errorf("opengm: numbers-of-states: %w", err)
	}
	if uint64(len(states)) != nVars {
		return nil, fmt.Errorf("%w: numbers-of-states has %d entries, the header says %d variables", ErrFormat, len(states), nVars)
	}
	labels := make([]int, nVars)
	for v, k := range states {
		if k < 1 || k > maxCount {
			return nil, fmt.Errorf("%w: variable %d has %d labels", ErrFormat, v, k)
		}
		labels[v] = int(k)
	}
	b := model.NewBuilder(labels)
	// fns[t][i] is function i of type position t.
	fns := make([][]function, nTypes)
	budget := MaxExpanded
	for t := range fns {
		id, count := header[5+2*t], header[6+2*t]
		if count == 0 {
			continue
		}
		if count > maxCount {
			return nil, fmt.Errorf("%w: %d functions of type %d", ErrFormat, count, id)
		}
		if fns[t], err = readFunctions(src, b, id, int(count), &budget); err != nil {
			return nil, err
		}
	}
	if nFactors > 0 {
		if err := addFactors(src, b, fns, labels, int(nFactors)); err != nil {
			return nil, err
		}
	}
	m, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("opengm: %w", err)
	}
	return m, nil
}

// function is an OpenGM function as the model stores it: a function of the builder
// (id < 0: none, the function is constant) plus a constant moved into the offset.
type function struct {
	shape []int
	id    int
	c     float64
}

// readFunctions decodes the count functions of type id.
func readFunctions(src Source, b *model.Builder, id uint64, count int, budget *int) ([]function, error) {
	name, ok := typeNames[id]
	if !ok {
		return nil, fmt.Errorf("opengm: function type %d is not supported (known: 16000–16008)", id)
	}
	group := fmt.Sprintf("function-id-%d/", id)
	// The datasets may hold no more than count functions of this type need: the
	// indices at most 1 + 64 a function (but for sparse ones, whose keys only the
	// file bounds), the values exactly what the indices describe. A file that
	// declares more is refused before its data is decoded.
	limit := 0
	switch id {
	case Explicit, PottsN, Constant:
		limit = count * 65
	case AbsDiff, TruncAbsDiff, SqDiff, TruncSqDiff, Potts:
		limit = count * 2
	}
	idx, err := src.Uint64s(group+"indices", limit)
	if err != nil {
		return nil, fmt.Errorf("opengm: %s functions: %w", name, err)
	}
	need, err := valuesNeeded(id, idx, count)
	if err != nil {
		return nil, fmt.Errorf("opengm: %s functions: %w", name, err)
	}
	vals, err := src.Float64s(group+"values", need)
	if err != nil {
		return nil, fmt.Errorf("opengm: %s functions: %w", name, err)
	}
	r := &reader{idx: idx, vals: vals, what: name, budget: budget}
	out := make([]function, 0, min(count, len(idx)))
	for i := range count {
		f, err := r.function(b, id)
		if err != nil {
			return nil, fmt.Errorf("opengm: %s function %d: %w", name, i, err)
		}
		out = append(out, f)
	}
	if r.i != len(idx) || r.v != len(vals) {
		return nil, fmt.Errorf("%w: %s functions: %d of %d indices and %d of %d values used", ErrFormat, name, r.i, len(idx), r.v, len(vals))
	}
	return out, nil
}

// valuesNeeded walks the indices of count functions of type id and returns the
// number of values they describe (at least one a function), without reading
// any value: what bounds the values dataset.
func valuesNeeded(id uint64, idx []uint64, count int) (int, error) {
	r := &reader{idx: idx}
	need := 0
	for range count {
		order := uint64(2)
		switch id {
		case Explicit, Sparse, PottsN, Constant:
			var err error
			if order, err = r.index(); err != nil {
				return 0, err
			}
		}
		_, size, err := r.shape(order)
		if err != nil {
			return 0, err
		}
		n := 1
		switch id {
		case Explicit:
			n = size
		case Sparse:
			if order > 0 {
				k, err := r.index()
				if err != nil {
					return 0, err
				}
				if k > uint64(size) || k > uint64(len(idx)) {
					return 0, fmt.Errorf("%w: %d non-default entries in a table of %d", ErrFormat, k, size)
				}
				n, r.i = 1+int(k), r.i+int(k)
			}
		case TruncAbsDiff, TruncSqDiff, Potts, PottsN:
			n = 2
		}
		if need > math.MaxInt32-n {
			return 0, fmt.Errorf("opengm: the functions describe more than %d values", math.MaxInt32)
		}
		need += n
	}
	return need, nil
}

// reader walks the index and value sequences of one function type.
type reader struct {
	idx    []uint64
	vals   []float64
	i, v   int
	what   string
	budget *int // table entries still allowed to be expanded (MaxExpanded)
}

// expand reserves n entries of the expansion budget.
func (r *reader) expand(n int) error {
	if n > *r.budget {
		return fmt.Errorf("opengm: expanding the %s functions to tables needs more than %d entries (MaxExpanded)", r.what, MaxExpanded)
	}
	*r.budget -= n
	return nil
}

func (r *reader) index() (uint64, error) {
	if r.i >= len(r.idx) {
		return 0, fmt.Errorf("%w: indices end early", ErrFormat)
	}
	r.i++
	return r.idx[r.i-1], nil
}

func (r *reader) values(n int) ([]float64, error) {
	if n > len(r.vals)-r.v {
		return nil, fmt.Errorf("%w: values end early (%d more wanted, %d left)", ErrFormat, n, len(r.vals)-r.v)
	}
	r.v += n
	out := r.vals[r.v-n : r.v]
	for _, x := range out {
		if err := model.CheckValue(x); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
	}
	return out, nil
}

// shape reads n label counts and returns them with their product, refusing tables
// beyond model.MaxTableSize.
func (r *reader) shape(n uint64) ([]int, int, error) {
	if n > 64 {
		return nil, 0, fmt.Errorf("%w: order %d", ErrFormat, n)
	}
	shape := make([]int, n)
	size := 1
	for d := range shape {
		k, err := r.index()
		if err != nil {
			return nil, 0, err
		}
		if k < 1 || k > maxCount {
			return nil, 0, fmt.Errorf("%w: %d labels in dimension %d", ErrFormat, k, d)
		}
		if size > model.MaxTableSize/int(k) {
			return nil, 0, fmt.Errorf("opengm: a table of shape %v… has more than %d entries", shape[:d+1], model.MaxTableSize)
		}
		shape[d], size = int(k), size*int(k)
	}
	return shape, size, nil
}

// function decodes the next function of type id and adds it to b.
func (r *reader) function(b *model.Builder, id uint64) (function, error) {
	var order uint64 = 2
	switch id {
	case Explicit, Sparse, PottsN, Constant:
		var err error
		if order, err = r.index(); err != nil {
			return function{}, err
		}
	}
	shape, size, err := r.shape(order)
	if err != nil {
		return function{}, err
	}
	var table []float64 // last variable fastest, as package model stores it
	switch id {
	case Explicit:
		v, err := r.values(size)
		if err != nil {
			return function{}, err
		}
		table = firstToLastFastest(shape, v)
	case Sparse:
		if order == 0 { // a scalar: its value alone
			v, err := r.values(1)
			if err != nil {
				return function{}, err
			}
			return function{shape: shape, id: -1, c: v[0]}, nil
		}
		if table, err = r.sparse(shape, size); err != nil {
			return function{}, err
		}
	case Constant:
		v, err := r.values(1)
		if err != nil {
			return function{}, err
		}
		return function{shape: shape, id: -1, c: v[0]}, nil
	case PottsN:
		if order == 0 {
			return function{}, fmt.Errorf("%w: a Potts-N function of order 0", ErrFormat)
		}
		v, err := r.values(2)
		if err != nil {
			return function{}, err
		}
		if err := r.expand(size); err != nil {
			return function{}, err
		}
		table = make([]float64, size)
		for i := range table {
			table[i] = v[1]
		}
		// (l, l, …, l) lies at l·Σ_d Π_{e>d} K_e in last-fastest order.
		diag := 0
		for d, s := 0, 1; d < len(shape); d++ {
			diag += s
			s *= shape[len(shape)-1-d]
		}
		for l := 0; l < minOf(shape); l++ {
			table[l*diag] = v[0]
		}
	default:
		return r.pairwise(b, id, shape)
	}
	return addTable(b, shape, table)
}

// pairwise decodes the parameters of the difference and Potts functions: the kinds
// package model has in parametric form become those (no table); the others (negative
// weights, Potts with a non-zero equal value) become tables.
func (r *reader) pairwise(b *model.Builder, id uint64, shape []int) (function, error) {
	n := 2
	if id == AbsDiff || id == SqDiff {
		n = 1
	}
	p, err := r.values(n)
	if err != nil {
		return function{}, err
	}
	f := model.Function{Shape: shape, T: math.Inf(1)}
	switch id {
	case AbsDiff:
		f.Kind, f.W = model.TruncatedLinear, p[0]
	case SqDiff:
		f.Kind, f.W = model.TruncatedQuadratic, p[0]
	case TruncAbsDiff:
		f.Kind, f.T, f.W = model.TruncatedLinear, p[0], p[1]
	case TruncSqDiff:
		f.Kind, f.T, f.W = model.TruncatedQuadratic, p[0], p[1]
	case Potts:
		f.Kind, f.W = model.Potts, p[1]-p[0]
	}
	c := 0.0
	if id == Potts {
		c = p[0]
	}
	if f.W >= 0 && f.T > 0 && !math.IsInf(f.W, 0) && !math.IsNaN(f.W) && !math.IsInf(c, 0) {
		fid, err := b.AddFunction(f)
		if err != nil {
			return function{}, err
		}
		return function{shape: shape, id: fid, c: c}, nil
	}
	if shape[0] > model.MaxTableSize/shape[1] {
		return function{}, fmt.Errorf("opengm: a %d×%d table is too large", shape[0], shape[1])
	}
	if err := r.expand(shape[0] * shape[1]); err != nil {
		return function{}, err
	}
	table := make([]float64, shape[0]*shape[1])
	for a := range shape[0] {
		for bb := range shape[1] {
			d := float64(a - bb)
			var x float64
			switch id {
			case AbsDiff:
				x = p[0] * math.Abs(d)
			case SqDiff:
				x = p[0] * d * d
			case TruncAbsDiff:
				x = p[1] * math.Min(math.Abs(d), p[0])
			case TruncSqDiff:
				x = p[1] * math.Min(d*d, p[0])
			case Potts:
				x = p[1]
				if a == bb {
					x = p[0]
				}
			}
			if math.IsNaN(x) || math.IsInf(x, -1) {
				return function{}, fmt.Errorf("%w: parameters %v give the value %v", ErrFormat, p, x)
			}
			table[a*shape[1]+bb] = x
		}
	}
	return addTable(b, shape, table)
}

// sparse decodes a sparse function: n non-default entries by linear key (first
// variable fastest) over a default value.
func (r *reader) sparse(shape []int, size int) ([]float64, error) {
	n, err := r.index()
	if err != nil {
		return nil, err
	}
	if n > uint64(size) {
		return nil, fmt.Errorf("%w: %d non-default entries in a table of %d", ErrFormat, n, size)
	}
	v, err := r.values(1 + int(n))
	if err != nil {
		return nil, err
	}
	if err := r.expand(size); err != nil {
		return nil, err
	}
	first := make([]float64, size)
	for i := range first {
		first[i] = v[0]
	}
	for j := range int(n) {
		key, err := r.index()
		if err != nil {
			return nil, err
		}
		if key >= uint64(size) {
			return nil, fmt.Errorf("%w: sparse key %d outside a table of %d", ErrFormat, key, size)
		}
		first[key] = v[1+j]
	}
	return firstToLastFastest(shape, first), nil
}

// addTable adds an explicit table to b as AddTable would store it: a constant table
// is only a constant, a Potts or truncated pairwise table becomes parametric.
func addTable(b *model.Builder, shape []int, table []float64) (function, error) {
	if len(table) == 0 {
		return function{}, fmt.Errorf("%w: empty table", ErrFormat)
	}
	if c, ok := model.ConstantTable(table); ok {
		return function{shape: shape, id: -1, c: c}, nil
	}
	f := model.Function{Kind: model.Explicit, Shape: shape, Table: table}
	c := 0.0
	if len(shape) == 2 {
		if p, pc, ok := model.DetectPairwise(shape[0], shape[1], table); ok {
			f, c = p, pc
		}
	}
	id, err := b.AddFunction(f)
	if err != nil {
		return function{}, err
	}
	return function{shape: shape, id: id, c: c}, nil
}

// addFactors reads the factors: per factor the function's index, the position of its
// type in the header, the order and the variables.
func addFactors(src Source, b *model.Builder, fns [][]function, labels []int, n int) error {
	maxOrder := 0
	for _, fs := range fns {
		for _, f := range fs {
			maxOrder = max(maxOrder, len(f.shape))
		}
	}
	// Each factor takes its three header entries and its variables.
	data, err := src.Uint64s("factors", n*(3+maxOrder))
	if err != nil {
		return fmt.Errorf("opengm: factors: %w", err)
	}
	if len(data)/3 < n {
		return fmt.Errorf("%w: %d entries of factors cannot hold %d factors", ErrFormat, len(data), n)
	}
	b.Grow(n, len(data)-3*n) // the scopes take what the factors' headers leave
	args := make([]int, 0, 8)
	at := 0
	for f := range n {
		if len(data)-at < 3 {
			return fmt.Errorf("%w: factors end at factor %d of %d", ErrFormat, f, n)
		}
		fi, t, order := data[at], data[at+1], data[at+2]
		at += 3
		if t >= uint64(len(fns)) || fi >= uint64(len(fns[t])) {
			return fmt.Errorf("%w: factor %d uses function %d of type position %d, which the file does not have", ErrFormat, f, fi, t)
		}
		fn := fns[t][fi]
		if order != uint64(len(fn.shape)) {
			return fmt.Errorf("%w: factor %d has order %d, its function %d", ErrFormat, f, order, len(fn.shape))
		}
		if uint64(len(data)-at) < order {
			return fmt.Errorf("%w: factors end at factor %d of %d", ErrFormat, f, n)
		}
		args = args[:0]
		for d, x := range data[at : at+int(order)] {
			if x >= uint64(len(labels)) || labels[x] != fn.shape[d] {
				return fmt.Errorf("%w: factor %d: variable %d does not match its function's dimension %d (%d labels)", ErrFormat, f, x, d, fn.shape[d])
			}
			args = append(args, int(x))
		}
		at += int(order)
		if fn.c != 0 {
			if err := b.AddConstant(fn.c); err != nil {
				return err
			}
		}
		if fn.id >= 0 {
			if err := b.AddFactor(fn.id, args...); err != nil {
				return fmt.Errorf("opengm: factor %d: %w", f, err)
			}
		}
	}
	if at != len(data) {
		return fmt.Errorf("%w: %d entries of factors left over after %d factors", ErrFormat, len(data)-at, n)
	}
	return nil
}

// firstToLastFastest reorders a table stored first variable fastest (OpenGM, marray's
// default) into last variable fastest (package model, UAI).
func firstToLastFastest(shape []int, t []float64) []float64 {
	if len(shape) <= 1 {
		return t // one order; the builder copies what it keeps
	}
	out := make([]float64, len(t))
	k := len(shape)
	idx := make([]int, k)
	for i := range t {
		// i is the first-fastest position of idx; compute its last-fastest position.
		j := 0
		for d := 0; d < k; d++ {
			j = j*shape[d] + idx[d]
		}
		out[j] = t[i]
		for d := 0; d < k; d++ {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

func minOf(s []int) int {
	m := s[0]
	for _, x := range s {
		m = min(m, x)
	}
	return m
}
