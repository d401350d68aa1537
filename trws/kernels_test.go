package trws

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
)

// TestKernelsEqualTheGeneralTableKernel: every specialised message kernel computes the
// same message and normalisation as the O(K²) kernel on the expanded table, for square
// and rectangular terms, both directions, and inputs holding the forbidden penalty.
func TestKernelsEqualTheGeneralTableKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 3000; trial++ {
		ks, kd := 1+rng.IntN(9), 1+rng.IntN(9)
		if trial%3 == 0 {
			kd = ks
		}
		w := float32(rng.Float64() * 3)
		T := float32(0.5 + rng.Float64()*20)
		if trial%2 == 0 { // stereo's truncations: T ≤ 3, integral or not
			T = []float32{0.5, 1, 1.5, 2, 2.5, 3}[rng.IntN(6)]
		}
		kind := []model.Kind{model.Potts, model.TruncatedLinear, model.TruncatedQuadratic}[trial%3]
		fn := model.Function{Kind: kind, Shape: []int{ks, kd}, W: float64(w), T: float64(T)}
		h := make([]float32, ks)
		for i := range h {
			h[i] = float32(rng.NormFloat64() * 4)
			if rng.IntN(6) == 0 {
				h[i] = 1e20 // a forbidden label's penalty
			}
		}
		tab := make([]float32, ks*kd)
		for x := 0; x < ks; x++ {
			for y := 0; y < kd; y++ {
				tab[x*kd+y] = float32(fn.Pairwise(x, y))
			}
		}
		want := make([]float32, kd)
		wantC := tableMessageFromTail(h, want, tab)
		got := make([]float32, kd)
		var gotC float32
		switch kind {
		case model.Potts:
			gotC = pottsMessage(h, got, w)
		case model.TruncatedLinear:
			gotC = truncLinearMessage(h, got, minOf(h), w, T, make([]float32, max(ks, kd)))
		default:
			gotC = truncQuadMessage(h, got, w, T, make([]int32, ks+1), make([]float64, ks+2))
		}
		tol := func(a float32) float32 { return 1e-5 * max(1, float32(math.Abs(float64(a)))) }
		if d := gotC - wantC; d > tol(wantC) || -d > tol(wantC) {
			t.Fatalf("%v %dx%d w=%v T=%v h=%v: normalisation %v, table kernel %v", kind, ks, kd, w, T, h, gotC, wantC)
		}
		for y := range got {
			if d := got[y] - want[y]; d > tol(want[y]+wantC) || -d > tol(want[y]+wantC) {
				t.Fatalf("%v %dx%d w=%v T=%v h=%v: message %v, table kernel %v", kind, ks, kd, w, T, h, got, want)
			}
		}
		// The head-side table kernel is the tail-side one on the transposed table.
		tr := make([]float32, ks*kd)
		for x := 0; x < ks; x++ {
			for y := 0; y < kd; y++ {
				tr[y*ks+x] = tab[x*kd+y]
			}
		}
		back := make([]float32, kd)
		backC := tableMessageFromHead(h, back, tr)
		for y := range back {
			if back[y] != want[y] || backC != wantC {
				t.Fatalf("head-side kernel %v (%v), tail-side %v (%v)", back, backC, want, wantC)
			}
		}
	}
}

