package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// Label elimination by windows out of core, for raster grids: Eliminate's rounds,
// levels and merge over a Raster (the model read by rectangles) with the labels
// alive in AliveLabels (alive planes, labelfile files on disk) instead of
// [][]int, so memory grows with the windows in flight, never with the pixels.
// A window reads its nodes' rectangle grown by one pixel (Extent: the nodes'
// neighbours, so every factor touching a node) and the labels alive there before
// the round (a scratch copy of the planes, as SolveRaster's fixed labels), and is
// eliminated on exactly the model EliminateWindow builds from the whole model:
// the variables of the extent model within one factor step of the undecided
// nodes, in the same order, restricted to the same domains. Merged in plan order
// by the same rule (each variable's labels become their image under the window's
// map), the planes end as Eliminate's domains, the labeling as its Labeling and
// the proofs as its Proofs, byte for byte (tested).
//
// The pieces are those of a coordinator and its workers: RasterMerger.Window
// gives a window's work (its nodes and the labels alive over its extent),
// EliminateRasterWindow eliminates it where the model is, CheckRasterElimination
// (or ProvenRasterElimination, from a proof's bytes) re-checks it from the model,
// and RasterMerger.Merge merges it in plan order.

// RasterWork is what a window of a raster elimination eliminates over: Nodes,
// the pixels (y·Width+x, ascending) of the window's Nodes rectangle with more
// than one label alive before the round — the variables its map may move — and
// Extent, that rectangle grown by one pixel and clipped, with Domains, the
// labels alive before the round at each of its pixels (row-major). A window
// without Nodes has nothing to do (Domains nil).
type RasterWork struct {
	Window  RasterWindow
	Extent  Rect
	Nodes   []int
	Domains [][]int
}

// RasterElimination is a raster window's elimination: Result over Vars, the
// window's undecided nodes and their neighbours (pixels, ascending) — the
// variables EliminationExtent gives on the whole model.
type RasterElimination struct {
	Vars   []int
	Result *persistency.Elimination
}

// rasterEliminationProblem is the model a raster window is eliminated on, as
// EliminateWindow builds it from the whole model: work's Nodes, Vars (pixels)
// and the Domains of Vars, sub over Vars restricted to them, and which of them
// are nodes.
type rasterEliminationProblem struct {
	sub  *model.Model
	work WindowWork
	cand []bool
}

// newRasterEliminationProblem reads the model of w's extent from r and builds
// the window's elimination problem.
func newRasterEliminationProblem(r Raster, w RasterWork) (rasterEliminationProblem, error) {
	var p rasterEliminationProblem
	e := w.Extent
	if e.W < 1 || e.H < 1 || e.X0 < 0 || e.Y0 < 0 || e.X0+e.W > r.Width || e.Y0+e.H > r.Height {
		return p, fmt.Errorf("partition: a window extent %v outside the %d×%d raster", e, r.Width, r.Height)
	}
	if len(w.Domains) != e.Pixels() || len(w.Nodes) == 0 {
		return p, fmt.Errorf("partition: a window of %d nodes with %d domains over an extent of %d pixels", len(w.Nodes), len(w.Domains), e.Pixels())
	}
	local := make([]int, len(w.Nodes))
	for i, v := range w.Nodes {
		x, y := v%r.Width, v/r.Width
		if v < 0 || !e.contains(x, y) || (i > 0 && v <= w.Nodes[i-1]) {
			return p, fmt.Errorf("partition: node %d is not a pixel of the window's extent %v, or not ascending", v, e)
		}
		local[i] = (y-e.Y0)*e.W + x - e.X0
	}
	m, err := r.Window(e.X0, e.Y0, e.W, e.H)
	if err != nil {
		return p, err
	}
	// Every factor touching a node lies in the extent: grow finds there the
	// neighbours it finds on the whole model, in the same (raster) order.
	lv := EliminationExtent(m, local)
	p.work = WindowWork{Nodes: w.Nodes, Vars: make([]int, len(lv)), Domains: make([][]int, len(lv))}
	p.cand = make([]bool, len(lv))
	for i, l := range lv {
		p.work.Vars[i] = (e.Y0+l/e.W)*r.Width + e.X0 + l%e.W
		p.work.Domains[i] = w.Domains[l]
		_, p.cand[i] = slices.BinarySearch(local, l)
	}
	sub, err := m.Induced(lv)
	if err != nil {
		return p, err
	}
	p.sub, err = sub.Model.Restrict(p.work.Domains)
	return p, err
}

