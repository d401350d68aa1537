package job

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// Label elimination by windows of a .grid model past maxInMemoryPixels, out of
// core (eliminateGrid): the raster plans of eliminateWindows over the file read
// by windows, the labels alive in the alive planes of the output (alive.plf,
// alive.1.plf, …) with a scratch copy per round, the labeling and persistent
// map in labels.plf and persistent.plf — partition.EliminateRaster, whose
// stores end as partition.Eliminate's domains would (tested byte for byte
// against the in-memory path with the bound lowered). pbp+iri first runs pbp
// by windows out of core (partition.SolveRaster) into persistent.plf, and the
// planes start from what it proved. Memory: the workers' windows (grown by
// their halo, at most maxEliminationWindowPixels; the levels stop below) and
// bands of rows of the label files, never the pixels.
//
// Through a runtime (run, a coordinator's submitted job) the windows go to
// the cluster: pbp's as a raster pbp job over the same label files, the
// elimination as a raster iri job (distributeRasterElimination: the
// coordinator merges into the alive planes here, the workers read their
// windows from the .grid), for every .grid without evidence too
// (rasterElimination), so no machine holds the model; the files are the
// same.
//
// With evidence, the observed pixels start with their label alone (pbp writes
// them into its persistent map, as solveRaster does): the plans are raster
// tiles over every pixel, where the in-memory path plans regions over the
// model conditioned on the evidence, so such results differ from the
// in-memory path's (both are sound: every window's certificate is checked).

// maxEliminationWindowPixels bounds the windows of label elimination out of
// core, their halo included (a variable for the tests): the levels grow the
// windows up to half the raster's side in memory, which on a gigapixel raster
// would be a window of the raster's size.
var maxEliminationWindowPixels int64 = 1 << 22

// outOfCoreElimination says whether the run is label elimination by windows
// of a .grid model read by windows (eliminateGrid): rasterElimination.
func (r *runner) outOfCoreElimination() bool {
	return rasterElimination(r.spec, r.opt.Runtime != nil)
}

// rasterElimination says whether label elimination by windows of s (its
// defaults resolved) runs on its .grid file read by windows, the labels alive
// in label files (eliminateGrid), in this process or — distributed, when a
// runtime solves the windows — as a raster iri job: past maxInMemoryPixels
// always, and through a runtime for every .grid without evidence, so that
// neither a coordinator nor a worker holds the model. Without evidence the
// outputs are the in-memory path's byte for byte (its plans and merge; the
// windows' growth is capped only past memory, levelFitting); with evidence
// below the bound the in-memory path plans regions over the conditioned model
// (a graph iri job), which differs, so it stays.
func rasterElimination(s Spec, runtime bool) bool {
	if s.Method == PBP || !s.Windowed() || !IsGridFile(s.Model) {
		return false
	}
	h, err := gridHeader(s.Model)
	return err == nil && (pixels(h) > maxInMemoryPixels || runtime && !hasEvidence(s))
}

// levelFitting caps maxLevel at the highest level whose windows, grown by
// their halo and the extent's pixel, stay within maxEliminationWindowPixels
// (level 0 at least: the window the user asked for).
func levelFitting(window, halo, maxLevel int) int {
	for level := maxLevel; level > 0; level-- {
		side := int64(window<<level) + 2*int64(halo<<level) + 2
		if side*side <= maxEliminationWindowPixels {
			return level
		}
	}
	return 0
}

