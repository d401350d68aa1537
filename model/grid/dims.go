package grid

import "github.com/partopt/partopt/model"

// Dims recognises a model whose factors form a 4-connected raster grid: every factor
// has order ≤ 2 and every pairwise factor joins variables v and v+1 on one row or v
// and v+width, where variable y·width+x is pixel (x, y). It returns the width and
// height, or ok false. A model with only row edges is one row (width = #variables);
// the label counts and functions may be anything (FromModel is stricter).
func Dims(m *model.Model) (width, height int, ok bool) {
	n := m.NumVars()
	width = 0
	rows := false
	for f := 0; f < m.NumFactors(); f++ {
		vs := m.FactorVars(f)
		switch len(vs) {
		case 1:
			continue
		case 2:
		default:
			return 0, 0, false
		}
		d := int(vs[1]) - int(vs[0])
		d = max(d, -d)
		switch {
		case d == 1:
			rows = true
		case d > 1 && (width == 0 || width == d):
			width = d
		default:
			return 0, 0, false
		}
	}
	if width == 0 {
		if !rows {
			return 0, 0, false // no pairwise factor: no structure to recognise
		}
		return n, 1, true
	}
	if n%width != 0 {
		return 0, 0, false
	}
	for f := 0; f < m.NumFactors(); f++ {
		if vs := m.FactorVars(f); len(vs) == 2 {
			if u := min(vs[0], vs[1]); max(vs[0], vs[1])-u == 1 && int(u)%width == width-1 {
				return 0, 0, false // a row edge that wraps to the next row
			}
		}
	}
	return width, n / width, true
}
