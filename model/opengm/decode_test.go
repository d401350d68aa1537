package opengm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
)

// mapSource is a Source in memory.
type mapSource struct {
	u map[string][]uint64
	f map[string][]float64
}

func (s mapSource) Uint64s(name string, limit int) ([]uint64, error) {
	v, ok := s.u[name]
	if !ok {
		return nil, fmt.Errorf("no dataset %s", name)
	}
	if limit > 0 && len(v) > limit {
		return nil, fmt.Errorf("%s: %d elements, limit %d", name, len(v), limit)
	}
	return v, nil
}

func (s mapSource) Float64s(name string, limit int) ([]float64, error) {
	v, ok := s.f[name]
	if !ok {
		return nil, fmt.Errorf("no dataset %s", name)
	}
	if limit > 0 && len(v) > limit {
		return nil, fmt.Errorf("%s: %d elements, limit %d", name, len(v), limit)
	}
	return v, nil
}

// ogFunc is one OpenGM function for the encoder: its type, index and value sequences,
// and its value at a labeling of its arguments (the definition, written independently
// of Decode).
type ogFunc struct {
	typ   uint64
	idx   []uint64
	vals  []float64
	value func(x []int) float64
}

// ogFactor uses function fn (index within its type) of type typ.
type ogFactor struct {
	typ  uint64
	fn   int
	vars []int
}

// encode lays a model out as OpenGM saves it.
func encode(labels []int, fns []ogFunc, factors []ogFactor, types []uint64) mapSource {
	src := mapSource{u: map[string][]uint64{}, f: map[string][]float64{}}
	header := []uint64{2, 0, uint64(len(labels)), uint64(len(factors)), uint64(len(types))}
	pos := map[uint64]int{}
	for i, t := range types {
		n := 0
		for _, f := range fns {
			if f.typ == t {
				n++
			}
		}
		header = append(header, t, uint64(n))
		pos[t] = i
		if n == 0 {
			continue
		}
		g := fmt.Sprintf("function-id-%d/", t)
		src.u[g+"indices"], src.f[g+"values"] = []uint64{}, []float64{}
		for _, f := range fns {
			if f.typ == t {
				src.u[g+"indices"] = append(src.u[g+"indices"], f.idx...)
				src.f[g+"values"] = append(src.f[g+"values"], f.vals...)
			}
		}
	}
	src.u["header"] = append(header, 1) // values stored as double
	for _, k := range labels {
		src.u["numbers-of-states"] = append(src.u["numbers-of-states"], uint64(k))
	}
	for _, fa := range factors {
		src.u["factors"] = append(src.u["factors"], uint64(fa.fn), uint64(pos[fa.typ]), uint64(len(fa.vars)))
		for _, v := range fa.vars {
			src.u["factors"] = append(src.u["factors"], uint64(v))
		}
	}
	return src
}

// explicitFn is a random explicit function of the given shape, stored first
// variable fastest.
func explicitFn(rng *rand.Rand, shape []int) ogFunc {
	size := 1
	for _, k := range shape {
		size *= k
	}
	f := ogFunc{typ: Explicit, idx: []uint64{uint64(len(shape))}, vals: make([]float64, size)}
	for _, k := range shape {
		f.idx = append(f.idx, uint64(k))
	}
	for i := range f.vals {
		f.vals[i] = math.Round(100*rng.Float64()) / 10
		if rng.IntN(10) == 0 {
			f.vals[i] = math.Inf(1)
		}
	}
	vals := f.vals
	f.value = func(x []int) float64 {
		i, stride := 0, 1
		for d, l := range x {
			i += l * stride
			stride *= shape[d]
		}
		return vals[i]
	}
	return f
}