// EliminateRasterWindow runs persistency.Eliminate for a raster window's work w
// (RasterMerger.Window) on the model of its extent read from r: what a worker
// does with a window of a raster elimination.
func EliminateRasterWindow(ctx context.Context, r Raster, w RasterWork, solver persistency.Relaxation) (*RasterElimination, error) {
	return eliminateRasterWindow(ctx, r, w, solver, false)
}

// eliminateRasterWindow is EliminateRasterWindow, the certificate re-checked on
// the window's model when check is set.
func eliminateRasterWindow(ctx context.Context, r Raster, w RasterWork, solver persistency.Relaxation, check bool) (*RasterElimination, error) {
	p, err := newRasterEliminationProblem(r, w)
	if err != nil {
		return nil, err
	}
	e, err := persistency.Eliminate(ctx, p.sub, persistency.EliminateOptions{Solver: solver, Candidates: p.cand, Domains: p.work.Domains})
	if err != nil {
		return nil, err
	}
	if check {
		if err := checkWindowOn(p.sub, p.work, e); err != nil {
			return nil, fmt.Errorf("partition: the window's elimination failed its own verification: %w", err)
		}
	}
	return &RasterElimination{Vars: p.work.Vars, Result: e}, nil
}

// CheckRasterElimination re-verifies a raster window's elimination e over its
// work w from the model (CheckWindow's checks on the model of the window's
// extent read from r): what a coordinator does before it merges a window a
// worker sent.
func CheckRasterElimination(r Raster, w RasterWork, e *RasterElimination) error {
	p, err := newRasterEliminationProblem(r, w)
	if err != nil {
		return err
	}
	if e == nil || e.Result == nil || !slices.Equal(e.Vars, p.work.Vars) {
		return errors.New("partition: an elimination over other variables than the window's")
	}
	return checkWindowOn(p.sub, p.work, e.Result)
}

// ProvenRasterElimination decodes a raster window's elimination from proof (a
// result with its elimination: a window certificates record, a worker's
// message), within what one of the window's model can hold, and checks it as
// CheckRasterElimination does.
func ProvenRasterElimination(r Raster, w RasterWork, proof ProofSource) (*RasterElimination, error) {
	p, err := newRasterEliminationProblem(r, w)
	if err != nil {
		return nil, err
	}
	res, err := proof(p.sub)
	if err != nil {
		return nil, err
	}
	if res == nil || res.Elimination == nil {
		return nil, errors.New("partition: a window result without its elimination")
	}
	if err := checkWindowOn(p.sub, p.work, res.Elimination); err != nil {
		return nil, err
	}
	return &RasterElimination{Vars: p.work.Vars, Result: res.Elimination}, nil
}

// RasterEliminationResult summarises a raster elimination; the labels are in
// the stores.
type RasterEliminationResult struct {
	Rounds, Windows, Level int
	// Solved counts the windows with undecided nodes, eliminated and merged.
	Solved int
	// Persistent counts the pixels left with one label, Eliminated the labels
	// eliminated in all (Σ Labels − alive; what InitAlive left dead included).
	Persistent, Eliminated int64
	MaxWindowVars          int
	SolverIterations       int
	WindowSeconds          float64
}