// TestTableKernelsEqualTheDoubleLoop: the table kernels — Go's unrolled loops and,
// where the CPU has them, the vector ones — compute exactly the textbook min over
// the sender's labels, for every size around the unrolling (1–90 labels each side)
// and inputs holding the forbidden penalty.
func TestTableKernelsEqualTheDoubleLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 2000; trial++ {
		ks, kd := 1+rng.IntN(12), 1+rng.IntN(12)
		if trial%4 == 0 {
			ks, kd = 1+rng.IntN(90), 1+rng.IntN(90)
		}
		h, tab := make([]float32, ks), make([]float32, ks*kd)
		for i := range h {
			h[i] = float32(rng.NormFloat64() * 4)
		}
		for i := range tab {
			tab[i] = float32(rng.NormFloat64() * 4)
			if rng.IntN(8) == 0 {
				tab[i] = 1e20
			}
		}
		want := make([]float32, kd)
		for y := range want {
			want[y] = h[0] + tab[y]
			for x := 1; x < ks; x++ {
				want[y] = min(want[y], h[x]+tab[x*kd+y])
			}
		}
		wantC := normalize(want)
		tr := make([]float32, ks*kd)
		for x := 0; x < ks; x++ {
			for y := 0; y < kd; y++ {
				tr[y*ks+x] = tab[x*kd+y]
			}
		}
		for _, k := range []struct {
			name       string
			tail, head func(h, out, tab []float32) float32
		}{
			{"dispatched", tableMessageFromTail, tableMessageFromHead},
			{"scalar", tableFromTailScalar, tableFromHeadScalar},
		} {
			tail, head := make([]float32, kd), make([]float32, kd)
			tailC, headC := k.tail(h, tail, tab), k.head(h, head, tr)
			for y := range want {
				if tail[y] != want[y] || head[y] != want[y] || tailC != wantC || headC != wantC {
					t.Fatalf("%s %dx%d: tail %v (%v), head %v (%v), double loop %v (%v)", k.name, ks, kd, tail, tailC, head, headC, want, wantC)
				}
			}
		}
	}
}

// TestExactTableKernelsEqualTheDoubleLoop: the float64 table loops of the exact
// passes and the certificate's check give the double loop's floats bit for bit —
// fmin over the sender's labels of h + fmin(θ, big) — for every size around the
// vector widths (1–70 labels each side), tables holding +Inf and entries above
// big, and big = +Inf (no clamp); and they write only their output.
func TestExactTableKernelsEqualTheDoubleLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const guard, mark = 8, 12345.0
	for trial := range 3000 {
		ks, kd := 1+rng.IntN(20), 1+rng.IntN(20)
		if trial%4 == 0 {
			ks, kd = 1+rng.IntN(70), 1+rng.IntN(70)
		}
		big := 1e6 * (1 + rng.Float64())
		if trial%3 == 0 {
			big = math.Inf(1)
		}
		h, tab := make([]float64, ks), make([]float64, ks*kd)
		for i := range h {
			h[i] = rng.NormFloat64() * 4
		}
		for i := range tab {
			tab[i] = rng.NormFloat64() * 4
			switch rng.IntN(10) {
			case 0:
				tab[i] = math.Inf(1)
			case 1:
				tab[i] = 3e6
			}
		}
		want := make([]float64, kd)
		for y := range want {
			want[y] = math.Inf(1)
			for x := range ks {
				want[y] = fmin(want[y], h[x]+fmin(tab[x*kd+y], big))
			}
		}
		tr := make([]float64, ks*kd)
		for x := range ks {
			for y := range kd {
				tr[y*ks+x] = tab[x*kd+y]
			}
		}
		for _, k := range []struct {
			name string
			run  func(out []float64)
		}{
			{"from the tail", func(out []float64) { minPlus64FromTail(h, out, tab, big) }},
			{"from the head", func(out []float64) { minPlus64FromHead(h, out, tr, big) }},
		} {
			buf := make([]float64, kd+2*guard)
			for i := range buf {
				buf[i] = mark
			}
			out := buf[guard : guard+kd : guard+kd]
			k.run(out)
			for y := range want {
				if math.Float64bits(out[y]) != math.Float64bits(want[y]) {
					t.Fatalf("%s %dx%d, big %v: %v, the double loop %v", k.name, ks, kd, big, out, want)
				}
			}
			for i := range guard {
				if buf[i] != mark || buf[guard+kd+i] != mark {
					t.Fatalf("%s %dx%d wrote outside its output", k.name, ks, kd)
				}
			}
		}
	}
}