// functionsOf returns one function of every type on labels (k1, k2) and order-3 ones
// on (k1, k2, k3).
func functionsOf(rng *rand.Rand, k1, k2, k3 int) []ogFunc {
	d := func(x []int) float64 { return float64(x[0] - x[1]) }
	pair := []uint64{uint64(k1), uint64(k2)}
	return []ogFunc{
		explicitFn(rng, []int{k1}),
		explicitFn(rng, []int{k1, k2}),
		explicitFn(rng, []int{k1, k2, k3}),
		{typ: Explicit, idx: []uint64{0}, vals: []float64{1.25}, value: func([]int) float64 { return 1.25 }},
		{typ: AbsDiff, idx: pair, vals: []float64{0.5}, value: func(x []int) float64 { return 0.5 * math.Abs(d(x)) }},
		{typ: AbsDiff, idx: pair, vals: []float64{-0.5}, value: func(x []int) float64 { return -0.5 * math.Abs(d(x)) }},
		{typ: TruncAbsDiff, idx: pair, vals: []float64{2, 0.75}, value: func(x []int) float64 { return 0.75 * math.Min(math.Abs(d(x)), 2) }},
		{typ: SqDiff, idx: pair, vals: []float64{0.25}, value: func(x []int) float64 { return 0.25 * d(x) * d(x) }},
		{typ: TruncSqDiff, idx: pair, vals: []float64{3, 2}, value: func(x []int) float64 { return 2 * math.Min(d(x)*d(x), 3) }},
		{typ: Potts, idx: pair, vals: []float64{0, 1.5}, value: func(x []int) float64 {
			if x[0] == x[1] {
				return 0
			}
			return 1.5
		}},
		{typ: Potts, idx: pair, vals: []float64{2, -1}, value: func(x []int) float64 {
			if x[0] == x[1] {
				return 2
			}
			return -1
		}},
		{typ: PottsN, idx: []uint64{3, uint64(k1), uint64(k2), uint64(k3)}, vals: []float64{-2, 0.5}, value: func(x []int) float64 {
			if x[0] == x[1] && x[1] == x[2] {
				return -2
			}
			return 0.5
		}},
		{typ: Constant, idx: []uint64{2, uint64(k1), uint64(k2)}, vals: []float64{0.125}, value: func([]int) float64 { return 0.125 }},
		{typ: Sparse, idx: []uint64{2, uint64(k1), uint64(k2), 2, 1, uint64(k1*k2 - 1)}, vals: []float64{4, -3, 7}, value: func(x []int) float64 {
			switch x[0] + k1*x[1] {
			case 1:
				return -3
			case k1*k2 - 1:
				return 7
			}
			return 4
		}},
	}
}

// TestDecodeEqualsTheDefinitions: a model with every function type, on variables with
// 2–4 labels, decodes to a model whose energy equals the sum of the functions'
// definitions on 300 random labelings, with the type list in any order.
func TestDecodeEqualsTheDefinitions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	labels := []int{3, 4, 2, 3, 4, 2}
	fns := functionsOf(rng, 3, 4, 2)
	var factors []ogFactor
	index := map[uint64]int{}
	var scopes [][]int
	for _, f := range fns {
		vars := []int{0, 1}
		switch f.typ {
		case Explicit, Sparse, PottsN, Constant:
			vars = []int{0, 1, 2}[:f.idx[0]]
		}
		for _, shift := range []int{0, 3} { // the same function on two scopes
			sv := make([]int, len(vars))
			for i, v := range vars {
				sv[i] = v + shift
			}
			factors = append(factors, ogFactor{typ: f.typ, fn: index[f.typ], vars: sv})
			scopes = append(scopes, sv)
		}
		index[f.typ]++
	}
	for _, types := range [][]uint64{
		{Explicit, Sparse, AbsDiff, TruncAbsDiff, SqDiff, TruncSqDiff, Potts, PottsN, Constant},
		{Constant, PottsN, Potts, TruncSqDiff, SqDiff, TruncAbsDiff, AbsDiff, Sparse, Explicit, 16099},
	} {
		m, err := Decode(encode(labels, fns, factors, types))
		if err != nil {
			t.Fatal(err)
		}
		if m.NumVars() != len(labels) {
			t.Fatalf("%d variables", m.NumVars())
		}
		for range 300 {
			x := make([]int, len(labels))
			for v := range x {
				x[v] = rng.IntN(labels[v])
			}
			want := 0.0
			for i, fa := range factors {
				var f ogFunc
				n := 0
				for _, g := range fns {
					if g.typ == fa.typ {
						if n == fa.fn {
							f = g
						}
						n++
					}
				}
				args := make([]int, len(scopes[i]))
				for d, v := range scopes[i] {
					args[d] = x[v]
				}
				want += f.value(args)
			}
			if got := m.Energy(x); got != want && math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("types %v, labeling %v: energy %v, definitions give %v", types, x, got, want)
			}
		}
	}
}

