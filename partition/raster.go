package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// Rect is the rectangle [X0, X0+W) × [Y0, Y0+H) of a raster grid.
type Rect struct{ X0, Y0, W, H int }

// Pixels is W·H.
func (r Rect) Pixels() int { return r.W * r.H }

func (r Rect) contains(x, y int) bool {
	return x >= r.X0 && x < r.X0+r.W && y >= r.Y0 && y < r.Y0+r.H
}

// grow extends r by d pixels on every side, clipped to the w×h grid.
func (r Rect) grow(d, w, h int) Rect {
	x0, y0 := max(r.X0-d, 0), max(r.Y0-d, 0)
	return Rect{x0, y0, min(r.X0+r.W+d, w) - x0, min(r.Y0+r.H+d, h) - y0}
}

// RasterWindow is a window of a raster plan: Core tiles the grid, Nodes is the core
// plus the halo, clipped to the grid.
type RasterWindow struct{ Core, Nodes Rect }

// RasterWindows tiles a w×h grid with core×core tiles, the first tile corner at
// (−shift, −shift) modulo core, each extended by halo pixels; GridPlan is the same
// plan as node lists.
func RasterWindows(w, h, core, halo, shift int) []RasterWindow {
	core = max(core, 1)
	shift %= core
	var out []RasterWindow
	for y0 := -shift; y0 < h; y0 += core {
		for x0 := -shift; x0 < w; x0 += core {
			c := Rect{x0, y0, core, core}.grow(0, w, h)
			if c.W > 0 && c.H > 0 {
				out = append(out, RasterWindow{Core: c, Nodes: c.grow(halo, w, h)})
			}
		}
	}
	return out
}

// Raster is a w×h grid model (variable y·Width+x) read by rectangles: Window returns
// the model induced by a rectangle, variable j·w+i being pixel (x0+i, y0+j) — what
// grid.Reader.Window returns for a tiled file. RasterOf adapts an in-memory model.
type Raster struct {
	Width, Height int
	Window        func(x0, y0, w, h int) (*model.Model, error)
	// Model is the whole model where it is in memory (RasterOf): a window
	// with nothing fixed around it induces its problem from it directly,
	// instead of from its rectangle's model (the same sub-model).
	Model *model.Model
}

// RasterOf presents m as a width×height raster (it must have width·height variables).
func RasterOf(m *model.Model, width, height int) (Raster, error) {
	if width < 1 || height < 1 || width*height != m.NumVars() {
		return Raster{}, fmt.Errorf("partition: a %d×%d raster needs %d variables, the model has %d", width, height, width*height, m.NumVars())
	}
	return Raster{Width: width, Height: height, Window: func(x0, y0, w, h int) (*model.Model, error) {
		sub, err := m.Induced(Rect{x0, y0, w, h}.vars(width))
		if err != nil {
			return nil, err
		}
		return sub.Model, nil
	}, Model: m}, nil
}

// Store is a raster of int32 values read and written by rectangles, row-major
// (labelfile.File implements it; NewMemStore is in memory).
type Store interface {
	ReadRect(x0, y0, w, h int, dst []int32) error
	WriteRect(x0, y0, w, h int, src []int32) error
}

// MemStore is an in-memory Store.
type MemStore struct {
	Width  int
	Values []int32
}

// NewMemStore returns a zeroed w×h MemStore.
func NewMemStore(w, h int) *MemStore { return &MemStore{Width: w, Values: make([]int32, w*h)} }

// ReadRect copies the rectangle into dst.
func (s *MemStore) ReadRect(x0, y0, w, h int, dst []int32) error {
	for j := range h {
		copy(dst[j*w:(j+1)*w], s.Values[(y0+j)*s.Width+x0:])
	}
	return nil
}

// WriteRect copies src into the rectangle.
func (s *MemStore) WriteRect(x0, y0, w, h int, src []int32) error {
	for j := range h {
		copy(s.Values[(y0+j)*s.Width+x0:][:w], src[j*w:(j+1)*w])
	}
	return nil
}