// eliminateGrid is eliminateWindows on a .grid model read by windows, out of
// core (rasterElimination): here, or through the runtime.
func (r *runner) eliminateGrid(ctx context.Context) (*Result, error) {
	s := r.spec
	g, err := grid.Open(s.Model)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	h := g.Header()
	ev, evPath, err := gridEvidence(s.Model, h, s.NoEvidence)
	if err != nil {
		return nil, err
	}
	if evPath != "" {
		r.note(fmt.Sprintf("applied evidence %s (%d observed variables); --no-evid ignores it", evPath, ev.Len()))
	}
	if err := PrepareOutput(s.Output); err != nil {
		return nil, err
	}
	W, H, K := h.Width, h.Height, h.Labels
	plans := rasterEliminationPlans(s, W, H)
	if pixels(h) > maxInMemoryPixels {
		plans.maxLevel = levelFitting(s.Window, plans.halo, plans.maxLevel)
	}
	st, certs, err := newWindowedStage(s.Output)
	if err != nil {
		return nil, err
	}
	defer st.abort()
	defer certs.f.Close()
	files, err := newAliveFiles(st.dir, labelfile.Header{Width: W, Height: H, Labels: K}, s.Method == PBPIRI)
	if err != nil {
		return nil, Internal(err)
	}
	defer files.remove()
	for i, v := range ev.Vars {
		if err := files.persistent.WriteRect(v%W, v/W, 1, 1, []int32{int32(ev.Labels[i] + 1)}); err != nil {
			return nil, Internal(err)
		}
	}
	raster := partition.Raster{Width: W, Height: H, Window: g.Window}
	n, observed := pixels(h), int64(ev.Len())
	progress := r.windowProgress(n)
	start := time.Now()
	out := &Outcome{}
	pbpPersistent := int64(0)
	if s.Method == PBPIRI {
		ps := s.stage(PBP)
		if r.opt.Runtime != nil {
			// A raster pbp job, as solveRaster's through a runtime.
			d := &Distributed{ModelPath: s.Model, Raster: raster, Persistent: files.persistent, Labeling: files.pbpLabels, Scratch: files.pbpScratch,
				Progress: progress, Proofs: certs.w}
			if d.Spec, err = ps.wire(false, W, H, K); err == nil {
				out, err = r.opt.Runtime.Windows(ctx, d)
			}
			if err != nil {
				return nil, windowsFailed(ctx, err, s.Output)
			}
		} else {
			opt := partition.RasterOptions{Core: ps.Window, Halo: ps.halo(DefaultRasterHalo), Persistency: ps.persistency(), Workers: ps.Workers,
				MaxRounds: ps.Rounds, Progress: progress, Proofs: certs.w}
			res, err := partition.SolveRaster(ctx, raster, files.persistent, files.pbpLabels, files.pbpScratch, opt)
			if err != nil {
				return nil, windowsFailed(ctx, err, s.Output)
			}
			out.RasterResult = *res
		}
		pbpPersistent = out.Persistent
	}
	if _, err := partition.InitAlive(files.alive, W, H, files.persistent); err != nil {
		return nil, Internal(err)
	}
	el := &runner{spec: s.stage(IRI), opt: r.opt}
	var res *partition.RasterEliminationResult
	if s.Method == PBPIRI && pbpPersistent == n {
		// pbp proved every pixel: nothing is left to eliminate.
		g, err := partition.NewRasterMerger(W, H, files.alive, files.prior, files.labels)
		if err == nil {
			res, err = g.Finish(files.persistent)
		}
		if err != nil {
			return nil, Internal(err)
		}
	} else if r.opt.Runtime != nil {
		if res, err = el.distributeRasterElimination(ctx, raster, plans, files, progress, certs.w, out); err != nil {
			return nil, windowsFailed(ctx, err, s.Output)
		}
	} else {
		opt := partition.RasterEliminateOptions{Plan: plans.windows, MaxLevel: plans.maxLevel, Solver: s.persistency().Solver, Workers: s.Workers,
			MaxRounds: el.spec.Rounds, Progress: progress, Proofs: certs.w}
		if res, err = partition.EliminateRaster(ctx, raster, files.alive, files.prior, files.labels, files.persistent, opt); err != nil {
			return nil, windowsFailed(ctx, err, s.Output)
		}
	}
	completed, completedSummary, err := r.completeRaster(ctx, raster, files.alive, files.labels)
	if err != nil {
		return nil, err
	}
	if err := files.finish(); err != nil {
		return nil, Internal(err)
	}
	if err := certs.finish(); err != nil {
		return nil, Internal(err)
	}
	seconds := seconds(start, out)
	energy, err := gridEnergy(s.Model, st.path(LabelTilesFile), s.NoEvidence, func(string) {})
	if err != nil {
		return nil, Internal(err)
	}
	free := n - observed
	k := res.Persistent - observed
	eliminated := int(res.Eliminated - observed*int64(K-1))
	labels := int(free * int64(K-1))
	frac := fraction(int64(eliminated), int64(labels))
	rep := &WindowsReport{
		Method: string(s.Method), Model: r.modelName(), Evidence: evPath, Plan: plans.name, Width: W, Height: H, Window: s.Window, Halo: plans.halo,
		Workers: r.workers(out), MaxRounds: el.spec.Rounds, Rounds: out.Rounds + res.Rounds, Level: res.Level,
		Windows: out.Windows + res.Windows, WindowsSolved: out.Solved + res.Solved,
		MaxWindowVariables: max(out.MaxWindowVars, res.MaxWindowVars), PruningIterations: out.PruningIterations,
		SolverIterations: out.SolverIterations + res.SolverIterations, WindowSeconds: out.WindowSeconds + res.WindowSeconds,
		Provenance: r.provenance(out), Observed: ev.Len(),
		Variables: n, FreeVariables: free, PersistentVariables: k, Fraction: fraction(k, free),
		EliminatedLabels: &eliminated, EliminatedLabelFraction: &frac,
		Energy: (*Float)(&energy), Verified: true, Seconds: seconds,
		VariablesPerSecond: float64(free) / seconds, PeakRSSBytes: peakRSS(),
		CompletionFields: completed,
	}
	rep.PersistentFraction = rep.Fraction // one label count: the paper's score is the fraction
	if s.Method == PBPIRI {
		rep.Boundary = s.Boundary.String()
		rep.PBPPersistentVariables = new(int64)
		*rep.PBPPersistentVariables = pbpPersistent - observed
	}
	var outputs []output
	if n <= uaiOutputLimit {
		// The text outputs of a model this size, as the in-memory path writes them.
		x, proven, err := files.read()
		if err != nil {
			return nil, Internal(err)
		}
		outputs = append(uaiOutputs(x, evidenceOf(proven)), output{name: DomainsFile, write: files.writeDomains})
		if completed.Optimal != nil && *completed.Optimal {
			outputs = append(outputs, output{name: OptimalFile, write: func(w io.Writer) error { return uai.WriteSolution(w, x) }})
		}
		rep.Outputs = names(outputs)
	}
	outputs = append(outputs, output{name: PersistencyPNG, write: func(w io.Writer) error { return files.png(w, s.PNGMax) }})
	rep.Outputs = append(rep.Outputs, LabelTilesFile, PersistentTilesFile)
	for p := range files.planes {
		rep.Outputs = append(rep.Outputs, AlivePlaneFile(p))
	}
	rep.Outputs = append(rep.Outputs, PersistencyPNG, WindowCertificatesFile)
	if err := st.writeOutputs(outputs, rep); err != nil {
		return nil, Internal(err)
	}
	return &Result{Report: rep, Summary: fmt.Sprintf("persistent %.6g variables %d/%d eliminated %d/%d labels (%.4g) windows %d rounds %d seconds %.3g%s",
		rep.PersistentFraction, k, free, eliminated, labels, frac, rep.Windows, rep.Rounds, seconds, completedSummary)}, nil
}

