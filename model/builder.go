package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Builder assembles a Model. It copies what it is given, so callers may reuse their
// slices. Identical functions are shared: a function equal to one of the recently added
// ones (a fixed-size cache keyed by content hash) reuses it, so a uniform or quantised
// Potts grid keeps a handful of functions while a model of all-distinct tables pays no
// growing map. A Builder must not be used after Build.
type Builder struct {
	err    error
	labels []int32
	funcs  funcList
	intern []internSlot // len is a power of two
	offset float64

	facFunc  []int32
	facStart []int
	facVars  []int32

	tables []float64 // current chunk that small tables are carved from
	shapes []int
	recent [4][]int // the last shape stored of each order < 4, reused when equal
}

const arenaChunk = 1 << 16

// internSize is the most slots of the function cache (512 KiB, fits a cache level);
// small models get fewer (see addFunction), so that building one stays cheap.
const internSize = 1 << 15

type internSlot struct {
	hash uint64
	id   int32 // function index + 1; 0 is an empty slot
}

// NewBuilder starts a model whose variable v has labels[v] labels (each ≥ 1). An invalid
// label count is reported by every later call and by Build.
func NewBuilder(labels []int) *Builder {
	b := &Builder{labels: make([]int32, len(labels)), facStart: []int{0}}
	for v, k := range labels {
		if k < 1 || k > math.MaxInt32 {
			b.err = fmt.Errorf("model: variable %d has %d labels, want 1..%d", v, k, math.MaxInt32)
			break
		}
		b.labels[v] = int32(k)
	}
	return b
}

// newChildBuilder starts a model that shares the functions of a parent. The parent's
// slice is clipped so that appends never write into it.
func newChildBuilder(labels []int32, funcs *funcList) *Builder {
	return &Builder{labels: labels, funcs: funcs.share(), facStart: []int{0}}
}

// Grow reserves room for at least factors more factors with vars variables in total,
// for callers that know the size (readers, after the file has shown it).
func (b *Builder) Grow(factors, vars int) {
	b.facFunc = slices.Grow(b.facFunc, factors)
	b.facStart = slices.Grow(b.facStart, factors)
	b.facVars = slices.Grow(b.facVars, vars)
}

// NumVars is the number of variables of the model being built.
func (b *Builder) NumVars() int { return len(b.labels) }

// AddConstant adds c to the energy of every labeling.
func (b *Builder) AddConstant(c float64) error {
	if b.err != nil {
		return b.err
	}
	if err := CheckValue(c); err != nil {
		return fmt.Errorf("model: constant: %w", err)
	}
	b.offset += c
	return nil
}

// AddFunction adds f (copied) and returns its index for AddFactor. An identical
// function added before is reused.
func (b *Builder) AddFunction(f Function) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if err := f.validate(); err != nil {
		return 0, fmt.Errorf("model: function: %w", err)
	}
	return b.addFunction(f, true), nil
}

// AddOwnedFunction adds f without copying its slices (they are the model's from
// now on: the caller must not change them) and without looking for an identical
// function: for callers whose functions are all distinct, like a verification
// problem's tables, where both would be wasted work.
func (b *Builder) AddOwnedFunction(f Function) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if err := f.validate(); err != nil {
		return 0, fmt.Errorf("model: function: %w", err)
	}
	if f.Kind == Potts {
		f.T = 0
	}
	if f.Kind != Explicit {
		f.Table = nil
	}
	return b.funcs.add(f), nil
}

func (b *Builder) addFunction(f Function, copyData bool) int {
	if f.Kind == Potts {
		f.T = 0
	}
	if b.intern == nil {
		n := 256
		for n < internSize && n < 4*len(b.labels) {
			n *= 2
		}
		b.intern = make([]internSlot, n)
	}
	h := hashFunction(&f)
	slot := &b.intern[h&uint64(len(b.intern)-1)]
	if slot.id > 0 && slot.hash == h && equalFunctions(b.funcs.at(int(slot.id-1)), &f) {
		return int(slot.id - 1)
	}
	if copyData {
		f.Shape = b.allocShape(f.Shape)
		if f.Kind == Explicit {
			f.Table = b.allocTable(f.Table)
		}
	}
	if f.Kind != Explicit {
		f.Table = nil
	}
	id := b.funcs.add(f)
	*slot = internSlot{hash: h, id: int32(id + 1)}
	return id
}

// AddFactor applies function fn to vars. A function of order 0 adds its value to the offset.
func (b *Builder) AddFactor(fn int, vars ...int) error {
	if b.err != nil {
		return b.err
	}
	if fn < 0 || fn >= b.funcs.len() {
		return fmt.Errorf("model: factor: function %d out of range [0,%d)", fn, b.funcs.len())
	}
	f := b.funcs.at(fn)
	if err := checkScope(b.labels, f, vars); err != nil {
		return fmt.Errorf("model: factor %d: %w", len(b.facFunc), err)
	}
	if len(vars) == 0 {
		b.offset += f.Table[0]
		return nil
	}
	b.appendFactor(int32(fn), vars)
	return nil
}