// RasterOptions configure SolveRaster.
type RasterOptions struct {
	// Core and Halo size the windows in pixels (RasterWindows).
	Core, Halo int
	// Shift returns the plan shift of a round (default: round·Core/2, so that a
	// round's core borders fall inside the previous round's cores).
	Shift func(round int) int
	// Persistency configures each window's solve (Candidates is set by SolveRaster).
	Persistency persistency.Options
	// Workers is the number of windows solved at once (default 1); a round of
	// fewer windows gives them the idle workers' cores (spare).
	Workers int
	// MaxRounds bounds the rounds (default 1); rounds also stop when one proves nothing new.
	MaxRounds int
	// Progress, if set, is called after every merged window, serially.
	Progress func(RasterProgress)
	// Proofs, if set, receives every merged window's proof, in merge order.
	Proofs *ProofWriter
}

// RasterProgress reports a merged window.
type RasterProgress struct {
	Round, WindowsDone, Windows int
	// Persistent is the number of pixels proven so far (fixed ones included).
	Persistent int64
	// Resuming says that the windows done so far are an earlier run's results
	// merged again (a resumed run): they took no time of this one, so they
	// tell nothing of its pace.
	Resuming bool
	// Reused counts the windows of the round merged or waiting from an
	// earlier run's results (a resumed run's): no pace of this one either.
	Reused int
	// Waiting counts the windows of the round solved and stored but not yet
	// merged: windows merge in plan order, so a solved window waits for every
	// window before it (after a resume, for those that were under way).
	Waiting int
}

// RasterResult summarises SolveRaster; the labels themselves are in the stores.
type RasterResult struct {
	Rounds int
	// Windows counts the windows of all rounds; Solved those with a free pixel,
	// which were read and solved (the others were skipped).
	Windows, Solved int
	// Persistent is the number of pixels whose persistent value is set (fixed
	// ones included).
	Persistent int64
	// WindowSeconds is the time spent in windows (reading, conditioning and
	// solving), summed over workers; MaxWindowVars the largest window model.
	WindowSeconds     float64
	MaxWindowVars     int
	PruningIterations int
	SolverIterations  int
}

// MaxWindowPixels bounds a raster window (core and halo): what one window's
// model and solver state may take in memory, for SolveRaster and for the
// replay of a certificates file that may claim any window.
const MaxWindowPixels = 1 << 26

// SolveRaster runs windowed persistency on a raster out of core: only the windows
// being solved or waiting to be merged are in memory. The labels live in stores of
// the raster's size: persistent holds label+1 for a proven pixel and 0 elsewhere
// (values already set are fixed: evidence, or a previous run's proofs); labeling
// receives a full labeling, the proven labels and elsewhere the window's relaxed
// labeling of its core; scratch holds the labels fixed before the current round.
// Windows are merged in plan order (later wins), so the stores' contents depend only
// on the raster and the options, never on the worker count or completion order, and
// equal those of Solve with the same GridPlan on the in-memory model.
func SolveRaster(ctx context.Context, r Raster, persistent, labeling, scratch Store, opt RasterOptions) (*RasterResult, error) {
	if r.Width < 1 || r.Height < 1 {
		return nil, fmt.Errorf("partition: raster %d×%d is empty", r.Width, r.Height)
	}
	if opt.Core < 1 || opt.Halo < 0 {
		return nil, fmt.Errorf("partition: window core %d and halo %d: need core ≥ 1, halo ≥ 0", opt.Core, opt.Halo)
	}
	if side := int64(opt.Core) + 2*int64(opt.Halo); side*side > MaxWindowPixels {
		return nil, fmt.Errorf("partition: window core %d and halo %d: windows of %d² pixels, at most %d", opt.Core, opt.Halo, side, int64(MaxWindowPixels))
	}
	shift := opt.Shift
	if shift == nil {
		shift = func(round int) int { return round * opt.Core / 2 }
	}
	res := &RasterResult{}
	var err error
	if res.Persistent, err = CopyStore(scratch, persistent, r.Width, r.Height); err != nil {
		return nil, err
	}
	for round := 0; round < max(opt.MaxRounds, 1); round++ {
		wins := RasterWindows(r.Width, r.Height, opt.Core, opt.Halo, shift(round))
		before := res.Persistent
		if err := runRound(ctx, r, wins, round, persistent, labeling, scratch, opt, res); err != nil {
			return nil, err
		}
		res.Rounds++
		if res.Persistent, err = CopyStore(scratch, persistent, r.Width, r.Height); err != nil {
			return nil, err
		}
		if res.Persistent == before || res.Persistent == int64(r.Width)*int64(r.Height) {
			break
		}
	}
	return res, OverrideLabels(labeling, persistent, r.Width, r.Height)
}