// TestFiniteExtentEqualsTheLoop: an explicit table's extent (the least entry,
// the largest below +Inf), eight entries an iteration where the CPU has AVX2,
// is the plain loop's for every length around the vector width, tables holding
// +Inf, and tables of +Inf only (no finite value: lo > hi).
func TestFiniteExtentEqualsTheLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 2000 {
		tab := make([]float64, 1+rng.IntN(40))
		for i := range tab {
			tab[i] = rng.NormFloat64() * 100
			if trial%50 == 0 || rng.IntN(5) == 0 {
				tab[i] = math.Inf(1)
			}
		}
		wantLo, wantHi := math.Inf(1), math.Inf(-1)
		for _, v := range tab {
			wantLo = min(wantLo, v)
			if !math.IsInf(v, 1) {
				wantHi = max(wantHi, v)
			}
		}
		lo, hi := finiteExtent(&model.Function{Kind: model.Explicit, Shape: []int{len(tab)}, Table: tab})
		if lo != wantLo || hi != wantHi {
			t.Fatalf("%v: extent [%v, %v], the loop's [%v, %v]", tab, lo, hi, wantLo, wantHi)
		}
	}
}

// TestVectorLoopsEqualTheGoLoops: where the CPU runs the vector loops, the node
// sums, reparametrisations, normalisations and truncated-linear messages equal the
// Go loops' exactly, for every
// label count around the vector width and inputs holding the forbidden penalty.
func TestVectorLoopsEqualTheGoLoops(t *testing.T) {
	if !vector {
		t.Skip("no vector loops on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	values := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 10)
			if rng.IntN(10) == 0 {
				v[i] = 1e20
			}
		}
		return v
	}
	same := func(what string, k int, got, want []float32, gotMin, wantMin float32) {
		t.Helper()
		if gotMin != wantMin || !slices.Equal(got, want) {
			t.Fatalf("%s, %d labels: vector %v (min %v), Go %v (min %v)", what, k, got, gotMin, want, wantMin)
		}
	}
	for trial := range 3000 {
		k := 8 + rng.IntN(90)
		u, block := values(k), values(k*rng.IntN(7))
		got, want := make([]float32, k), make([]float32, k)
		same("node sum", k, got, want, sumRows(got, u, block), sumRowsScalar(want, u, block))

		d, back, g := values(k), values(k+rng.IntN(3)), float32(rng.Float64())
		same("reparametrisation", k, got, want, reparamVector(got, d, back, g), reparamScalar(want, d, back, g))

		out := values(k)
		if trial%50 == 0 {
			out[rng.IntN(k)] = float32(math.Inf(1))
		}
		copy(got, out)
		copy(want, out)
		same("normalisation", k, got, want, normalizeAVX2(got), normalizeScalar(want))

		// Truncated linear, T = 2 (stereo's default): the textbook minimum, from
		// the 10 labels the vector loop needs (truncLinearNear takes the Go loop
		// below that; a shorter h once made it write before out).
		if k < 10 {
			continue
		}
		h, w := values(k), float32(rng.Float64()*5)
		top := minOf(h) + 2*w
		for y := range want {
			want[y] = min(h[y], top)
			if y > 0 {
				want[y] = min(want[y], h[y-1]+w)
			}
			if y+1 < k {
				want[y] = min(want[y], h[y+1]+w)
			}
		}
		same("truncated linear", k, got, want, truncLinear2(h, got, w, top), normalizeScalar(want))
	}
}

