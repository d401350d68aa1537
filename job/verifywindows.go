package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// verifyWindowed re-checks a windowed run's outputs in dir from the model
// alone: it replays the window certificates file (partition.Replay*) —
// every window's proof checked on the model and the labels the replay fixed
// before its round, in parallel — and requires the outputs to claim exactly
// what the replay proves: persistent.plf and persistent.evid the persistent
// labels (with the evidence), labels.plf and labels.sol to take them, and
// domains.txt the labels left. A .grid model is replayed out of core.
func verifyWindowed(ctx context.Context, modelPath, dir string, noEvid bool, note func(string), progress func(read, total int64)) (Verified, error) {
	certPath := filepath.Join(dir, WindowCertificatesFile)
	f, err := os.Open(certPath)
	if err != nil {
		return Verified{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Verified{}, err
	}
	openOn := func(ra io.ReaderAt) func(n int) (*partition.ProofReader, error) {
		return func(n int) (*partition.ProofReader, error) {
			return partition.NewProofReader(certPath, ra, info.Size(), int64(n))
		}
	}
	open := openOn(f)
	if progress != nil {
		open = openOn(&readProgress{r: f, total: info.Size(), report: progress})
	}
	workers := runtime.GOMAXPROCS(0)
	if IsGridFile(modelPath) {
		// A look at the records' kinds, not the replay: its reads are not the
		// progress (they would take it to the end before the replay starts).
		h, outOfCore, err := rasterProofsOnly(modelPath, openOn(f))
		if err != nil {
			return Verified{}, err
		}
		if outOfCore || pixels(h) > maxInMemoryPixels {
			return verifyGridWindows(ctx, modelPath, dir, noEvid, note, open, workers)
		}
		if err := checkWholeRead(modelPath, h, "verify of label elimination's window proofs"); err != nil {
			return Verified{}, err
		}
	}
	p, err := LoadProblem(modelPath, noEvid)
	if err != nil {
		return Verified{}, err
	}
	if p.Evidence != nil && note != nil {
		note(p.Evidence.Note())
	}
	rd, err := open(p.Model.NumVars())
	if err != nil {
		return Verified{}, err
	}
	var v Verified
	var pbp []int // over the solved model's variables, nil without pbp records
	var proven *rasterClaim
	head, err := rd.Peek()
	if err != nil && err != io.EOF {
		return v, err
	}
	switch {
	case head != nil && head.Kind == partition.ProofRaster:
		w, h, ok := rasterDims(p.Model)
		if !ok {
			return v, fmt.Errorf("%s: raster window certificates, but %s is not a 4-connected grid", certPath, modelPath)
		}
		r, err := partition.RasterOf(p.Model, w, h)
		if err != nil {
			return v, err
		}
		pers := partition.NewMemStore(w, h)
		if p.Evidence != nil {
			for v, l := range p.Evidence.Fixed {
				pers.Values[v] = int32(l + 1)
			}
		}
		st, err := partition.ReplayRaster(ctx, r, pers, partition.NewMemStore(w, h), rd, workers)
		if err != nil {
			return v, replayFailed(err)
		}
		v.add(st)
		pbp = p.Restrict(storeLabels(pers.Values))
		proven = &rasterClaim{pers, w, h}
	case head != nil && head.Kind == partition.ProofGraph:
		n := p.Solved.NumVars()
		pers := partition.NewMemStore(n, 1)
		st, err := partition.ReplayGraph(ctx, p.Solved, pers, partition.NewMemStore(n, 1), rd, workers)
		if err != nil {
			return v, replayFailed(err)
		}
		v.add(st)
		pbp = storeLabels(pers.Values)
	}
	persistent := pbp
	if persistent == nil {
		persistent = allFree(p.Solved.NumVars())
	}
	var alive [][]int // nil: every label
	if pbp != nil {
		alive = (&persistency.Result{Persistent: pbp}).Domains(p.Solved)
	}
	if head, err := rd.Peek(); err == nil && head.Kind == partition.ProofElimination {
		el, st, err := partition.ReplayElimination(ctx, p.Solved, alive, rd, workers)
		if err != nil {
			return v, replayFailed(err)
		}
		v.add(st)
		persistent, alive, proven = el.Persistent, el.Alive, nil
	}
	if err := endOfCertificates(rd); err != nil {
		return v, err
	}
	want := p.Proven(persistent)
	w, h, isGrid := grid.Dims(p.Model)
	if proven == nil && isGrid {
		proven = &rasterClaim{&partition.MemStore{Width: w, Values: storeValues(want)}, w, h}
	}
	if err := checkClaims(dir, want, p.Model.LabelCounts(), proven); err != nil {
		return v, err
	}
	if alive == nil {
		alive = (&persistency.Result{Persistent: persistent}).Domains(p.Solved)
	}
	if _, err := os.Stat(filepath.Join(dir, DomainsFile)); err == nil {
		if err := checkDomains(filepath.Join(dir, DomainsFile), p, alive); err != nil {
			return v, err
		}
	}
	if isGrid {
		if err := checkAlivePlanes(dir, p.domains(alive), w, h); err != nil {
			return v, err
		}
	}
	v.Persistent = persistency.Count(persistent)
	labels, inSol, err := completedLabels(dir, p.Model.NumVars(), p.Model.LabelCounts())
	if err != nil {
		return v, err
	}
	if labels != nil {
		if err := verifyCompletion(dir, p, alive, labels, inSol, &v); err != nil {
			return v, err
		}
	}
	return v, nil
}

// completedLabels is a windowed result's labeling: labels.sol, else
// labels.plf (nil: neither, a result without a labeling to check); inSol
// says it is labels.sol.
func completedLabels(dir string, n int, counts []int32) (labels []int, inSol bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, LabelsFile)); err == nil {
		labels, err := readSolution(filepath.Join(dir, LabelsFile), counts)
		return labels, true, err
	}
	if _, err := os.Stat(filepath.Join(dir, LabelTilesFile)); err == nil {
		labels, err := readRaster(filepath.Join(dir, LabelTilesFile), n)
		return labels, false, err
	}
	return nil, false, nil
}