// CopyStore copies the w×h store src to dst (before a round: the persistent map to
// the labels the round's windows condition on) and returns its nonzero count, the
// pixels proven or fixed.
func CopyStore(dst, src Store, w, h int) (int64, error) {
	return copyStore(dst, src, Rect{0, 0, w, h}, nil)
}

// OverrideLabels sets the labeling of every proven pixel to its proven label (after
// the last round: the relaxed labels of the windows are only for the others).
func OverrideLabels(labeling, persistent Store, w, h int) error {
	_, err := copyStore(labeling, persistent, Rect{0, 0, w, h}, func(p, l int32) int32 {
		if p > 0 {
			return p - 1
		}
		return l
	})
	return err
}

// copyStore copies src to dst over rect r in blocks, each value through f(src, dst)
// when f is set, and counts the nonzero values of src.
func copyStore(dst, src Store, r Rect, f func(s, d int32) int32) (int64, error) {
	const block = 1024
	var nonzero int64
	s := make([]int32, min(r.W, block)*min(r.H, block))
	var d []int32
	if f != nil {
		d = make([]int32, len(s))
	}
	for y := r.Y0; y < r.Y0+r.H; y += block {
		for x := r.X0; x < r.X0+r.W; x += block {
			w, h := min(block, r.X0+r.W-x), min(block, r.Y0+r.H-y)
			s, d := s[:w*h], d[:min(len(d), w*h)]
			if err := src.ReadRect(x, y, w, h, s); err != nil {
				return 0, err
			}
			for _, v := range s {
				if v != 0 {
					nonzero++
				}
			}
			if f != nil {
				if err := dst.ReadRect(x, y, w, h, d); err != nil {
					return 0, err
				}
				for i := range d {
					d[i] = f(s[i], d[i])
				}
				s = d
			}
			if err := dst.WriteRect(x, y, w, h, s); err != nil {
				return 0, err
			}
		}
	}
	return nonzero, nil
}

// WindowResult is a solved window of a raster, as SolveWindow returns it and
// MergeWindow merges it.
type WindowResult struct {
	// Persistent is over the window's Nodes rectangle (row-major): label+1 where
	// proven, else 0. Labeling is over its Core: the relaxed label of a free pixel,
	// −1 for a fixed one. Both are nil when the window had no free pixel (Vars 0).
	Persistent, Labeling []int32
	// Vars is the size of the window's model; the iteration counts are
	// persistency.Result's; Seconds the time of SolveWindow.
	Vars, PruningIterations, SolverIterations int
	Seconds                                   float64
	// Proof is the window's Algorithm 1 result over its extent model (the
	// window's nodes and their neighbours, conditioned on the fixed labels),
	// certificate included: what CheckRasterWindow re-checks. Nil when Vars is 0.
	Proof *persistency.Result
}

