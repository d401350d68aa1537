package grid_test

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
)

// viaGrid writes m as a grid file and reads the whole model back.
func viaGrid(t *testing.T, m *model.Model, w, h, tile int) (*model.Model, grid.Header) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.grid")
	if err := grid.WriteModelFile(path, m, w, h, tile); err != nil {
		t.Fatal(err)
	}
	r, err := grid.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Model()
	if err != nil {
		t.Fatal(err)
	}
	return got, r.Header()
}

// TestUAIToGridToModelKeepsEnergies: a UAI grid read back through the grid format
// has the same energies (up to float32 rounding of the stored values), and the result
// can be written as UAI again.
func TestUAIToGridToModelKeepsEnergies(t *testing.T) {
	for seed := range uint64(4) {
		orig := random.PottsGrid(random.New(seed), 9, 7, 3)
		var buf bytes.Buffer
		if err := uai.Write(&buf, orig, uai.LG); err != nil {
			t.Fatal(err)
		}
		m, err := uai.Read(&buf, "g.LG", uai.LG)
		if err != nil {
			t.Fatal(err)
		}
		got, hd := viaGrid(t, m, 9, 7, 4)
		if hd.Mode != grid.PerEdge || hd.Kind != model.Potts {
			t.Fatalf("header %v %v, want per-edge Potts", hd.Kind, hd.Mode)
		}
		checkSameEnergies(t, "UAI→grid→model", got, m, 1e-6)
		buf.Reset()
		if err := uai.Write(&buf, got, uai.UAI); err != nil {
			t.Fatal(err)
		}
		back, err := uai.Read(&buf, "back.uai", uai.UAI)
		if err != nil {
			t.Fatal(err)
		}
		checkSameEnergies(t, "grid→UAI", back, got, 1e-6)
	}
}

func TestFromModelRecognisesModes(t *testing.T) {
	// uniform Potts: shared weight, and the offset is kept
	den := random.PottsDenoising(random.New(1), 12, 10, 4, 0.5, 4, 0.8)
	hd, err := grid.FromModel(den, 12, 10)
	if err != nil {
		t.Fatal(err)
	}
	if hd.Mode != grid.Shared || hd.Kind != model.Potts || hd.W != 0.8 {
		t.Fatalf("denoising: header %v %v W %v, want shared Potts 0.8", hd.Kind, hd.Mode, hd.W)
	}
	got, _ := viaGrid(t, den, 12, 10, 5)
	checkSameEnergies(t, "denoising", got, den, 1e-6)

	// truncated linear, factors in both argument orders, duplicates summed, a unary
	// missing and one split in two, and +Inf unaries
	const w, h, k = 5, 4, 4
	labels := make([]int, w*h)
	for i := range labels {
		labels[i] = k
	}
	b := model.NewBuilder(labels)
	tl := func(wt float64) int {
		fn, err := b.AddFunction(model.Function{Kind: model.TruncatedLinear, Shape: []int{k, k}, W: wt, T: 2})
		if err != nil {
			t.Fatal(err)
		}
		return fn
	}
	inf := math.Inf(1)
	for p := range labels {
		if p == 3 {
			continue
		}
		if err := b.AddTable([]int{p}, []float64{0, float64(p), inf, 1}); err != nil {
			t.Fatal(err)
		}
	}
	b.AddTable([]int{5}, []float64{1, 2, 3, 4})
	b.AddConstant(3.5)
	for p := range labels {
		x, y := p%w, p/w
		if x+1 < w {
			b.AddFactor(tl(0.5), p+1, p) // reversed
		}
		if y+1 < h {
			b.AddFactor(tl(float64(x)), p, p+w)
		}
	}
	b.AddFactor(tl(0.25), 0, 1) // a second factor on an edge
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	got, hd = viaGrid(t, m, w, h, 2)
	if hd.Mode != grid.PerEdge || hd.Kind != model.TruncatedLinear || hd.T != 2 || hd.Offset != 3.5 {
		t.Fatalf("header %+v", hd)
	}
	checkSameEnergies(t, "truncated linear", got, m, 1e-6)

	// one shared non-parametric table (not symmetric: the argument order matters)
	b = model.NewBuilder(labels)
	tab := make([]float64, k*k)
	for i := range tab {
		tab[i] = float64(i*i%7) * 0.3
	}
	tab[2] = inf
	tr := make([]float64, k*k)
	for i := range k {
		for j := range k {
			tr[j*k+i] = tab[i*k+j]
		}
	}
	for p := range labels {
		b.AddTable([]int{p}, []float64{0.5, 0, 1, 2})
		x, y := p%w, p/w
		if x+1 < w {
			b.AddTable([]int{p + 1, p}, tr)
		}
		if y+1 < h {
			b.AddTable([]int{p, p + w}, tab)
		}
	}
	m, err = b.Build()
	if err != nil {
		t.Fatal(err)
	}
	got, hd = viaGrid(t, m, w, h, 3)
	if hd.Mode != grid.Table || hd.Kind != model.Explicit {
		t.Fatalf("header %v %v, want table", hd.Kind, hd.Mode)
	}
	checkSameEnergies(t, "table", got, m, 1e-6)
}

func TestFromModelRejectsNonGrids(t *testing.T) {
	potts := func(b *model.Builder, wt float64) int {
		fn, _ := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{2, 2}, W: wt})
		return fn
	}
	for _, c := range []struct {
		name  string
		build func() (*model.Model, error)
		want  string
	}{
		{"wrong size", func() (*model.Model, error) { return model.NewBuilder([]int{2, 2, 2}).Build() }, "3 variables"},
		{"mixed labels", func() (*model.Model, error) { return model.NewBuilder([]int{2, 2, 3, 2}).Build() }, "variable 2 has 3 labels"},
		{"diagonal", func() (*model.Model, error) {
			b := model.NewBuilder([]int{2, 2, 2, 2})
			b.AddFactor(potts(b, 1), 0, 3)
			return b.Build()
		}, "not 4-neighbours"},
		{"wrap-around", func() (*model.Model, error) {
			b := model.NewBuilder([]int{2, 2, 2, 2})
			b.AddFactor(potts(b, 1), 1, 2)
			return b.Build()
		}, "not 4-neighbours"},
		{"higher order", func() (*model.Model, error) {
			b := model.NewBuilder([]int{2, 2, 2, 2})
			b.AddTable([]int{0, 1, 2}, []float64{0, 1, 2, 3, 4, 5, 6, 7})
			return b.Build()
		}, "order 3"},
		{"mixed kinds", func() (*model.Model, error) {
			b := model.NewBuilder([]int{2, 2, 2, 2})
			b.AddFactor(potts(b, 1), 0, 1)
			fn, _ := b.AddFunction(model.Function{Kind: model.TruncatedQuadratic, Shape: []int{2, 2}, W: 1, T: 3})
			b.AddFactor(fn, 0, 2)
			return b.Build()
		}, "is truncated-quadratic"},
	} {
		m, err := c.build()
		if err != nil {
			t.Fatal(err)
		}
		_, err = grid.FromModel(m, 2, 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
