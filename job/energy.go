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
// at modelPath, read band by band (a model beyond memory): each band's
// unaries and inner edges, and the edges from its last row to the next band's
// first. With evidence (unless noEvid) a labeling that disagrees with it has
// energy +Inf (conditioning changes no other energy).
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
	obs := make([]int, ev.Len()) // the observations by variable, checked band by band
	for i := range obs {
		obs[i] = i
	}
	slices.SortFunc(obs, func(a, b int) int { return ev.Vars[a] - ev.Vars[b] })
	rows := max(1, min(H, energyBand/W))
	lab := make([]int32, (rows+1)*W)
	x := make([]int, rows*W)
	e := h.Offset
	for y0 := 0; y0 < H; y0 += rows {
		k := min(rows, H-y0)
		next := min(k+1, H-y0) // and the next band's first row, for the edges into it
		if err := f.ReadRect(0, y0, W, next, lab[:next*W]); err != nil {
			return 0, err
		}
		for i := range x[:k*W] {
			x[i] = int(lab[i])
		}
		for ; len(obs) > 0 && ev.Vars[obs[0]] < (y0+k)*W; obs = obs[1:] {
			if v, l := ev.Vars[obs[0]], ev.Labels[obs[0]]; x[v-y0*W] != l {
				note(fmt.Sprintf("the labeling gives variable %d label %d, the evidence %d: energy +Inf", v, x[v-y0*W], l))
				return math.Inf(1), nil
			}
		}
		win, err := r.ReadWindow(0, y0, W, k)
		if err != nil {
			return 0, err
		}
		e += win.Model.Energy(x[:k*W])
		for _, c := range win.Crossing {
			if c.U/W < y0 || c.U/W >= y0+k {
				continue // from the band above: counted there
			}
			e += win.Model.Func(c.Func).Pairwise(int(lab[c.U-y0*W]), int(lab[c.V-y0*W]))
		}
	}
	return e, nil
}