// distributeRasterElimination is eliminateGrid's elimination done by the
// runtime as a raster iri job: the windows of plans over raster, the labels
// alive in files' planes (initialised), merged by the coordinator in plan
// order, its labeling and persistent map in files' label files; its
// provenance (runtime, workers, lost windows) goes to out.
func (r *runner) distributeRasterElimination(ctx context.Context, raster partition.Raster, plans eliminationPlans, files *aliveFiles, progress func(partition.RasterProgress),
	certs *partition.ProofWriter, out *Outcome) (*partition.RasterEliminationResult, error) {
	spec, err := r.spec.wire(false, raster.Width, raster.Height, files.header.Labels)
	if err != nil {
		return nil, err
	}
	spec.Method, spec.Halo = protocol.MethodIRI, plans.halo
	d := &Distributed{Spec: spec, ModelPath: r.spec.Model, Raster: raster, Windows: plans.windows, MaxLevel: plans.maxLevel,
		Alive: files.alive, Prior: files.prior, Persistent: files.persistent, Labeling: files.labels, Progress: progress, Proofs: certs}
	o, err := r.opt.Runtime.Windows(ctx, d)
	if err != nil {
		return nil, err
	}
	if o.RasterElimination == nil {
		return nil, errors.New("the runtime returned no elimination for a raster iri job")
	}
	// The counts are the elimination's (the report adds them); the rest —
	// runtime, workers, start, lost windows — goes with out's.
	prov := *o
	prov.RasterResult = partition.RasterResult{}
	out.add(&prov)
	return o.RasterElimination, nil
}

