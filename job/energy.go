package job

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
)

// isLabelRaster says whether path is a label raster (.plf) rather than a UAI
// solution file.
func isLabelRaster(path string) bool { return strings.EqualFold(filepath.Ext(path), ".plf") }

// readRaster reads a labeling raster (.plf) of n = width·height variables into
// memory, raster order.
func readRaster(path string, n int) ([]int, error) {
	f, err := labelfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := f.Header()
	if err := checkRaster(path, h, int64(n)); err != nil {
		return nil, err
	}
	vals := make([]int32, n)
	if err := f.ReadRect(0, 0, h.Width, h.Height, vals); err != nil {
		return nil, err
	}
	x := make([]int, n)
	for i, v := range vals {
		x[i] = int(v)
	}
	return x, nil
}

// checkRaster checks that the raster of header h is a labeling of n variables.
func checkRaster(path string, h labelfile.Header, n int64) error {
	if h.Kind != labelfile.Labeling {
		return fmt.Errorf("%s: a %v map, not a labeling (labels.plf)", path, h.Kind)
	}
	if int64(h.Width)*int64(h.Height) != n {
		return fmt.Errorf("%s: %d×%d pixels, the model has %d variables", path, h.Width, h.Height, n)
	}
	return nil
}

// energyBand is how many pixels gridEnergy reads at a time (a variable for
// the tests).
var energyBand = 1 << 22

// gridEnergy is the energy of the labeling raster labels of the .grid model
// at modelPath, read a piece at a time (a model beyond memory): bands of
// whole rows while a row holds at most energyBand pixels, else each row in
// pieces of energyBand columns, so that memory is bounded whatever the
// shape. Each piece's unaries and inner edges count, and its edges to the
// pixels after it (right, below), whose labels are read with its own. With
// evidence (unless noEvid) a labeling that disagrees with it has energy +Inf
// (conditioning changes no other energy).
func gridEnergy(modelPath, labels string, noEvid bool, note func(string)) (float64, error) {
	r, err := grid.Open(modelPath)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	h := r.Header()
	f, err := labelfile.Open(labels)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	W, H := h.Width, h.Height
	if err := checkRaster(labels, f.Header(), int64(W)*int64(H)); err != nil {
		return 0, err
	}
	if f.Header().Labels > h.Labels {
		return 0, fmt.Errorf("%s: labels up to %d, the model has %d", labels, f.Header().Labels-1, h.Labels)
	}
	ev, evPath, err := gridEvidence(modelPath, h, noEvid)
	if err != nil {
		return 0, err
	}
	if evPath != "" {
		defer note(fmt.Sprintf("applied evidence %s (%d observed variables); --no-evid ignores it", evPath, ev.Len()))
	}
	obs := make([]int, ev.Len()) // the observations by variable, checked piece by piece
	for i := range obs {
		obs[i] = i
	}
	slices.SortFunc(obs, func(a, b int) int { return ev.Vars[a] - ev.Vars[b] })
	rows, cols := max(1, min(H, energyBand/W)), min(W, energyBand)
	lab := make([]int32, (rows+1)*min(W, cols+2)) // and a column either side, the row below
	x := make([]int, rows*cols)
	e := h.Offset
	for y0 := 0; y0 < H; y0 += rows {
		k := min(rows, H-y0)
		for x0 := 0; x0 < W; x0 += cols {
			w := min(cols, W-x0)
			// The labels of [x0, x0+w) × [y0, y0+k) and of the pixels its
			// edges reach: a column either side, the next row.
			lx0, lx1, ly1 := max(x0-1, 0), min(x0+w+1, W), min(y0+k+1, H)
			lw := lx1 - lx0
			if err := f.ReadRect(lx0, y0, lw, ly1-y0, lab[:(ly1-y0)*lw]); err != nil {
				return 0, err
			}
			at := func(p int) int { return (p/W-y0)*lw + p%W - lx0 } // pixel p in lab
			for j := range k {
				for i, l := range lab[j*lw+x0-lx0:][:w] {
					x[j*w+i] = int(l)
				}
			}
			// Raster order within the piece is raster order overall: a piece
			// is whole rows or part of one row.
			for ; len(obs) > 0 && ev.Vars[obs[0]] < (y0+k-1)*W+x0+w; obs = obs[1:] {
				if v, l := ev.Vars[obs[0]], ev.Labels[obs[0]]; int(lab[at(v)]) != l {
					note(fmt.Sprintf("the labeling gives variable %d label %d, the evidence %d: energy +Inf", v, lab[at(v)], l))
					return math.Inf(1), nil
				}
			}
			win, err := r.ReadWindow(x0, y0, w, k)
			if err != nil {
				return 0, err
			}
			e += win.Model.Energy(x[:k*w])
			for _, c := range win.Crossing {
				if ux, uy := c.U%W, c.U/W; ux < x0 || ux >= x0+w || uy < y0 || uy >= y0+k {
					continue // from a piece before: counted there
				}
				e += win.Model.Func(c.Func).Pairwise(int(lab[at(c.U)]), int(lab[at(c.V)]))
			}
		}
	}
	return e, nil
}
