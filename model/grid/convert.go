package grid

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/partopt/partopt/model"
)

// gridData is a model recognised as a grid: its header, unaries (pixel-major) and,
// in Mode PerEdge, edge weights (Connectivity/2 per pixel).
type gridData struct {
	h       Header
	unary   []float64
	weights []float64
}

// FromModel recognises m as a width×height 4-connected grid (variable y·width+x) and
// returns the header that describes it; WriteModel writes it. Every variable must have
// the same label count K; factors of order 1 are summed into the pixel's unary
// (pixels without one get zeros); factors of order 2 must join horizontal or vertical
// neighbours (either argument order). The pairwise functions must be all Potts, or all
// truncated linear (or quadratic) with one T: their weights are summed per edge, and
// the header is Shared when every edge of the image has the same total (a missing edge
// has weight 0), PerEdge otherwise. If any pairwise function is explicit, every edge
// must carry exactly one factor and all of them the same K×K table (Mode Table).
// The model's offset becomes the header's Offset.
func FromModel(m *model.Model, width, height int) (Header, error) {
	g, err := scan(m, width, height, false)
	if err != nil {
		return Header{}, err
	}
	return g.h, nil
}

func scan(m *model.Model, width, height int, data bool) (*gridData, error) {
	fail := func(format string, args ...any) (*gridData, error) {
		return nil, fmt.Errorf("grid: model is not a %d×%d grid: %s", width, height, fmt.Sprintf(format, args...))
	}
	if width < 1 || height < 1 || width > MaxSide || height > MaxSide {
		return fail("size out of range [1,%d]", MaxSide)
	}
	if n, ok := mulOK(width, height); !ok || n != m.NumVars() {
		return fail("it has %d variables", m.NumVars())
	}
	k := m.NumLabels(0)
	for v, l := range m.LabelCounts() {
		if int(l) != k {
			return fail("variable %d has %d labels, variable 0 has %d", v, l, k)
		}
	}
	g := &gridData{h: Header{Width: width, Height: height, Labels: k, Connectivity: 4, Kind: model.Potts, Offset: m.Offset()}}
	if k > MaxLabels {
		return fail("%d labels, at most %d", k, MaxLabels)
	}
	n := width * height
	// First pass: the pairwise kind.
	first := -1
	for f := range m.NumFactors() {
		vars := m.FactorVars(f)
		switch len(vars) {
		case 1:
			continue
		case 2:
		default:
			return fail("factor %d has order %d", f, len(vars))
		}
		fn := m.FactorFunction(f)
		if first < 0 {
			first = f
			g.h.Kind, g.h.T = fn.Kind, fn.T
		}
		if fn.Kind == model.Explicit {
			g.h.Kind = model.Explicit
		} else if g.h.Kind != model.Explicit && (fn.Kind != g.h.Kind || fn.T != g.h.T) {
			return fail("factor %d is %v (T %v), factor %d is %v (T %v)", f, fn.Kind, fn.T, first, g.h.Kind, g.h.T)
		}
	}
	if g.h.Kind == model.Explicit {
		g.h.Mode, g.h.T = Table, 0
		g.h.Table = make([]float32, k*k)
	}
	if g.h.Kind == model.Potts {
		g.h.T = 0
	}
	if data {
		if _, ok := mulOK(n, k); !ok {
			return fail("too large")
		}
		g.unary = make([]float64, n*k)
	}
	weights := make([]float64, 2*n)
	seen := make([]uint8, 2*n)
	var table []float64
	for f := range m.NumFactors() {
		vars := m.FactorVars(f)
		fn := m.FactorFunction(f)
		if len(vars) == 1 {
			if data {
				u := g.unary[int(vars[0])*k:][:k]
				for l := range u {
					u[l] += fn.Value([]int{l})
				}
			}
			continue
		}
		a, b := int(vars[0]), int(vars[1])
		p, q := min(a, b), max(a, b)
		d := -1
		switch {
		case q == p+1 && q%width != 0:
			d = 0
		case q == p+width:
			d = 1
		default:
			return fail("factor %d joins (%d,%d) and (%d,%d), not 4-neighbours", f, a%width, a/width, b%width, b/width)
		}
		e := 2*p + d
		if seen[e] < 255 {
			seen[e]++
		}
		if g.h.Mode != Table {
			weights[e] += fn.W
			continue
		}
		if seen[e] > 1 {
			return fail("edge (%d,%d)-(%d,%d) has %d factors; an explicit table grid allows one", p%width, p/width, q%width, q/width, seen[e])
		}
		// the table with the earlier pixel as first argument
		t := make([]float64, 0, k*k)
		for i := range k {
			for j := range k {
				if a == p {
					t = append(t, fn.Pairwise(i, j))
				} else {
					t = append(t, fn.Pairwise(j, i))
				}
			}
		}
		if table == nil {
			table = t
			for i, v := range t {
				var err error
				if g.h.Table[i], err = toFloat32(v); err != nil {
					return fail("table entry %d: %v", i, err)
				}
			}
			continue
		}
		for i := range t {
			if t[i] != table[i] {
				return fail("factor %d has a different table than the first edge", f)
			}
		}
	}
	uniform, ref := true, math.NaN()
	for p := range n {
		x, y := p%width, p/width
		for d := range 2 {
			if (d == 0 && x+1 == width) || (d == 1 && y+1 == height) {
				continue
			}
			e := 2*p + d
			if g.h.Mode == Table && seen[e] == 0 {
				return fail("edge (%d,%d) direction %d has no factor; an explicit table grid needs every edge", x, y, d)
			}
			if math.IsNaN(ref) {
				ref = weights[e]
			} else if weights[e] != ref {
				uniform = false
			}
		}
	}
	if g.h.Mode != Table {
		if uniform {
			g.h.W = max(ref, 0) // ref is NaN for a 1×1 grid
		} else {
			g.h.Mode = PerEdge
			if data {
				g.weights = weights
			}
		}
	}
	if _, err := g.h.normalise(); err != nil {
		return fail("%v", err)
	}
	return g, nil
}