// verifyGridWindows is verifyWindowed on a .grid model, whose labels may not
// fit in memory: the replay's labels — pbp's proven labels, then the labels a
// label elimination leaves (partition.ReplayRasterElimination, in alive
// planes) — live in label files in a temporary directory, and the outputs are
// compared block by block (domains.txt line by line).
func verifyGridWindows(ctx context.Context, modelPath, dir string, noEvid bool, note func(string),
	open func(n int) (*partition.ProofReader, error), workers int) (Verified, error) {
	g, err := grid.Open(modelPath)
	if err != nil {
		return Verified{}, err
	}
	defer g.Close()
	h := g.Header()
	ev, evPath, err := gridEvidence(modelPath, h, noEvid)
	if err != nil {
		return Verified{}, err
	}
	if evPath != "" && note != nil {
		note(fmt.Sprintf("applied evidence %s (%d observed variables); --no-evid ignores it", evPath, ev.Len()))
	}
	n := int64(h.Width) * int64(h.Height)
	rd, err := open(int(min(n, 1<<62)))
	if err != nil {
		return Verified{}, err
	}
	tmp, err := os.MkdirTemp("", "partopt-verify-")
	if err != nil {
		return Verified{}, Internal(err)
	}
	defer os.RemoveAll(tmp)
	lh := labelfile.Header{Width: h.Width, Height: h.Height, Labels: h.Labels, Kind: labelfile.Persistent}
	pers, err := labelfile.Create(filepath.Join(tmp, "persistent.plf"), lh)
	if err != nil {
		return Verified{}, Internal(err)
	}
	defer pers.Close()
	scratch, err := labelfile.Create(filepath.Join(tmp, "scratch.plf"), lh)
	if err != nil {
		return Verified{}, Internal(err)
	}
	defer scratch.Close()
	for i, v := range ev.Vars {
		if err := pers.WriteRect(v%h.Width, v/h.Width, 1, 1, []int32{int32(ev.Labels[i] + 1)}); err != nil {
			return Verified{}, Internal(err)
		}
	}
	var v Verified
	r := partition.Raster{Width: h.Width, Height: h.Height, Window: g.Window}
	st, err := partition.ReplayRaster(ctx, r, pers, scratch, rd, workers)
	if err != nil {
		return v, replayFailed(err)
	}
	v.add(st)
	// Label elimination (pbp+iri's second stage, or iri): the labels alive
	// start from the proven ones and live in alive planes beside them.
	var proven partition.Store = pers
	var alive *partition.AliveLabels
	head, err := rd.Peek()
	if err != nil && err != io.EOF {
		return v, err
	}
	elimination := head != nil && head.Kind == partition.ProofElimination
	_, aliveErr := os.Stat(filepath.Join(dir, AliveTilesFile))
	if _, domErr := os.Stat(filepath.Join(dir, DomainsFile)); elimination || aliveErr == nil || domErr == nil {
		if alive, err = tempAlive(tmp, h); err != nil {
			return v, Internal(err)
		}
		defer closeAlive(*alive)
		if _, err := partition.InitAlive(*alive, h.Width, h.Height, pers); err != nil {
			return v, Internal(err)
		}
		prior, err := tempAlive(filepath.Join(tmp, "prior"), h)
		if err != nil {
			return v, Internal(err)
		}
		defer closeAlive(*prior)
		g, err := partition.NewRasterMerger(h.Width, h.Height, *alive, *prior, nil)
		if err != nil {
			return v, Internal(err)
		}
		if elimination {
			st, err := partition.ReplayRasterElimination(ctx, r, g, rd, workers)
			if err != nil {
				return v, replayFailed(err)
			}
			v.add(st)
		}
		proven = alive.PersistentView()
	}
	if err := endOfCertificates(rd); err != nil {
		return v, err
	}
	var want []int
	if n <= uaiOutputLimit {
		vals := make([]int32, n)
		if err := proven.ReadRect(0, 0, h.Width, h.Height, vals); err != nil {
			return v, Internal(err)
		}
		want = storeLabels(vals)
	}
	var counts []int32
	if want != nil {
		counts = make([]int32, n)
		for i := range counts {
			counts[i] = int32(h.Labels)
		}
	}
	if err := checkClaims(dir, want, counts, &rasterClaim{proven, h.Width, h.Height}); err != nil {
		return v, err
	}
	if alive != nil {
		if err := checkAliveFiles(dir, *alive, h.Width, h.Height); err != nil {
			return v, err
		}
	}
	k, err := partition.CopyStore(scratch, proven, h.Width, h.Height)
	if err != nil {
		return v, Internal(err)
	}
	v.Persistent = int(k) - ev.Len()
	if alive == nil { // pbp's: every label alive where it proves none
		pa := partition.PersistentAlive(pers, h.Labels)
		alive = &pa
	}
	if err := verifyRasterCompletion(ctx, dir, r, *alive, n, &v); err != nil {
		return v, err
	}
	return v, nil
}