func (b *Builder) appendFactor(fn int32, vars []int) {
	b.facFunc = append(b.facFunc, fn)
	for _, v := range vars {
		b.facVars = append(b.facVars, int32(v))
	}
	b.facStart = append(b.facStart, len(b.facVars))
}

// AddTable adds a factor on vars with the explicit table t (last variable fastest,
// len(t) the product of the variables' label counts). Constant tables become offset;
// pairwise tables of Potts or truncated form become parametric functions (see
// DetectPairwise); everything else is stored as given.
func (b *Builder) AddTable(vars []int, t []float64) error {
	if b.err != nil {
		return b.err
	}
	shape := make([]int, len(vars))
	for d, v := range vars {
		if v < 0 || v >= len(b.labels) {
			return fmt.Errorf("model: factor %d: variable %d out of range [0,%d)", len(b.facFunc), v, len(b.labels))
		}
		shape[d] = int(b.labels[v])
	}
	f := Function{Kind: Explicit, Shape: shape, Table: t}
	if err := f.validate(); err != nil {
		return fmt.Errorf("model: factor %d: %w", len(b.facFunc), err)
	}
	if err := checkScope(b.labels, &f, vars); err != nil {
		return fmt.Errorf("model: factor %d: %w", len(b.facFunc), err)
	}
	if c, ok := ConstantTable(t); ok {
		b.offset += c
		return nil
	}
	if len(vars) == 2 {
		if p, c, ok := DetectPairwise(shape[0], shape[1], t); ok {
			b.offset += c
			f = p
		}
	}
	b.appendFactor(int32(b.addFunction(f, true)), vars)
	return nil
}

// ConstantTable reports whether every entry of t (not empty) equals the first
// (exactly), and that value: such a table is a constant, not a factor.
func ConstantTable(t []float64) (float64, bool) {
	for _, v := range t[1:] {
		if v != t[0] {
			return 0, false
		}
	}
	return t[0], true
}

// Build returns the model. The Builder must not be used afterwards.
func (b *Builder) Build() (*Model, error) {
	if b.err != nil {
		return nil, b.err
	}
	if err := CheckValue(b.offset); err != nil {
		return nil, fmt.Errorf("model: the constant terms overflow: %w", err)
	}
	m := &Model{
		labels: b.labels, funcs: b.funcs, offset: b.offset,
		facFunc: b.facFunc, facStart: b.facStart, facVars: b.facVars,
	}
	m.buildAdjacency()
	*b = Builder{err: errors.New("model: Builder used after Build")}
	return m, nil
}

func (b *Builder) allocShape(s []int) []int {
	if len(s) < len(b.recent) && slices.Equal(b.recent[len(s)], s) && b.recent[len(s)] != nil {
		return b.recent[len(s)]
	}
	if len(s) > cap(b.shapes)-len(b.shapes) {
		b.shapes = make([]int, 0, max(min(arenaChunk, 2*cap(b.shapes)+64), len(s)))
	}
	n := len(b.shapes)
	b.shapes = append(b.shapes, s...)
	shape := b.shapes[n : n+len(s) : n+len(s)]
	if len(s) < len(b.recent) {
		b.recent[len(s)] = shape
	}
	return shape
}

func (b *Builder) allocTable(t []float64) []float64 {
	if len(t) > arenaChunk/4 {
		return append([]float64(nil), t...)
	}
	if len(t) > cap(b.tables)-len(b.tables) {
		b.tables = make([]float64, 0, max(min(arenaChunk, 2*cap(b.tables)+256), len(t)))
	}
	n := len(b.tables)
	b.tables = append(b.tables, t...)
	return b.tables[n : n+len(t) : n+len(t)]
}

// hashFunction hashes every field word by word with a full 64-bit mixer (float bits
// differ mostly in their high bits, which a multiplicative hash never moves down).
func hashFunction(f *Function) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	mix := func(x uint64) {
		h ^= x
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		h ^= h >> 33
	}
	mix(uint64(f.Kind))
	for _, k := range f.Shape {
		mix(uint64(k))
	}
	if f.Kind == Explicit {
		for _, v := range f.Table {
			mix(math.Float64bits(v))
		}
	} else {
		mix(math.Float64bits(f.W))
		mix(math.Float64bits(f.T))
		mix(uint64(f.Base))
	}
	return h
}

func equalFunctions(a, b *Function) bool {
	if a.Kind != b.Kind || len(a.Shape) != len(b.Shape) {
		return false
	}
	for i := range a.Shape {
		if a.Shape[i] != b.Shape[i] {
			return false
		}
	}
	if a.Kind == Difference {
		return a.W == b.W && a.T == b.T && a.Base == b.Base && a.Args == b.Args
	}
	if a.Kind != Explicit {
		return a.W == b.W && a.T == b.T
	}
	for i := range a.Table {
		if math.Float64bits(a.Table[i]) != math.Float64bits(b.Table[i]) {
			return false
		}
	}
	return true
}
