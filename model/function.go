package model

import (
	"errors"
	"fmt"
	"math"
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
)

var kindNames = [...]string{"explicit", "potts", "truncated-linear", "truncated-quadratic"}

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
}

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
	case Potts, TruncatedLinear, TruncatedQuadratic:
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
	case Potts:
		if a == b {
			return 0
		}
		return f.W
	case TruncatedLinear:
		d := a - b
		if d < 0 {
			d = -d
		}
		return f.W * math.Min(float64(d), f.T)
	case TruncatedQuadratic:
		d := float64(a - b)
		return f.W * math.Min(d*d, f.T)
	}
	return f.Table[a*f.Shape[1]+b]
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
			if err := CheckValue(v); err != nil {
				return fmt.Errorf("table entry %d: %w", i, err)
			}
		}
	case Potts, TruncatedLinear, TruncatedQuadratic:
		if len(f.Shape) != 2 {
			return fmt.Errorf("%v function has order %d, want 2", f.Kind, len(f.Shape))
		}
		if math.IsNaN(f.W) || math.IsInf(f.W, 0) || f.W < 0 {
			return fmt.Errorf("%v weight %v: want finite and ≥ 0", f.Kind, f.W)
		}
		if f.Kind != Potts && (math.IsNaN(f.T) || f.T <= 0) {
			return fmt.Errorf("%v truncation %v: want > 0", f.Kind, f.T)
		}
	default:
		return fmt.Errorf("unknown function kind %d", f.Kind)
	}
	return nil
}