// verifyRasterCompletion re-checks the completion an out-of-core raster
// result claims: each component of the replay's undecided pixels solved again
// on its window (partition.CheckRaster) against labels.plf.
func verifyRasterCompletion(ctx context.Context, dir string, r partition.Raster, alive partition.AliveLabels, n int64, v *Verified) error {
	var labels []int
	if n <= uaiOutputLimit {
		var err error
		if labels, err = readSolution(filepath.Join(dir, LabelsFile), countsOf(n, alive.Labels)); err != nil {
			return err
		}
	}
	claim, err := readCompletionClaim(dir, labels)
	if err != nil || claim == nil {
		return err
	}
	lf, err := openLabelFile(filepath.Join(dir, LabelTilesFile), r.Width, r.Height)
	if err != nil {
		return err
	}
	defer lf.Close()
	checked, skipped, err := partition.CheckRaster(ctx, r, alive, lf, claim.budget, rasterBounds(0))
	if err != nil {
		return notVerified("%s: %v", LabelTilesFile, err)
	}
	if skipped != "" {
		if claim.claimed {
			return notVerified("%s claims an optimal labeling, but its completion cannot be checked: %s", claim.report, skipped)
		}
		v.Completed = true
		return nil
	}
	return claim.judge(checked, v)
}

// countsOf is n label counts of k.
func countsOf(n int64, k int) []int32 {
	counts := make([]int32, n)
	for i := range counts {
		counts[i] = int32(k)
	}
	return counts
}