// TestDecodeRejectsMalformedModels: every inconsistency is an error naming the problem.
func TestDecodeRejectsMalformedModels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := func() mapSource {
		f := explicitFn(rng, []int{2, 3})
		return encode([]int{2, 3}, []ogFunc{f, {typ: Potts, idx: []uint64{2, 3}, vals: []float64{0, 1}}},
			[]ogFactor{{Explicit, 0, []int{0, 1}}, {Potts, 0, []int{0, 1}}}, []uint64{Explicit, Potts})
	}
	if _, err := Decode(base()); err != nil {
		t.Fatalf("the base model: %v", err)
	}
	cases := []struct {
		name string
		edit func(s mapSource)
		want string
	}{
		{"version", func(s mapSource) { s.u["header"][0] = 1 }, "version 1.0"},
		{"short header", func(s mapSource) { s.u["header"] = s.u["header"][:4] }, "at least 5"},
		{"type count", func(s mapSource) { s.u["header"][4] = 3 }, "function types"},
		{"states count", func(s mapSource) { s.u["numbers-of-states"] = s.u["numbers-of-states"][:1] }, "numbers-of-states has 1"},
		{"zero labels", func(s mapSource) { s.u["numbers-of-states"][1] = 0 }, "has 0 labels"},
		{"unknown type", func(s mapSource) { s.u["header"][5] = 17000 }, "type 17000 is not supported"},
		{"function count", func(s mapSource) { s.u["header"][6] = 2 }, "indices end early"},
		{"values short", func(s mapSource) {
			s.f["function-id-16000/values"] = s.f["function-id-16000/values"][:5]
		}, "values end early"},
		{"values long", func(s mapSource) {
			s.f["function-id-16000/values"] = append(s.f["function-id-16000/values"], 1)
		}, "7 elements, limit 6"}, // beyond what the explicit function's indices describe
		{"NaN", func(s mapSource) { s.f["function-id-16006/values"][1] = math.NaN() }, "NaN"},
		{"huge table", func(s mapSource) {
			s.u["function-id-16000/indices"] = []uint64{3, 1 << 20, 1 << 20, 2}
		}, "more than"},
		{"factor function", func(s mapSource) { s.u["factors"][0] = 5 }, "function 5 of type position 0"},
		{"factor type", func(s mapSource) { s.u["factors"][1] = 9 }, "type position 9"},
		{"factor order", func(s mapSource) { s.u["factors"][2] = 3 }, "order 3"},
		{"factor variable", func(s mapSource) { s.u["factors"][3] = 7 }, "variable 7"},
		{"factor shape", func(s mapSource) { s.u["factors"][3], s.u["factors"][4] = 1, 0 }, "does not match"},
		{"factors short", func(s mapSource) { s.u["factors"] = s.u["factors"][:8] }, "end at factor 1"},
		{"factors shorter", func(s mapSource) { s.u["factors"] = s.u["factors"][:5] }, "cannot hold 2 factors"},
		{"excess entries", func(s mapSource) { s.u["factors"] = append(s.u["factors"], 0) }, "limit 10"}, // beyond what 2 factors of order ≤ 2 need
		{"repeated variable", func(s mapSource) { s.u["factors"][8] = 0; s.u["numbers-of-states"][1] = 2 }, ""},
		{"missing dataset", func(s mapSource) { delete(s.u, "factors") }, "no dataset factors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			c.edit(s)
			_, err := Decode(s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if err != nil && strings.Contains(c.name, "factor") && !errors.Is(err, ErrFormat) {
				t.Errorf("%v does not wrap ErrFormat", err)
			}
		})
	}
}

// TestFirstToLastFastest: the reorder is the transposition of the index order.
func TestFirstToLastFastest(t *testing.T) {
	shape := []int{2, 3, 4}
	first := make([]float64, 24)
	for a := range 2 {
		for b := range 3 {
			for c := range 4 {
				first[a+2*b+6*c] = float64(100*a + 10*b + c)
			}
		}
	}
	last := firstToLastFastest(shape, first)
	for a := range 2 {
		for b := range 3 {
			for c := range 4 {
				if got := last[(a*3+b)*4+c]; got != float64(100*a+10*b+c) {
					t.Fatalf("(%d,%d,%d): %v", a, b, c, got)
				}
			}
		}
	}
	fn := &model.Function{Kind: model.Explicit, Shape: shape, Table: last}
	if fn.Value([]int{1, 2, 3}) != 123 {
		t.Error("model reads the reordered table differently")
	}
}