// RasterMerger holds the state of a raster elimination between windows — the
// labels alive (AliveLabels), a scratch copy of them from before the round,
// the labeling, the counts — and merges windows' eliminations into it in plan
// order: EliminateRaster's loop, a replay's, and a coordinator's.
//
//	g, _ := partition.NewRasterMerger(w, h, alive, prior, labeling)
//	level := 0
//	for round := 0; ; round++ {
//		g.StartRound(round)
//		wins := plan(round, level)
//		for _, win := range wins { // merged in plan order
//			work, _ := g.Window(win)
//			e, _ := partition.EliminateRasterWindow(ctx, r, work, solver) // when work has Nodes
//			g.Merge(work, e)
//		}
//		if !g.EndRound(len(wins), level, maxLevel) {
//			break
//		}
//		if g.Grow() {
//			level++
//		}
//	}
//	res, _ := g.Finish(persistent)
type RasterMerger struct {
	width, height int
	alive, prior  AliveLabels
	labeling      Store // nil: no labeling kept (a replay)

	round      int
	eliminated int64 // labels eliminated in the current round
	before     int64 // in the rounds before it
	persistent int64 // pixels left with one label
	res        RasterEliminationResult
}

// NewRasterMerger starts a raster elimination of a w×h raster from the labels
// alive in alive (InitAlive), with prior, planes of the same size, as the
// scratch copy of the rounds, and labeling (nil: none) receiving the test
// labels of the windows' cores.
func NewRasterMerger(w, h int, alive, prior AliveLabels, labeling Store) (*RasterMerger, error) {
	if err := alive.check(); err != nil {
		return nil, err
	}
	if err := prior.check(); err != nil || prior.Labels != alive.Labels {
		return nil, fmt.Errorf("partition: scratch planes of %d labels for alive labels of %d", prior.Labels, alive.Labels)
	}
	if w < 1 || h < 1 {
		return nil, fmt.Errorf("partition: raster %d×%d is empty", w, h)
	}
	g := &RasterMerger{width: w, height: h, alive: alive, prior: prior, labeling: labeling}
	err := bands(w, h, func(r Rect) error {
		masks := alive.newMasks(r.Pixels())
		if err := alive.readMasks(r, masks); err != nil {
			return err
		}
		for i := range r.Pixels() {
			switch n := aliveCount(masks, i); {
			case n == 0:
				return fmt.Errorf("partition: pixel (%d, %d) has no label alive", r.X0+i%r.W, r.Y0+i/r.W)
			case n == 1:
				g.persistent++
			}
		}
		return nil
	})
	return g, err
}

// StartRound starts round: its windows work on the labels alive now (copied
// to the scratch planes).
func (g *RasterMerger) StartRound(round int) error {
	g.round, g.before, g.eliminated = round, g.before+g.eliminated, 0
	for p := range g.alive.Planes {
		if _, err := CopyStore(g.prior.Planes[p], g.alive.Planes[p], g.width, g.height); err != nil {
			return err
		}
	}
	return nil
}

// Persistent is the number of pixels left with one label.
func (g *RasterMerger) Persistent() int64 { return g.persistent }

// RoundEliminated is the number of labels the current round eliminated so far.
func (g *RasterMerger) RoundEliminated() int64 { return g.eliminated }

// Grow says whether, after the current round, the windows grow (Grows).
func (g *RasterMerger) Grow() bool { return Grows(g.eliminated, g.before) }

// EndRound ends the current round, of windows windows at level, and says
// whether another is due, as Merger.EndRound.
func (g *RasterMerger) EndRound(windows, level, maxLevel int) bool {
	g.res.Rounds, g.res.Windows, g.res.Level = g.round+1, g.res.Windows+windows, level
	return g.persistent < int64(g.width)*int64(g.height) && (level < maxLevel || !g.Grow())
}

// Window is the work of window win of the current round. Safe to call from
// several goroutines between StartRound and the round's end.
func (g *RasterMerger) Window(win RasterWindow) (RasterWork, error) {
	return g.work(win, nil)
}