// TestVectorLoopsWriteOnlyTheirOutput: the assembly writes nothing outside the
// slice it fills, for every size from 1 label (10 for the truncated-linear loop,
// its precondition), checked by guard values on both sides. (A write of one float
// before out, from a test that called the truncated-linear loop on 8 labels, once
// crashed the garbage collector in one CI run of twenty.)
func TestVectorLoopsWriteOnlyTheirOutput(t *testing.T) {
	if !vector {
		t.Skip("no vector loops on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	const guard, mark = 16, float32(12345)
	values := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for trial := range 3000 {
		k := 1 + rng.IntN(100)
		buf := make([]float32, k+2*guard)
		for i := range buf {
			buf[i] = mark
		}
		out := buf[guard : guard+k : guard+k]
		h := values(1 + rng.IntN(100))
		var what string
		switch trial % 7 {
		case 0:
			what = "table from the tail"
			minPlusFromTail(h, out, values(len(h)*k))
		case 1:
			what = "table from the head"
			minPlusFromHead(h, out, values(len(h)*k))
		case 2:
			what = "node sum"
			sumRows(out, values(k), values(k*rng.IntN(7)))
		case 3:
			what = "reparametrisation"
			reparamVector(out, values(k), values(k+rng.IntN(3)), 0.5)
		case 4:
			what = "normalisation"
			copy(out, values(k))
			normalizeAVX2(out)
		case 5:
			what = "scale"
			scale(out, values(k), 2)
		default:
			if k < 10 {
				continue
			}
			what = "truncated linear"
			truncLinear2(values(k), out, 1, 3)
		}
		for i := range guard {
			if buf[i] != mark || buf[guard+k+i] != mark {
				t.Fatalf("%s, %d labels: wrote outside its output", what, k)
			}
		}
	}
}

// TestUniqueArgminIsTheDefinition: the one-pass uniqueArgmin gives what its
// definition gives — the first minimiser when every other entry exceeds it by
// more than the tolerance, else −1 — on random vectors with ties, near-ties,
// +Inf and NaN entries.
func TestUniqueArgminIsTheDefinition(t *testing.T) {
	definition := func(d []float32) int32 {
		l := argmin(d)
		margin := ConsistencyTolerance * max(1, abs32(d[l]))
		for x, v := range d {
			if int32(x) != l && v-d[l] <= margin {
				return -1
			}
		}
		return l
	}
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, 1, -1, float32(math.Inf(1)), 1e-7, 2e-6, 1e6, 1e6 + 0.1, float32(math.NaN()), 3}
	for range 200000 {
		d := make([]float32, 1+rng.IntN(20))
		for i := range d {
			switch rng.IntN(4) {
			case 0:
				d[i] = special[rng.IntN(len(special))]
			case 1:
				d[i] = float32(rng.IntN(4))
			default:
				d[i] = float32(rng.NormFloat64() * 3)
			}
		}
		if got, want := uniqueArgmin(d), definition(d); got != want {
			t.Fatalf("%v: %d, the definition gives %d", d, got, want)
		}
	}
}

// BenchmarkTableMessages times one explicit-table message each way for the
// label counts of the protein models (pdb1jmx: 2, 3, 6, 9, 18, 27, 36 and 81
// rotamers): sender × receiver labels, from the tail (rows of the sender) and
// from the head (rows of the receiver).
func BenchmarkTableMessages(b *testing.B) {
	for _, s := range [][2]int{{81, 81}, {81, 27}, {27, 81}, {9, 27}, {27, 9}, {81, 3}, {3, 81}, {9, 9}, {3, 9}, {3, 3}} {
		ks, kd := s[0], s[1]
		h, out := make([]float32, ks), make([]float32, kd)
		tab := make([]float32, ks*kd)
		for i := range tab {
			tab[i] = float32(i % 7)
		}
		b.Run(fmt.Sprintf("tail%dx%d", ks, kd), func(b *testing.B) {
			for b.Loop() {
				tableMessageFromTail(h, out, tab)
			}
		})
		b.Run(fmt.Sprintf("head%dx%d", ks, kd), func(b *testing.B) {
			for b.Loop() {
				tableMessageFromHead(h, out, tab)
			}
		})
	}
}