// runRound solves a round's windows on a pool of workers and merges them in plan
// order as they become mergeable (inPlanOrder).
func runRound(ctx context.Context, r Raster, wins []RasterWindow, round int, persistent, labeling, fixed Store, opt RasterOptions, res *RasterResult) error {
	popt := opt.Persistency
	popt.Solver = spare(popt.Solver, len(wins), opt.Workers)
	solve := func(ctx context.Context, i int) (*WindowResult, error) {
		return SolveWindow(ctx, r, wins[i], fixed, popt)
	}
	merge := func(i int, out *WindowResult) error {
		added, err := MergeWindow(wins[i], out, persistent, labeling)
		if err == nil && opt.Proofs != nil && out.Vars > 0 {
			err = opt.Proofs.Raster(round, wins[i].Nodes, out.Proof)
		}
		if err != nil {
			return err
		}
		res.Persistent += added
		res.Windows++
		if out.Vars > 0 {
			res.Solved++
		}
		res.WindowSeconds += out.Seconds
		res.MaxWindowVars = max(res.MaxWindowVars, out.Vars)
		res.PruningIterations += out.PruningIterations
		res.SolverIterations += out.SolverIterations
		if opt.Progress != nil {
			opt.Progress(RasterProgress{Round: round, WindowsDone: i + 1, Windows: len(wins), Persistent: res.Persistent})
		}
		return nil
	}
	return inPlanOrder(ctx, wins, round, opt.Workers, solve, merge)
}

// inPlanOrder solves the windows on a pool of workers goroutines and merges each
// result in plan order as it becomes mergeable. At most 4 × workers windows are
// dispatched beyond the next one to merge, which bounds the results held in
// memory. The first error, a window's or a merge's, ends it.
func inPlanOrder[T any](ctx context.Context, wins []RasterWindow, round, workers int, solve func(ctx context.Context, i int) (T, error), merge func(i int, out T) error) error {
	type solved struct {
		i   int
		out T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	workers = max(workers, 1)
	lookahead := 4 * workers
	// Neither channel ever blocks a sender: at most lookahead windows are out.
	jobs := make(chan int, lookahead)
	results := make(chan solved, lookahead)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				out, err := solve(ctx, i)
				results <- solved{i, out, err}
			}
		})
	}
	defer func() {
		close(jobs)
		cancel()
		wg.Wait()
	}()
	pending := map[int]solved{}
	next, merged := 0, 0
	for merged < len(wins) {
		for ; next < len(wins) && next < merged+lookahead; next++ {
			jobs <- next
		}
		select {
		case out := <-results:
			pending[out.i] = out
		case <-ctx.Done():
			return ctx.Err()
		}
		for out, ok := pending[merged]; ok; out, ok = pending[merged] {
			delete(pending, merged)
			if out.err != nil {
				return fmt.Errorf("partition: round %d, window %d (core %v): %w", round, merged, wins[merged].Core, out.err)
			}
			if err := merge(merged, out.out); err != nil {
				return err
			}
			merged++
		}
	}
	return nil
}

// MergeWindow writes a window's result into the stores and returns the number of
// pixels it proved that were not proven before. Windows must be merged in plan
// order (later windows win on overlaps).
func MergeWindow(win RasterWindow, out *WindowResult, persistent, labeling Store) (int64, error) {
	if out == nil || out.Vars == 0 {
		return 0, nil
	}
	n := win.Nodes
	if len(out.Persistent) != n.Pixels() || len(out.Labeling) != win.Core.Pixels() {
		return 0, fmt.Errorf("partition: a result of %d and %d labels for a window of %d nodes and %d core pixels", len(out.Persistent), len(out.Labeling), n.Pixels(), win.Core.Pixels())
	}
	cur := make([]int32, n.Pixels())
	if err := persistent.ReadRect(n.X0, n.Y0, n.W, n.H, cur); err != nil {
		return 0, err
	}
	var added int64
	for i, p := range out.Persistent {
		if p > 0 {
			if cur[i] == 0 {
				added++
			}
			cur[i] = p
		}
	}
	if err := persistent.WriteRect(n.X0, n.Y0, n.W, n.H, cur); err != nil {
		return 0, err
	}
	c := win.Core
	lab := cur[:c.Pixels()]
	if err := labeling.ReadRect(c.X0, c.Y0, c.W, c.H, lab); err != nil {
		return 0, err
	}
	for i, l := range out.Labeling {
		if l >= 0 {
			lab[i] = l
		}
	}
	return added, labeling.WriteRect(c.X0, c.Y0, c.W, c.H, lab)
}