// rasterProofsOnly says whether the window certificates of a .grid model
// (header h) are all of raster pbp windows, which verifyGridWindows replays
// out of core whatever the model's size (a result with elimination records
// is replayed out of core past maxInMemoryPixels, as the run was made).
func rasterProofsOnly(modelPath string, open func(n int) (*partition.ProofReader, error)) (h grid.Header, ok bool, err error) {
	if h, err = gridHeader(modelPath); err != nil {
		return h, false, err
	}
	rd, err := open(h.Width * h.Height)
	if err != nil {
		return h, false, err
	}
	for {
		rec, err := rd.Next()
		switch {
		case err == io.EOF:
			return h, true, nil
		case err != nil:
			return h, false, err
		case rec.Kind != partition.ProofRaster:
			return h, false, nil
		}
	}
}

// replayFailed is the error of a replay: bad input for a damaged certificates
// file or model file, else NOT verified (a proof that does not hold).
func replayFailed(err error) error {
	if errors.Is(err, partition.ErrDamaged) || errors.Is(err, grid.ErrCorrupt) {
		return err
	}
	return notVerified("%v", err)
}

// add counts a replay's records and rounds.
func (v *Verified) add(st partition.ReplayStats) {
	v.Windows += st.Records
	v.Rounds += st.Rounds
}

// endOfCertificates checks that the replay read the whole file: records of
// another kind, or out of order, are not a run's.
func endOfCertificates(rd *partition.ProofReader) error {
	rec, err := rd.Next()
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("window certificates: record %d is a %s window out of the order a run merges in", rd.Records(), rec.Kind)
}

// storeLabels is the labels of a persistent store's values (label+1, or 0):
// label or −1.
func storeLabels(vals []int32) []int {
	out := make([]int, len(vals))
	for i, x := range vals {
		out[i] = int(x) - 1
	}
	return out
}

// storeValues is storeLabels' inverse.
func storeValues(labels []int) []int32 {
	out := make([]int32, len(labels))
	for i, l := range labels {
		out[i] = int32(l + 1)
	}
	return out
}

// allFree is n unproven labels.
func allFree(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = -1
	}
	return out
}

// rasterClaim is what the proofs prove of a w×h grid model, as a raster store
// of label+1 (0: not proven).
type rasterClaim struct {
	partition.Store
	w, h int
}

// checkClaims checks the outputs in dir against what the proofs prove: want,
// the proven or observed label per variable (−1 none; nil for a model too
// large for the text outputs), of label counts counts, and proven, the same
// for a grid model (nil otherwise). Each output present must agree:
// persistent.evid lists exactly want, labels.sol takes it, persistent.plf
// equals proven, labels.plf takes it; at least one of the persistent outputs
// must be there.
func checkClaims(dir string, want []int, counts []int32, proven *rasterClaim) error {
	evidPath, plfPath := filepath.Join(dir, PersistentFile), filepath.Join(dir, PersistentTilesFile)
	_, evidErr := os.Stat(evidPath)
	_, plfErr := os.Stat(plfPath)
	if evidErr != nil && plfErr != nil {
		return fmt.Errorf("%s holds neither %s nor %s: nothing claims persistent labels", dir, PersistentFile, PersistentTilesFile)
	}
	if evidErr == nil {
		if want == nil {
			return fmt.Errorf("%s: partopt does not write %s for a model of this size; the persistent labels are in %s", evidPath, PersistentFile, PersistentTilesFile)
		}
		if err := checkListed(dir, want, counts); err != nil {
			return err
		}
	}
	if plfErr == nil {
		if proven == nil {
			return fmt.Errorf("%s: a label file for a model that is not a grid", plfPath)
		}
		if err := checkLabelFiles(dir, proven); err != nil {
			return err
		}
	}
	return nil
}

// checkListed checks persistent.evid and labels.sol in dir against want.
func checkListed(dir string, want []int, counts []int32) error {
	evidPath := filepath.Join(dir, PersistentFile)
	listed, err := uai.ReadEvidenceFile(evidPath)
	if err != nil {
		return err
	}
	fixed, err := listed.Fixed(counts)
	if err != nil {
		return fmt.Errorf("%s: %w", evidPath, err)
	}
	if err := sameFixed(evidPath, fixed, want); err != nil {
		return err
	}
	labelsPath := filepath.Join(dir, LabelsFile)
	if _, err := os.Stat(labelsPath); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	labels, err := readSolution(labelsPath, counts)
	if err != nil {
		return err
	}
	return takes(labelsPath, labels, want)
}