// WindowOf is the work of a window of the current round given by its nodes
// (a window certificates record's, ascending), filtered as Window filters: a
// replay's. Its extent is the nodes' bounding box grown by one pixel.
func (g *RasterMerger) WindowOf(nodes []int) (RasterWork, error) {
	if len(nodes) == 0 {
		return RasterWork{}, errors.New("partition: a window without nodes")
	}
	n := int64(g.width) * int64(g.height)
	x0, y0, x1, y1 := g.width, g.height, -1, -1
	for i, v := range nodes {
		if v < 0 || int64(v) >= n || (i > 0 && v <= nodes[i-1]) {
			return RasterWork{}, fmt.Errorf("partition: node %d of a %d×%d raster, or not ascending", v, g.width, g.height)
		}
		x, y := v%g.width, v/g.width
		x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
	}
	box := Rect{x0, y0, x1 - x0 + 1, y1 - y0 + 1}
	if ext := box.grow(1, g.width, g.height); int64(ext.W)*int64(ext.H) > MaxWindowPixels {
		return RasterWork{}, fmt.Errorf("partition: a window of %d×%d pixels, larger than any partopt solves (MaxWindowPixels)", ext.W, ext.H)
	}
	return g.work(RasterWindow{Core: box, Nodes: box}, nodes)
}

// work is the work of win over the undecided pixels of nodes (nil: of win.Nodes).
func (g *RasterMerger) work(win RasterWindow, nodes []int) (RasterWork, error) {
	w := RasterWork{Window: win, Extent: win.Nodes.grow(1, g.width, g.height)}
	e := w.Extent
	doms, err := g.prior.ReadDomains(e)
	if err != nil {
		return w, err
	}
	undecided := func(x, y int) bool { return len(doms[(y-e.Y0)*e.W+x-e.X0]) > 1 }
	if nodes == nil {
		n := win.Nodes
		for y := n.Y0; y < n.Y0+n.H; y++ {
			for x := n.X0; x < n.X0+n.W; x++ {
				if undecided(x, y) {
					w.Nodes = append(w.Nodes, y*g.width+x)
				}
			}
		}
	} else {
		for _, v := range nodes {
			if undecided(v%g.width, v/g.width) {
				w.Nodes = append(w.Nodes, v)
			}
		}
	}
	if len(w.Nodes) > 0 {
		w.Domains = doms
	}
	return w, nil
}

// Merge applies a window's elimination e over its work w (nil: it proved
// nothing) to the labels alive, and takes the test labels of its core; the
// windows of a round must be merged in plan order. It returns the labels
// eliminated.
func (g *RasterMerger) Merge(w RasterWork, e *RasterElimination) (int64, error) {
	if e == nil || len(w.Nodes) == 0 {
		return 0, nil
	}
	if e.Result == nil || len(e.Result.Alive) != len(e.Vars) || len(e.Result.Test) != len(e.Vars) {
		return 0, errors.New("partition: an elimination whose variables are not its window's")
	}
	x := w.Extent
	masks := g.alive.newMasks(x.Pixels())
	if err := g.alive.readMasks(x, masks); err != nil {
		return 0, err
	}
	var eliminated int64
	var cur []int
	changed := false
	for j, v := range e.Vars {
		px, py := v%g.width, v/g.width
		if !x.contains(px, py) {
			return 0, fmt.Errorf("partition: variable %d outside the window's extent %v", v, x)
		}
		i := (py-x.Y0)*x.W + px - x.X0
		cur = cur[:0]
		for p, ms := range masks {
			for m := uint32(ms[i]); m != 0; m &= m - 1 {
				cur = append(cur, AlivePlaneLabels*p+bits.TrailingZeros32(m))
			}
		}
		before := len(cur)
		img := e.Result.Image(j, cur)
		if len(img) == 0 || img[len(img)-1] >= g.alive.Labels {
			return 0, fmt.Errorf("partition: variable %d: the window's map leaves labels %v of %v", v, img, cur)
		}
		if !slices.Equal(img, cur) {
			maskOf(masks, i, img)
			changed = true
		}
		eliminated += int64(before - len(img))
		if before > 1 && len(img) == 1 {
			g.persistent++
		}
	}
	if changed {
		if err := g.alive.writeMasks(x, masks); err != nil {
			return 0, err
		}
	}
	g.eliminated += eliminated
	if g.labeling != nil {
		c := w.Window.Core
		lab := masks[0][:c.Pixels()] // reused
		if err := g.labeling.ReadRect(c.X0, c.Y0, c.W, c.H, lab); err != nil {
			return 0, err
		}
		for j, v := range e.Vars {
			if px, py := v%g.width, v/g.width; c.contains(px, py) {
				lab[(py-c.Y0)*c.W+px-c.X0] = int32(e.Result.Test[j])
			}
		}
		if err := g.labeling.WriteRect(c.X0, c.Y0, c.W, c.H, lab); err != nil {
			return 0, err
		}
	}
	return eliminated, nil
}

