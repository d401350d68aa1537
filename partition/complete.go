package partition

import (
	"context"
	"fmt"
	"slices"

	"github.com/partopt/partopt/complete"
)

// RasterCompletion is what CompleteRaster did: every component of the
// undecided pixels (Solved, in the order of their first pixel; Vars are pixel
// indices y·Width+x), or why it did not run (Skipped).
type RasterCompletion struct {
	Components []complete.Solved
	// Optimal says that every component was solved exactly: the labeling then
	// minimises the model.
	Optimal bool
	// Skipped, when not empty, says why nothing was completed (the labeling
	// is unchanged and not optimal).
	Skipped string
}

// CompleteRaster completes the labeling of raster r whose alive labels are
// proven (a label elimination's planes, out of core): the undecided pixels
// (more than one label alive) fall into 4-connected components, and each is
// solved over its alive labels by complete.Complete on the window of its
// bounding box grown by a pixel (every factor of the component's pixels lies
// in it), the decided pixels and the other components' pixels at their labels
// in labeling, which receives each component's labels. Memory is that of the
// undecided pixels and of one window: with more than maxUndecided undecided
// pixels, or a component whose window has more than maxWindow pixels, nothing
// (that component) is completed, and the result says so.
func CompleteRaster(ctx context.Context, r Raster, alive AliveLabels, labeling Store, b complete.Budget, maxUndecided, maxWindow int) (*RasterCompletion, error) {
	w, h := r.Width, r.Height
	undecided, err := undecidedPixels(alive, w, h, maxUndecided)
	if err != nil {
		return nil, err
	}
	if undecided == nil {
		return &RasterCompletion{Skipped: fmt.Sprintf("more than %d undecided pixels", maxUndecided)}, nil
	}
	out := &RasterCompletion{Optimal: true}
	for _, comp := range pixelComponents(undecided, w) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := completeComponent(ctx, r, alive, labeling, comp, b, maxWindow)
		if err != nil {
			return nil, err
		}
		out.Components = append(out.Components, s)
		out.Optimal = out.Optimal && s.Exact
	}
	return out, nil
}

// undecidedPixels lists the pixels with more than one label alive, ascending,
// band by band; nil when there are more than limit.
func undecidedPixels(alive AliveLabels, w, h, limit int) ([]int64, error) {
	out := []int64{}
	view := alive.PersistentView()
	err := bands(w, h, func(band Rect) error {
		pers := make([]int32, band.Pixels())
		if err := view.ReadRect(band.X0, band.Y0, band.W, band.H, pers); err != nil {
			return err
		}
		for i, p := range pers {
			if p == 0 {
				if len(out) == limit {
					return errTooMany
				}
				out = append(out, int64(band.Y0)*int64(w)+int64(i))
			}
		}
		return nil
	})
	if err == errTooMany {
		return nil, nil
	}
	return out, err
}

var errTooMany = fmt.Errorf("partition: too many undecided pixels")

// pixelComponents groups the ascending pixels px of a raster of width w into
// 4-connected components, each ascending, in the order of its first pixel.
func pixelComponents(px []int64, w int) [][]int64 {
	parent := make([]int32, len(px))
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(i int32) int32 {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int32) {
		ra, rb := find(a), find(b)
		parent[max(ra, rb)] = min(ra, rb)
	}
	for i, p := range px {
		if p%int64(w) != int64(w)-1 { // the right neighbour, on the same row
			if j, ok := slices.BinarySearch(px, p+1); ok {
				union(int32(i), int32(j))
			}
		}
		if j, ok := slices.BinarySearch(px, p+int64(w)); ok {
			union(int32(i), int32(j))
		}
	}
	index := map[int32]int{}
	var comps [][]int64
	for i, p := range px {
		r := find(int32(i))
		c, ok := index[r]
		if !ok {
			c = len(comps)
			index[r] = c
			comps = append(comps, nil)
		}
		comps[c] = append(comps[c], p)
	}
	return comps
}

// completeComponent solves the component comp (ascending pixels) and writes
// its labels into labeling.
func completeComponent(ctx context.Context, r Raster, alive AliveLabels, labeling Store, comp []int64, b complete.Budget, maxWindow int) (complete.Solved, error) {
	w := int64(r.Width)
	box := Rect{X0: r.Width, Y0: int(comp[0] / w)}
	x1, y1 := 0, int(comp[len(comp)-1]/w)
	for _, p := range comp {
		x := int(p % w)
		box.X0, x1 = min(box.X0, x), max(x1, x)
	}
	box.W, box.H = x1-box.X0+1, y1-box.Y0+1
	win := box.grow(1, r.Width, r.Height)
	vars := make([]int, len(comp))
	for i, p := range comp {
		vars[i] = int(p)
	}
	if win.Pixels() > maxWindow {
		return complete.Solved{Vars: vars, Method: complete.Open,
			Reason: fmt.Sprintf("its window of %d×%d pixels is larger than %d", win.W, win.H, maxWindow)}, nil
	}
	m, err := r.Window(win.X0, win.Y0, win.W, win.H)
	if err != nil {
		return complete.Solved{}, err
	}
	domains, err := alive.ReadDomains(win)
	if err != nil {
		return complete.Solved{}, err
	}
	labels := make([]int32, win.Pixels())
	if err := labeling.ReadRect(win.X0, win.Y0, win.W, win.H, labels); err != nil {
		return complete.Solved{}, err
	}
	// Only comp keeps its alive labels: every other pixel of the window at its
	// label, so that the window's one open component is comp.
	local := func(p int64) int { return (int(p/w)-win.Y0)*win.W + int(p%w) - win.X0 }
	member := make([]bool, win.Pixels())
	for _, p := range comp {
		member[local(p)] = true
	}
	start := make([]int, win.Pixels())
	for i, l := range labels {
		start[i] = int(l)
		if !member[i] && len(domains[i]) > 1 {
			if !slices.Contains(domains[i], int(l)) {
				return complete.Solved{}, fmt.Errorf("partition: pixel (%d, %d) takes label %d, which is not alive", win.X0+i%win.W, win.Y0+i/win.W, l)
			}
			domains[i] = []int{int(l)}
		}
	}
	res, err := complete.Complete(ctx, m, domains, start, b)
	if err != nil {
		return complete.Solved{}, fmt.Errorf("partition: the component of pixel (%d, %d): %w", comp[0]%w, comp[0]/w, err)
	}
	if len(res.Components) != 1 {
		return complete.Solved{}, fmt.Errorf("partition: the component of pixel (%d, %d) split in %d in its window", comp[0]%w, comp[0]/w, len(res.Components))
	}
	s := res.Components[0]
	for i, v := range s.Vars { // window variables → pixels
		s.Vars[i] = (win.Y0+v/win.W)*r.Width + win.X0 + v%win.W
		labels[v] = int32(s.Labels[i])
	}
	if err := labeling.WriteRect(win.X0, win.Y0, win.W, win.H, labels); err != nil {
		return complete.Solved{}, err
	}
	return s, nil
}