// checkLabelFiles checks persistent.plf (and labels.plf when present) in dir
// against proven, a block at a time.
func checkLabelFiles(dir string, proven *rasterClaim) error {
	plfPath := filepath.Join(dir, PersistentTilesFile)
	pf, err := openLabelFile(plfPath, proven.w, proven.h)
	if err != nil {
		return err
	}
	defer pf.Close()
	h := pf.Header()
	lf, err := openLabelFile(filepath.Join(dir, LabelTilesFile), proven.w, proven.h)
	if err == nil {
		defer lf.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	const block = 1024
	want, got, lab := make([]int32, block*block), make([]int32, block*block), make([]int32, block*block)
	for y := 0; y < h.Height; y += block {
		for x := 0; x < h.Width; x += block {
			w, bh := min(block, h.Width-x), min(block, h.Height-y)
			want, got, lab := want[:w*bh], got[:w*bh], lab[:w*bh]
			if err := proven.ReadRect(x, y, w, bh, want); err != nil {
				return Internal(err)
			}
			if err := pf.ReadRect(x, y, w, bh, got); err != nil {
				return err
			}
			if lf != nil {
				if err := lf.ReadRect(x, y, w, bh, lab); err != nil {
					return err
				}
			}
			for i := range want {
				px, py := x+i%w, y+i/w
				if got[i] != want[i] {
					return notVerified("%s gives pixel (%d, %d) %s, the proofs %s", plfPath, px, py, provenText(got[i]), provenText(want[i]))
				}
				if lf != nil && want[i] > 0 && lab[i] != want[i]-1 {
					return notVerified("%s gives pixel (%d, %d) label %d, the proofs %d", lf.Name(), px, py, lab[i], want[i]-1)
				}
			}
		}
	}
	return nil
}

// provenText says what a persistent store's value means.
func provenText(x int32) string {
	if x == 0 {
		return "no label"
	}
	return fmt.Sprintf("label %d", x-1)
}

// openLabelFile opens a label file of a w×h model's outputs.
func openLabelFile(path string, w, h int) (*labelfile.File, error) {
	f, err := labelfile.Open(path)
	if err != nil {
		return nil, err
	}
	if hd := f.Header(); hd.Width != w || hd.Height != h {
		f.Close()
		return nil, notVerified("%s is %d×%d, the model %d×%d", path, hd.Width, hd.Height, w, h)
	}
	return f, nil
}

// checkAlivePlanes checks the alive planes in dir (AlivePlaneFile) of a w×h
// grid model against domains, the labels left per variable: each plane's
// masks must be exactly the labels its 32 hold.
func checkAlivePlanes(dir string, domains [][]int, w, h int) error {
	vals := make([]int32, w*h)
	for p := 0; ; p++ {
		f, err := openLabelFile(filepath.Join(dir, AlivePlaneFile(p)), w, h)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		err = f.ReadRect(0, 0, w, h, vals)
		f.Close()
		if err != nil {
			return err
		}
		for v, ls := range domains {
			var mask uint32
			for _, l := range ls {
				if l/labelfile.AlivePlaneLabels == p {
					mask |= 1 << (l % labelfile.AlivePlaneLabels)
				}
			}
			if uint32(vals[v]) != mask {
				return notVerified("%s gives variable %d the labels mask %#x, the proofs %#x", f.Name(), v, uint32(vals[v]), mask)
			}
		}
	}
}

// readProgress reports the furthest offset read through it (the replay reads
// the certificates in order, several rounds' windows at once).
type readProgress struct {
	r      io.ReaderAt
	total  int64
	report func(read, total int64)
	mu     sync.Mutex
	max    int64
}

func (p *readProgress) ReadAt(b []byte, off int64) (int, error) {
	n, err := p.r.ReadAt(b, off)
	p.mu.Lock()
	if end := off + int64(n); end > p.max {
		p.max = end
		p.report(end, p.total)
	}
	p.mu.Unlock()
	return n, err
}
