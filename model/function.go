package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Kind says how a Function computes its values.
type Kind uint8

const (
	// Explicit is a dense table of any order, last argument fastest.
	Explicit Kind = iota
	// Potts is W·[a≠b] on two arguments.
	Potts
	// TruncatedLinear is W·min(|a−b|, T) on two arguments.
	TruncatedLinear
	// TruncatedQuadratic is W·min((a−b)², T) on two arguments.
	TruncatedQuadratic
	// Difference is base(L₁(a), L₂(b)) − base(P₁(a), P₂(b)) on two arguments, where
	// base is the parametric kind Base with W and T, and Args[i] maps argument i's
	// labels to labels L (Labels) and images P (Images): the verification term of
	// label elimination, f(x) − f(p(x)) over the alive labels, held without a table.
	// Solvers send its messages by distance transforms of the base kind.
	Difference
)

var kindNames = [...]string{"explicit", "potts", "truncated-linear", "truncated-quadratic", "difference"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// MaxTableSize is the largest number of entries an explicit table may have (2^28
// entries, 2 GiB of float64). Larger tables are refused with an error, never allocated.
const MaxTableSize = 1 << 28

// Function is a potential that factors share. Shape holds the label count of each
// argument, so len(Shape) is the order. Table is used by Explicit only; W and T by the
// parametric pairwise kinds, which require W ≥ 0 and T > 0 (T may be +Inf: no
// truncation). A Function must not be modified after it is added to a Builder.
type Function struct {
	Kind  Kind
	Shape []int
	Table []float64
	W, T  float64
	// Base and Args: Difference only (Args are shared, never modified).
	Base Kind
	Args [2]*LabelMap
}

// LabelMap maps the labels of one argument of a Difference function: label a stands
// for Labels[a] and is sent to Images[a] (labels of the base kind, ≥ 0).
type LabelMap struct {
	Labels, Images []int
}

// MaxMappedLabel bounds the labels of a LabelMap: solvers size buffers by them.
const MaxMappedLabel = 1 << 20

// Order is the number of arguments.
func (f *Function) Order() int { return len(f.Shape) }

// Size is the number of argument combinations, the product of Shape.
func (f *Function) Size() int {
	s := 1
	for _, k := range f.Shape {
		s *= k
	}
	return s
}

// Value returns θ(x) for the argument labels x (len(x) == Order()).
func (f *Function) Value(x []int) float64 {
	switch f.Kind {
	case Potts, TruncatedLinear, TruncatedQuadratic, Difference:
		return f.Pairwise(x[0], x[1])
	}
	i := 0
	for d, k := range f.Shape {
		i = i*k + x[d]
	}
	return f.Table[i]
}

// Pairwise returns θ(a, b) of an order-2 function of any kind.
func (f *Function) Pairwise(a, b int) float64 {
	switch f.Kind {
	case Potts, TruncatedLinear, TruncatedQuadratic:
		return parametric(f.Kind, f.W, f.T, a, b)
	case Difference:
		x, y := f.Args[0], f.Args[1]
		return parametric(f.Base, f.W, f.T, x.Labels[a], y.Labels[b]) - parametric(f.Base, f.W, f.T, x.Images[a], y.Images[b])
	}
	return f.Table[a*f.Shape[1]+b]
}

// Row returns θ(a, ·) of an order-2 function of any kind: a slice of Table for an
// explicit one (not to be modified), else the scratch *buf, grown as needed and
// filled in.
func (f *Function) Row(a int, buf *[]float64) []float64 {
	kb := f.Shape[1]
	if f.Kind == Explicit {
		return f.Table[a*kb : (a+1)*kb]
	}
	if cap(*buf) < kb {
		*buf = make([]float64, kb)
	}
	row := (*buf)[:kb]
	switch {
	case f.Kind == Potts:
		for b := range row {
			row[b] = f.W
		}
		if a < kb {
			row[a] = 0
		}
	case f.Kind == Difference && f.Base == Potts: // segmentation's verification terms
		x, y := f.Args[0], f.Args[1]
		la, pa := x.Labels[a], x.Images[a]
		for b := range row {
			var at, image float64
			if la != y.Labels[b] {
				at = f.W
			}
			if pa != y.Images[b] {
				image = f.W
			}
			row[b] = at - image
		}
	case f.Kind == Difference:
		x, y := f.Args[0], f.Args[1]
		la, pa := x.Labels[a], x.Images[a]
		for b := range row {
			row[b] = parametric(f.Base, f.W, f.T, la, y.Labels[b]) - parametric(f.Base, f.W, f.T, pa, y.Images[b])
		}
	default:
		for b := range row {
			row[b] = parametric(f.Kind, f.W, f.T, a, b)
		}
	}
	return row
}

// parametric is the value of a parametric pairwise kind.
func parametric(k Kind, w, t float64, a, b int) float64 {
	switch k {
	case Potts:
		if a == b {
			return 0
		}
		return w
	case TruncatedLinear:
		d := a - b
		if d < 0 {
			d = -d
		}
		return w * min(float64(d), t) // min, not math.Min: the same value, inlined
	}
	d := float64(a - b)
	return w * min(d*d, t)
}

// Range is the largest |θ| a parametric or Difference function takes (its values
// lie in [0, Range] for a parametric kind and in [−Range, Range] for Difference).
func (f *Function) Range() float64 {
	k, d := f.Kind, float64(max(f.Shape[0], f.Shape[1])-1)
	if k == Difference {
		k, d = f.Base, 0
		for _, a := range f.Args {
			d = max(d, float64(slices.Max(a.Labels)), float64(slices.Max(a.Images)))
		}
	}
	switch k {
	case Potts:
		return f.W
	case TruncatedQuadratic:
		d *= d
	}
	return f.W * math.Min(d, f.T)
}

// tableSize returns the product of shape, or an error when an entry is < 1 or the
// product exceeds MaxTableSize (checked before anything is allocated).
func tableSize(shape []int) (int, error) {
	s := 1
	for _, k := range shape {
		if k < 1 {
			return 0, fmt.Errorf("label count %d < 1", k)
		}
		if s > MaxTableSize/k {
			return 0, fmt.Errorf("table of shape %v has more than %d entries", shape, MaxTableSize)
		}
		s *= k
	}
	return s, nil
}

// CheckValue rejects NaN and −Inf, the values no energy may take.
func CheckValue(v float64) error {
	if math.IsNaN(v) {
		return errors.New("NaN energy")
	}
	if math.IsInf(v, -1) {
		return errors.New("-Inf energy")
	}
	return nil
}

// Validate checks a function on its own, as a Builder does (solvers that take
// functions outside a model use it).
func (f *Function) Validate() error { return f.validate() }

// validate checks a function on its own (not against the variables it is applied to).
// Parametric functions store no table, so only explicit ones are held to MaxTableSize.
func (f *Function) validate() error {
	for _, k := range f.Shape {
		if k < 1 {
			return fmt.Errorf("label count %d < 1", k)
		}
	}
	switch f.Kind {
	case Explicit:
		n, err := tableSize(f.Shape)
		if err != nil {
			return err
		}
		if len(f.Table) != n {
			return fmt.Errorf("explicit table has %d entries, shape %v needs %d", len(f.Table), f.Shape, n)
		}
		for i, v := range f.Table {
			// One comparison an entry: false for NaN and −Inf only (the values
			// CheckValue rejects; label elimination validates every table of its
			// checking models).
			if !(v >= -math.MaxFloat64) {
				return fmt.Errorf("table entry %d: %w", i, CheckValue(v))
			}
		}
	case Potts, TruncatedLinear, TruncatedQuadratic, Difference:
		if len(f.Shape) != 2 {
			return fmt.Errorf("%v function has order %d, want 2", f.Kind, len(f.Shape))
		}
		k := f.Kind
		if k == Difference {
			if k = f.Base; k != Potts && k != TruncatedLinear && k != TruncatedQuadratic {
				return fmt.Errorf("difference of base kind %v, want a parametric pairwise kind", f.Base)
			}
			if err := f.validateArgs(); err != nil {
				return err
			}
		}
		if math.IsNaN(f.W) || math.IsInf(f.W, 0) || f.W < 0 {
			return fmt.Errorf("%v weight %v: want finite and ≥ 0", f.Kind, f.W)
		}
		if k != Potts && (math.IsNaN(f.T) || f.T <= 0) {
			return fmt.Errorf("%v truncation %v: want > 0", f.Kind, f.T)
		}
	default:
		return fmt.Errorf("unknown function kind %d", f.Kind)
	}
	return nil
}

// validateArgs checks a Difference function's label maps against its shape.
func (f *Function) validateArgs() error {
	for i, a := range f.Args {
		if a == nil || len(a.Labels) != f.Shape[i] || len(a.Images) != f.Shape[i] {
			return fmt.Errorf("difference argument %d: want %d labels and images", i, f.Shape[i])
		}
		for j := range a.Labels {
			if l, p := a.Labels[j], a.Images[j]; l < 0 || p < 0 || l > MaxMappedLabel || p > MaxMappedLabel {
				return fmt.Errorf("difference argument %d: label %d maps %d to %d, want both in [0,%d]", i, j, l, p, MaxMappedLabel)
			}
		}
	}
	return nil
}