// aliveFiles are the label files of an out-of-core elimination, in its stage
// (dir): the outputs labels.plf, persistent.plf and the alive planes, and
// scratch files removed at the end — the planes' copy of each round and pbp's
// fixed labels and labeling.
type aliveFiles struct {
	dir                   string
	labels, persistent    *labelfile.File
	planes, priorPlanes   []*labelfile.File
	pbpLabels, pbpScratch *labelfile.File // pbp+iri only
	alive, prior          partition.AliveLabels
	scratch               []*labelfile.File // removed by finish
	header                labelfile.Header
}

// newAliveFiles creates them for the raster of h (pbp: with pbp's scratch files).
func newAliveFiles(dir string, h labelfile.Header, pbp bool) (*aliveFiles, error) {
	fs := &aliveFiles{dir: dir, header: h}
	create := func(name string, kind labelfile.Kind, plane int) (*labelfile.File, error) {
		hd := h
		hd.Kind, hd.Plane = kind, plane
		return labelfile.Create(filepath.Join(dir, name), hd)
	}
	var err error
	defer func() {
		if err != nil {
			fs.remove()
		}
	}()
	if fs.labels, err = create(LabelTilesFile, labelfile.Labeling, 0); err != nil {
		return nil, err
	}
	if fs.persistent, err = create(PersistentTilesFile, labelfile.Persistent, 0); err != nil {
		return nil, err
	}
	planes := labelfile.AlivePlanes(h.Labels)
	fs.alive = partition.AliveLabels{Labels: h.Labels}
	fs.prior = partition.AliveLabels{Labels: h.Labels}
	for p := range planes {
		f, err2 := create(AlivePlaneFile(p), labelfile.Alive, p)
		if err = err2; err != nil {
			return nil, err
		}
		fs.planes, fs.alive.Planes = append(fs.planes, f), append(fs.alive.Planes, f)
		if f, err = create(fmt.Sprintf(".alive-prior.%d.plf", p), labelfile.Alive, p); err != nil {
			return nil, err
		}
		fs.priorPlanes, fs.prior.Planes = append(fs.priorPlanes, f), append(fs.prior.Planes, f)
		fs.scratch = append(fs.scratch, f)
	}
	if pbp {
		if fs.pbpLabels, err = create(".pbp-labels.plf", labelfile.Labeling, 0); err != nil {
			return nil, err
		}
		fs.scratch = append(fs.scratch, fs.pbpLabels)
		if fs.pbpScratch, err = create(".pbp-scratch.plf", labelfile.Persistent, 0); err != nil {
			return nil, err
		}
		fs.scratch = append(fs.scratch, fs.pbpScratch)
	}
	return fs, nil
}