// SolveWindow solves one window of a raster, conditioned on the labels fixed in the
// store fixed (label+1, or 0 for free): the model of its nodes grown by two pixels
// (their outside neighbours and those neighbours' neighbours, so that conditioning
// folds every fixed label into the unaries exactly as on the whole model) is
// conditioned and solved like a window of Solve. A window without a free node is
// skipped (Vars 0).
func SolveWindow(ctx context.Context, r Raster, win RasterWindow, fixed Store, opt persistency.Options) (*WindowResult, error) {
	start := time.Now()
	out := &WindowResult{}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := rasterWindowProblem(r, win, fixed)
	if err != nil || p.sub == nil {
		return out, err
	}
	e := p.e
	res, err := persistency.Run(ctx, p.sub, windowOptions(opt, p.candidates))
	if err != nil {
		return nil, err
	}
	pr := Proof{Vars: p.vars, Result: res}
	out.Proof = res
	out.Persistent = make([]int32, win.Nodes.Pixels())
	out.Labeling = make([]int32, win.Core.Pixels())
	for i := range out.Labeling {
		out.Labeling[i] = -1
	}
	for j, v := range pr.Vars {
		x, y := e.X0+v%e.W, e.Y0+v/e.W
		if n := win.Nodes; n.contains(x, y) {
			if l := pr.Result.Persistent[j]; l >= 0 {
				out.Persistent[(y-n.Y0)*n.W+x-n.X0] = int32(l + 1)
			}
		}
		if c := win.Core; c.contains(x, y) {
			out.Labeling[(y-c.Y0)*c.W+x-c.X0] = int32(pr.Result.Labeling[j])
		}
	}
	out.Vars = len(pr.Vars)
	out.PruningIterations = pr.Result.PruningIterations
	out.SolverIterations = pr.Result.SolverIterations
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// rasterProblem is the problem Algorithm 1 solves for a raster window: the
// window's nodes grown by two pixels (e), conditioned on the fixed labels, as
// windowProblem (vars are pixels of e, y·e.W + x).
type rasterProblem struct {
	windowProblem
	e Rect
}

// rasterWindowProblem builds the problem of window win conditioned on fixed, as
// SolveWindow solves it and CheckRasterWindow re-checks it.
func rasterWindowProblem(r Raster, win RasterWindow, fixed Store) (rasterProblem, error) {
	p := rasterProblem{e: win.Nodes.grow(2, r.Width, r.Height)}
	e := p.e
	vals := make([]int32, e.Pixels())
	if err := fixed.ReadRect(e.X0, e.Y0, e.W, e.H, vals); err != nil {
		return p, err
	}
	var nodes []int // window nodes as variables of e's model
	labels := make([]int, len(vals))
	fixedAny := false
	for i, v := range vals {
		labels[i] = int(v) - 1
		if x, y := e.X0+i%e.W, e.Y0+i/e.W; v == 0 && win.Nodes.contains(x, y) {
			nodes = append(nodes, i)
		}
		fixedAny = fixedAny || v != 0
	}
	if len(nodes) == 0 {
		return p, nil
	}
	if r.Model != nil && !fixedAny {
		var err error
		p.windowProblem, err = inducedWindow(r.Model, r.Width, e, win.Nodes)
		return p, err
	}
	m, err := r.Window(e.X0, e.Y0, e.W, e.H)
	if err != nil {
		return p, err
	}
	p.windowProblem, err = conditionedProblem(m, labels, nodes)
	return p, err
}

// inducedWindow is conditionedProblem of the window nodes (every pixel of
// nodes, inside e) of e's model with nothing fixed, induced from the whole
// model m of width w directly: e's model is m's factors inside e, and m's
// factors inside the nodes and their neighbours in e are the same factors in
// the same order (Induced keeps them ascending, and ascending pixels of a
// rectangle are ascending variables of m), without e's model in between.
func inducedWindow(m *model.Model, w int, e, nodes Rect) (windowProblem, error) {
	inE := func(v int) bool { return e.contains(v%w, v/w) }
	in := make([]bool, e.Pixels()) // grow(e's model, nodes, 1), by pixel of e
	local := func(v int) int { return (v/w-e.Y0)*e.W + v%w - e.X0 }
	for _, v := range nodes.vars(w) {
		in[local(v)] = true
		for _, f := range m.VarFactors(v) {
			fv := m.FactorVars(int(f))
			if !slices.ContainsFunc(fv, func(u int32) bool { return !inE(int(u)) }) { // a factor of e's model
				for _, u := range fv {
					in[local(int(u))] = true
				}
			}
		}
	}
	var ext []int // m's variables
	p := windowProblem{}
	for i, ok := range in {
		if ok {
			x, y := e.X0+i%e.W, e.Y0+i/e.W
			ext = append(ext, y*w+x)
			p.vars = append(p.vars, i)
			p.candidates = append(p.candidates, nodes.contains(x, y))
		}
	}
	sub, err := m.Induced(ext)
	if err != nil {
		return windowProblem{}, err
	}
	p.sub = sub.Model
	return p, nil
}

// CheckRasterWindow re-checks a window's result against the model, as a
// coordinator does for a result from the network: the persistent labels it
// claims over the window's nodes (WindowResult.Persistent) must be exactly those
// its proof proves (ProvenRasterWindow). A window without a free node must
// claim nothing.
func CheckRasterWindow(r Raster, win RasterWindow, fixed Store, claimed []int32, proof ProofSource) error {
	want, err := ProvenRasterWindow(r, win, fixed, proof)
	if err != nil {
		return err
	}
	return sameClaim(claimed, want)
}

// ProvenRasterWindow rebuilds window win's problem from r and the labels fixed
// before its round (fixed), checks the proof's certificate on it
// (persistency.Verify), and returns what it proves over the window's nodes
// rectangle: label+1 where proven, else 0. A window without a free node proves
// nothing, whatever its proof.
func ProvenRasterWindow(r Raster, win RasterWindow, fixed Store, proof ProofSource) ([]int32, error) {
	p, err := rasterWindowProblem(r, win, fixed)
	if err != nil {
		return nil, err
	}
	want := make([]int32, win.Nodes.Pixels())
	if p.sub != nil {
		proven, err := checkProof(p.windowProblem, proof)
		if err != nil {
			return nil, err
		}
		n := win.Nodes
		for j, v := range p.vars {
			if x, y := p.e.X0+v%p.e.W, p.e.Y0+v/p.e.W; n.contains(x, y) {
				want[(y-n.Y0)*n.W+x-n.X0] = proven[j]
			}
		}
	}
	return want, nil
}

// sameClaim checks that the persistent labels a result claims over a window's
// nodes are want, those its proof proves (nil claims nothing).
func sameClaim(claimed, want []int32) error {
	if claimed == nil && !slices.ContainsFunc(want, func(l int32) bool { return l != 0 }) {
		return nil
	}
	if !slices.Equal(claimed, want) {
		return errors.New("partition: the persistent labels claimed over the window's nodes are not those its proof proves")
	}
	return nil
}

// solveConditioned solves the window nodes (variables of m, free in labels) of m
// conditioned on labels (−1: free), as Solve solves a window, and returns the proof
// over m's variables.
func solveConditioned(ctx context.Context, m *model.Model, labels, nodes []int, opt persistency.Options) (Proof, error) {
	p, err := conditionedProblem(m, labels, nodes)
	if err != nil {
		return Proof{}, err
	}
	if p.sub == nil {
		return Proof{}, errors.New("window with free nodes gave no result")
	}
	res, err := persistency.Run(ctx, p.sub, windowOptions(opt, p.candidates))
	if err != nil {
		return Proof{}, err
	}
	return Proof{Vars: p.vars, Result: res}, nil
}

// vars lists the variables y·width+x of the rectangle's pixels, ascending.
func (r Rect) vars(width int) []int {
	out := make([]int, 0, r.Pixels())
	for y := r.Y0; y < r.Y0+r.H; y++ {
		for x := r.X0; x < r.X0+r.W; x++ {
			out = append(out, y*width+x)
		}
	}
	return out
}