// WriteModel writes m, a width×height grid as FromModel recognises it, to w with
// square tiles of tileSize pixels (0: DefaultTileSize). Values are stored as float32.
func WriteModel(w io.WriteSeeker, m *model.Model, width, height, tileSize int) error {
	g, err := scan(m, width, height, true)
	if err != nil {
		return err
	}
	g.h.TileWidth, g.h.TileHeight = tileSize, tileSize
	wr, err := NewWriter(w, g.h)
	if err != nil {
		return err
	}
	h := wr.Header()
	nd := wr.nd
	urow := make([]float32, width*h.Labels)
	wrow := make([]float32, width*nd)
	for y := range height {
		for i := range urow {
			if urow[i], err = toFloat32(g.unary[y*width*h.Labels+i]); err != nil {
				return fmt.Errorf("grid: pixel (%d,%d) label %d: unary %w", i/h.Labels, y, i%h.Labels, err)
			}
		}
		for i := range wrow {
			if wrow[i], err = toFloat32(g.weights[y*width*nd+i]); err != nil {
				return fmt.Errorf("grid: pixel (%d,%d) edge %d: weight %w", i/nd, y, i%nd, err)
			}
		}
		if err := wr.WriteRows(urow, wrow); err != nil {
			return err
		}
	}
	return wr.Close()
}

// WriteModelFile writes m to a new file path (see WriteModel).
func WriteModelFile(path string, m *model.Model, width, height, tileSize int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = WriteModel(f, m, width, height, tileSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// toFloat32 converts a finite value or +Inf, refusing finite values beyond float32.
func toFloat32(v float64) (float32, error) {
	f := float32(v)
	if math.IsInf(float64(f), 0) && !math.IsInf(v, 0) {
		return 0, fmt.Errorf("%v is out of the float32 range", v)
	}
	return f, nil
}