// Finish ends the elimination: every pixel's label in the labeling becomes an
// alive one (its lowest alive label where the windows left another), and
// persistent (nil: none) receives label+1 at each pixel left with one label,
// 0 elsewhere; band by band. It returns the summary, with the counts of the
// whole raster.
func (g *RasterMerger) Finish(persistent Store) (*RasterEliminationResult, error) {
	res := g.res
	k := g.alive.Labels
	err := bands(g.width, g.height, func(r Rect) error {
		masks := g.alive.newMasks(r.Pixels())
		if err := g.alive.readMasks(r, masks); err != nil {
			return err
		}
		out := make([]int32, r.Pixels())
		if g.labeling != nil {
			if err := g.labeling.ReadRect(r.X0, r.Y0, r.W, r.H, out); err != nil {
				return err
			}
			for i, l := range out {
				if !hasLabel(masks, i, int(l)) {
					out[i] = int32(lowestLabel(masks, i))
				}
			}
			if err := g.labeling.WriteRect(r.X0, r.Y0, r.W, r.H, out); err != nil {
				return err
			}
		}
		for i := range out {
			n := aliveCount(masks, i)
			res.Eliminated += int64(k - n)
			out[i] = persistentValue(masks, i)
			if out[i] > 0 {
				res.Persistent++
			}
		}
		if persistent != nil {
			return persistent.WriteRect(r.X0, r.Y0, r.W, r.H, out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// RasterEliminateOptions configure EliminateRaster.
type RasterEliminateOptions struct {
	// Plan returns the windows of a round at a level (see
	// EliminateOptions.Plan); windows grown by one pixel must stay within
	// MaxWindowPixels.
	Plan func(round, level int) []RasterWindow
	// MaxLevel, Solver, Workers and MaxRounds are EliminateOptions'.
	MaxLevel  int
	Solver    persistency.Relaxation
	Workers   int
	MaxRounds int
	// Progress, if set, is called after every merged window, serially.
	Progress func(RasterProgress)
	// Proofs, if set, receives every merged window's elimination, in merge order.
	Proofs *ProofWriter
}

// EliminateRaster runs the rounds of windowed label elimination on a raster out
// of core. alive holds the labels alive before (InitAlive: every label, or what
// pbp proved) and receives those left; prior, of the same size, is the scratch
// copy of each round; labeling receives the test labels of the windows' cores
// and ends within the alive labels; persistent (nil: none) receives label+1 at
// each pixel left with one label. Every window's certificate is checked on its
// model before it is merged. The stores end as Eliminate's domains and labeling
// with the same plans (its Plan of GridPlan(·) of the same windows), whatever
// the worker count: only the windows in flight, at most 4 × Workers, are in
// memory.
func EliminateRaster(ctx context.Context, r Raster, alive, prior AliveLabels, labeling, persistent Store, opt RasterEliminateOptions) (*RasterEliminationResult, error) {
	g, err := NewRasterMerger(r.Width, r.Height, alive, prior, labeling)
	if err != nil {
		return nil, err
	}
	level := 0
	for round := range max(opt.MaxRounds, 1) {
		if err := g.StartRound(round); err != nil {
			return nil, err
		}
		wins := opt.Plan(round, level)
		for _, win := range wins {
			if ext := win.Nodes.grow(1, r.Width, r.Height); int64(ext.W)*int64(ext.H) > MaxWindowPixels {
				return nil, fmt.Errorf("partition: a window of %d×%d pixels, at most %d", ext.W, ext.H, int64(MaxWindowPixels))
			}
		}
		if err := eliminateRound(ctx, r, g, wins, round, opt); err != nil {
			return nil, err
		}
		if !g.EndRound(len(wins), level, opt.MaxLevel) {
			break
		}
		if g.Grow() {
			level++
		}
	}
	return g.Finish(persistent)
}

// rasterElimination is a window eliminated and checked, waiting for its turn
// to be merged.
type rasterElimination struct {
	work    RasterWork
	e       *RasterElimination
	seconds float64
}

// eliminateRound eliminates a round's windows on a pool of workers and merges
// them in plan order as they become mergeable (inPlanOrder, as runRound).
func eliminateRound(ctx context.Context, r Raster, g *RasterMerger, wins []RasterWindow, round int, opt RasterEliminateOptions) error {
	solver := spare(opt.Solver, len(wins), opt.Workers)
	solve := func(ctx context.Context, i int) (*rasterElimination, error) {
		start := time.Now()
		out := &rasterElimination{}
		work, err := g.Window(wins[i])
		if err == nil && len(work.Nodes) > 0 {
			out.e, err = eliminateRasterWindow(ctx, r, work, solver, true)
		}
		out.work, out.seconds = work, time.Since(start).Seconds()
		return out, err
	}
	merge := func(i int, out *rasterElimination) error {
		if _, err := g.Merge(out.work, out.e); err != nil {
			return err
		}
		if out.e != nil {
			if opt.Proofs != nil {
				if err := opt.Proofs.Elimination(round, out.work.Nodes, out.e.Result); err != nil {
					return err
				}
			}
			g.res.Solved++
			g.res.MaxWindowVars = max(g.res.MaxWindowVars, len(out.e.Vars))
			g.res.SolverIterations += out.e.Result.SolverIterations
		}
		g.res.WindowSeconds += out.seconds
		if opt.Progress != nil {
			opt.Progress(RasterProgress{Round: round, WindowsDone: i + 1, Windows: len(wins), Persistent: g.persistent})
		}
		return nil
	}
	return inPlanOrder(ctx, wins, round, opt.Workers, solve, merge)
}

// ReplayRasterElimination replays the file's leading elimination records over
// the raster r into g (a RasterMerger from the labels alive before them,
// labeling nil): round by round, each record's proof is checked on the model of
// its nodes' extent restricted to the labels the replay left before that round
// (ProvenRasterElimination), a round's records on workers goroutines, and
// merged in file order. Memory is a few windows'.
func ReplayRasterElimination(ctx context.Context, r Raster, g *RasterMerger, rd *ProofReader, workers int) (ReplayStats, error) {
	var st ReplayStats
	return st, replayRounds(ctx, rd, ProofElimination, workers, &st,
		func(round int) error { return g.StartRound(round) },
		func(rec *ProofRecord) (*rasterElimination, error) {
			w, err := g.WindowOf(rec.Nodes)
			if err != nil {
				return nil, err
			}
			if len(w.Nodes) == 0 {
				return nil, errors.New("an elimination over variables decided before its round")
			}
			e, err := ProvenRasterElimination(r, w, rec.Proof)
			return &rasterElimination{work: w, e: e}, err
		},
		func(rec *ProofRecord, c *rasterElimination) error {
			_, err := g.Merge(c.work, c.e)
			return err
		})
}

// ProofData reads the record's proof as the file holds it (the result file
// format, undecoded): what a tool that rewrites a certificates file copies.
func (rec *ProofRecord) ProofData() ([]byte, error) {
	b := make([]byte, rec.proof.Size())
	if _, err := rec.proof.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && len(b) == 0) {
		return nil, err
	}
	return b, nil
}