// finish closes the outputs (writing their checksums) and removes the scratch
// files.
func (fs *aliveFiles) finish() error {
	for _, f := range append([]*labelfile.File{fs.labels, fs.persistent}, fs.planes...) {
		if err := f.Close(); err != nil {
			return err
		}
	}
	for _, f := range fs.scratch {
		f.Close()
		if err := os.Remove(f.Name()); err != nil {
			return err
		}
	}
	fs.scratch = nil
	return nil
}

// remove closes every file (the stage's removal deletes them).
func (fs *aliveFiles) remove() {
	for _, f := range append(append([]*labelfile.File{fs.labels, fs.persistent}, fs.planes...), fs.scratch...) {
		if f != nil {
			f.Close()
		}
	}
}

// open opens the finished outputs for reading: labels.plf and the alive planes.
func (fs *aliveFiles) open() (lab *labelfile.File, planes []*labelfile.File, err error) {
	closeAll := func() {
		for _, f := range append(planes, lab) {
			if f != nil {
				f.Close()
			}
		}
	}
	if lab, err = labelfile.Open(filepath.Join(fs.dir, LabelTilesFile)); err != nil {
		return nil, nil, err
	}
	for p := range fs.planes {
		f, err := labelfile.Open(filepath.Join(fs.dir, AlivePlaneFile(p)))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		planes = append(planes, f)
	}
	return lab, planes, nil
}

// png renders persistency.png, by labels left, from the finished outputs.
func (fs *aliveFiles) png(w io.Writer, maxSide int) error {
	lab, planes, err := fs.open()
	if err != nil {
		return err
	}
	defer lab.Close()
	rs := make([]labelfile.Raster, len(planes))
	for p, f := range planes {
		defer f.Close()
		rs[p] = f
	}
	return labelfile.RenderAlivePNG(w, lab, rs, maxSide)
}

// read returns the whole labeling and the persistent labels (−1 none) of the
// finished outputs (a model up to UAIOutputLimit pixels).
func (fs *aliveFiles) read() (x, proven []int, err error) {
	rf := &rasterFiles{dir: fs.dir}
	return rf.read()
}

// writeDomains writes domains.txt from the finished alive planes, band by band.
func (fs *aliveFiles) writeDomains(w io.Writer) error {
	_, planes, err := fs.open()
	if err != nil {
		return err
	}
	alive := partition.AliveLabels{Labels: fs.header.Labels}
	for _, f := range planes {
		defer f.Close()
		alive.Planes = append(alive.Planes, readOnly{f})
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, int64(fs.header.Width)*int64(fs.header.Height))
	buf := make([]byte, 0, 64)
	err = aliveBands(alive, fs.header.Width, fs.header.Height, func(_ partition.Rect, doms [][]int) error {
		for _, ls := range doms {
			buf = strconv.AppendInt(buf[:0], int64(len(ls)), 10)
			for _, l := range ls {
				buf = strconv.AppendInt(append(buf, ' '), int64(l), 10)
			}
			if _, err := bw.Write(append(buf, '\n')); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// aliveBands calls f with the labels alive in each band of rows of the w×h
// planes, top to bottom (a band of about a million pixels).
func aliveBands(alive partition.AliveLabels, w, h int, f func(partition.Rect, [][]int) error) error {
	rows := max(1, (1<<20)/max(w, 1))
	for y := 0; y < h; y += rows {
		r := partition.Rect{X0: 0, Y0: y, W: w, H: min(rows, h-y)}
		doms, err := alive.ReadDomains(r)
		if err != nil {
			return err
		}
		if err := f(r, doms); err != nil {
			return err
		}
	}
	return nil
}

// readOnly is a label file as a partition.Store that is only read.
type readOnly struct{ f *labelfile.File }

func (r readOnly) ReadRect(x0, y0, w, h int, dst []int32) error {
	return r.f.ReadRect(x0, y0, w, h, dst)
}
func (r readOnly) WriteRect(int, int, int, int, []int32) error {
	return fmt.Errorf("%s: opened for reading", r.f.Name())
}
