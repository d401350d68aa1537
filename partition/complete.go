package partition

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/partopt/partopt/complete"
	"github.com/partopt/partopt/model"
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

// RasterBounds bound a raster's completion: at most MaxUndecided undecided
// pixels, a component's window at most MaxWindow pixels, components solved by
// Workers goroutines (≤ 0: one a CPU).
type RasterBounds struct {
	MaxUndecided, MaxWindow, Workers int
}

// CompleteRaster completes the labeling of raster r whose alive labels are
// proven (a label elimination's planes, out of core): the undecided pixels
// (more than one label alive) fall into 4-connected components, and each is
// solved over its alive labels by complete.Complete on the window of its
// bounding box grown by a pixel (every factor of the component's pixels lies
// in it), the decided pixels and the other components' pixels at their labels
// in labeling, which receives each component's labels — its pixels alone, so
// that components solved at once never write over each other. Memory is that
// of the undecided pixels and of a window a worker: with more than
// bounds.MaxUndecided undecided pixels, or a component whose window has more
// than bounds.MaxWindow pixels, nothing (that component) is completed, and the
// result says so.
func CompleteRaster(ctx context.Context, r Raster, alive AliveLabels, labeling Store, b complete.Budget, bounds RasterBounds) (*RasterCompletion, error) {
	undecided, err := undecidedPixels(alive, r.Width, r.Height, bounds.MaxUndecided)
	if err != nil {
		return nil, err
	}
	if undecided == nil {
		return &RasterCompletion{Skipped: fmt.Sprintf("more than %d undecided pixels", bounds.MaxUndecided)}, nil
	}
	comps := pixelComponents(undecided, r.Width)
	labeling = &lockedStore{s: labeling}
	out := &RasterCompletion{Components: make([]complete.Solved, len(comps)), Optimal: true}
	err = eachComponent(ctx, comps, bounds.Workers, func(i int, comp []int64) error {
		s, err := completeComponent(ctx, r, alive, labeling, comp, b, bounds.MaxWindow)
		out.Components[i] = s
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, s := range out.Components {
		out.Optimal = out.Optimal && s.Exact
	}
	return out, nil
}

// eachComponent calls f on every component by index, on workers goroutines
// (≤ 0: one a CPU); the first error (by index) is returned, and stops handing
// out the others.
func eachComponent(ctx context.Context, comps [][]int64, workers int, f func(i int, comp []int64) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(comps))
	stopped := forEachWindow(ctx, len(comps), workers, func(i int) {
		if errs[i] = f(i, comps[i]); errs[i] != nil {
			cancel()
		}
	}, func(int) {})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return stopped
}

// lockedStore is a Store that one goroutine at a time reads or writes: the
// workers of a completion share the labeling (a Store need not be safe for
// concurrent use; MemStore is not).
type lockedStore struct {
	mu sync.Mutex
	s  Store
}

func (l *lockedStore) ReadRect(x0, y0, w, h int, dst []int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.ReadRect(x0, y0, w, h, dst)
}

func (l *lockedStore) WriteRect(x0, y0, w, h int, src []int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.WriteRect(x0, y0, w, h, src)
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

// componentWindow is a component's problem: the raster window of its bounding
// box grown by a pixel (win), the window's model, each window pixel's alive
// labels with every pixel but comp's at its label in labeling (labels), so
// that the window's one component is comp; ok false when win has more than
// maxWindow pixels (then nothing is read).
type componentWindow struct {
	win     Rect
	m       *model.Model
	domains [][]int
	labels  []int32
}

func readComponent(r Raster, alive AliveLabels, labeling Store, comp []int64, maxWindow int) (cw componentWindow, ok bool, err error) {
	w := int64(r.Width)
	box := Rect{X0: r.Width, Y0: int(comp[0] / w)}
	x1, y1 := 0, int(comp[len(comp)-1]/w)
	for _, p := range comp {
		x := int(p % w)
		box.X0, x1 = min(box.X0, x), max(x1, x)
	}
	box.W, box.H = x1-box.X0+1, y1-box.Y0+1
	win := box.grow(1, r.Width, r.Height)
	cw.win = win
	if win.Pixels() > maxWindow {
		return cw, false, nil
	}
	if cw.m, err = r.Window(win.X0, win.Y0, win.W, win.H); err != nil {
		return cw, false, err
	}
	if cw.domains, err = alive.ReadDomains(win); err != nil {
		return cw, false, err
	}
	cw.labels = make([]int32, win.Pixels())
	if err := labeling.ReadRect(win.X0, win.Y0, win.W, win.H, cw.labels); err != nil {
		return cw, false, err
	}
	member := make([]bool, win.Pixels())
	for _, p := range comp {
		member[(int(p/w)-win.Y0)*win.W+int(p%w)-win.X0] = true
	}
	for i, l := range cw.labels {
		if !slices.Contains(cw.domains[i], int(l)) {
			return cw, false, fmt.Errorf("partition: pixel (%d, %d) takes label %d, which is not alive", win.X0+i%win.W, win.Y0+i/win.W, l)
		}
		if !member[i] {
			cw.domains[i] = []int{int(l)}
		}
	}
	return cw, true, nil
}

// start is the window's labeling.
func (cw componentWindow) start() []int {
	x := make([]int, len(cw.labels))
	for i, l := range cw.labels {
		x[i] = int(l)
	}
	return x
}

// pixel is the raster pixel of window variable v.
func (cw componentWindow) pixel(v, width int) int {
	return (cw.win.Y0+v/cw.win.W)*width + cw.win.X0 + v%cw.win.W
}

// tooLarge is the reason a component whose window is past maxWindow stays open.
func tooLarge(win Rect, maxWindow int) string {
	return fmt.Sprintf("its window of %d×%d pixels is larger than %d", win.W, win.H, maxWindow)
}

// completeComponent solves the component comp (ascending pixels) and writes
// its labels into labeling.
func completeComponent(ctx context.Context, r Raster, alive AliveLabels, labeling Store, comp []int64, b complete.Budget, maxWindow int) (complete.Solved, error) {
	vars := make([]int, len(comp))
	for i, p := range comp {
		vars[i] = int(p)
	}
	cw, ok, err := readComponent(r, alive, labeling, comp, maxWindow)
	if err != nil || !ok {
		return complete.Solved{Vars: vars, Method: complete.Open, Reason: tooLarge(cw.win, maxWindow)}, err
	}
	res, err := complete.Complete(ctx, cw.m, cw.domains, cw.start(), b)
	if err != nil {
		return complete.Solved{}, fmt.Errorf("partition: the component of pixel %d: %w", comp[0], err)
	}
	if len(res.Components) != 1 {
		return complete.Solved{}, fmt.Errorf("partition: the component of pixel %d split in %d in its window", comp[0], len(res.Components))
	}
	s := res.Components[0]
	for i, v := range s.Vars {
		cw.labels[v] = int32(s.Labels[i])
		s.Vars[i] = cw.pixel(v, r.Width)
	}
	// The component's runs of pixels along its rows (s.Vars ascend).
	w := r.Width
	for i := 0; i < len(s.Vars); {
		j := i + 1
		for j < len(s.Vars) && s.Vars[j] == s.Vars[j-1]+1 && s.Vars[j]%w != 0 {
			j++
		}
		x, y := s.Vars[i]%w, s.Vars[i]/w
		at := (y-cw.win.Y0)*cw.win.W + x - cw.win.X0
		if err := labeling.WriteRect(x, y, j-i, 1, cw.labels[at:at+j-i]); err != nil {
			return complete.Solved{}, err
		}
		i = j
	}
	return s, nil
}

// CheckRaster re-checks a completed raster labeling from the model alone:
// each component of the undecided pixels of alive (the replayed proofs') is
// solved again on its window (complete.Check) and labeling's labels there must
// be a minimum. Bounds and memory as CompleteRaster's; skipped says why
// nothing was checked.
func CheckRaster(ctx context.Context, r Raster, alive AliveLabels, labeling Store, b complete.Budget, bounds RasterBounds) (checked []complete.Checked, skipped string, err error) {
	undecided, err := undecidedPixels(alive, r.Width, r.Height, bounds.MaxUndecided)
	if err != nil {
		return nil, "", err
	}
	if undecided == nil {
		return nil, fmt.Sprintf("more than %d undecided pixels", bounds.MaxUndecided), nil
	}
	comps := pixelComponents(undecided, r.Width)
	labeling = &lockedStore{s: labeling}
	checked = make([]complete.Checked, len(comps))
	err = eachComponent(ctx, comps, bounds.Workers, func(i int, comp []int64) error {
		vars := make([]int, len(comp))
		for i, p := range comp {
			vars[i] = int(p)
		}
		cw, ok, err := readComponent(r, alive, labeling, comp, bounds.MaxWindow)
		if err != nil {
			return err
		}
		if !ok {
			checked[i] = complete.Checked{Vars: vars, Method: complete.Open}
			return nil
		}
		cs, err := complete.Check(ctx, cw.m, cw.domains, cw.start(), b)
		if err != nil {
			return fmt.Errorf("partition: the component of pixel %d: %w", comp[0], err)
		}
		if len(cs) != 1 {
			return fmt.Errorf("partition: the component of pixel %d split in %d in its window", comp[0], len(cs))
		}
		checked[i] = cs[0]
		checked[i].Vars = vars
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return checked, "", nil
}
