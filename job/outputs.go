package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/partopt/partopt/internal/dirlock"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/partition"
)

// The output files a job writes in its directory. A whole pbp run writes
// LabelsFile, PersistentFile, CertificateFile and ReportFile; trws and srmp
// LabelsFile and ReportFile; a windowed run of a raster LabelTilesFile,
// PersistentTilesFile, PersistencyPNG and ReportFile, plus LabelsFile and
// PersistentFile up to UAIOutputLimit variables; a windowed run of regions
// LabelsFile, PersistentFile and ReportFile. Label elimination (iri, pbp+iri) adds
// DomainsFile, and on a raster model LabelTilesFile, PersistentTilesFile,
// AliveTilesFile (the alive masks of labels 0–31, and AlivePlaneFile(p) for labels
// 32p onwards when K > 32) and PersistencyPNG, which then shows how many labels
// each pixel has left. ReportFile is written last: when
// it exists, the others are complete.
const (
	LabelsFile          = "labels.sol"
	ReportFile          = "report.json"
	PersistentFile      = "persistent.evid"
	CertificateFile     = "certificate.gob"
	LabelTilesFile      = "labels.plf"
	PersistentTilesFile = "persistent.plf"
	PersistencyPNG      = "persistency.png"
	AliveTilesFile      = "alive.plf"
	// WindowCertificatesFile is a windowed run's window proofs, in merge order
	// (partition.ProofWriter): what verify re-checks such a run from.
	WindowCertificatesFile = "window-certificates.bin"
)

// allOutputs are the files any job may write in its output directory.
var allOutputs = []string{LabelsFile, OptimalFile, PersistentFile, CertificateFile, DomainsFile, LabelTilesFile, PersistentTilesFile, AliveTilesFile, PersistencyPNG, WindowCertificatesFile}

// Float is a float64 that encodes ±Inf and NaN, which JSON numbers cannot hold, as
// the strings "+Inf", "-Inf" and "NaN".
type Float float64

// MarshalJSON implements json.Marshaler.
func (x Float) MarshalJSON() ([]byte, error) {
	if f := float64(x); math.IsInf(f, 0) || math.IsNaN(f) {
		return json.Marshal(FormatEnergy(f))
	}
	return json.Marshal(float64(x))
}

// UnmarshalJSON implements json.Unmarshaler: what MarshalJSON writes.
func (x *Float) UnmarshalJSON(data []byte) error {
	var text string
	if json.Unmarshal(data, &text) == nil {
		switch text {
		case "+Inf":
			*x = Float(math.Inf(1))
		case "-Inf":
			*x = Float(math.Inf(-1))
		case "NaN":
			*x = Float(math.NaN())
		default:
			return fmt.Errorf("%q: want a number, \"+Inf\", \"-Inf\" or \"NaN\"", text)
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*x = Float(f)
	return nil
}

// FormatEnergy prints the shortest decimal that reads back to e, and +Inf for forbidden.
func FormatEnergy(e float64) string {
	if math.IsInf(e, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(e, 'g', -1, 64)
}

// PrepareOutput creates dir if missing and checks that files can be written there,
// so that a bad directory fails before the solver runs rather than after.
func PrepareOutput(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".partopt-probe-*")
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// output is one file to write into a run's stage: by write, or by file when the
// file is made at a path (label files).
type output struct {
	name  string
	write func(io.Writer) error
	file  func(path string) error
}

// stage is a run's private directory inside its output directory, where every
// output is written before any is moved into place (commit). A run that fails
// or is interrupted before its commit leaves the output directory as it found
// it, and two runs into one directory never share a temporary name.
//
// A stage is locked by its run (internal/dirlock) until abort: a run killed
// before either leaves its stage unlocked, and the next run into the directory
// removes it — at 10⁸ pixels a stage holds gigabytes of label files and window
// proofs, which a run resumed after every kill (run --state) would otherwise
// leave behind each time.
type stage struct {
	out, dir string
	unlock   func()
	// concurrent: stageFiles writes the files side by side, one a core (a
	// model in memory, whose outputs are each a few of its bytes; an
	// out-of-core run's are streamed one at a time).
	concurrent bool
}

// stagePrefix starts the name of every stage.
const stagePrefix = ".partopt-run-"

// newStage makes a fresh stage in the output directory out, after removing the
// stages of runs that ended without removing theirs. Both happen under out's
// lock, which commit takes too, so no run sees another's stage before it is
// locked.
func newStage(out string) (*stage, error) {
	unlockOut, err := dirlock.Lock(out)
	if err != nil {
		return nil, err
	}
	defer unlockOut()
	removeStaleStages(out)
	dir, err := os.MkdirTemp(out, stagePrefix)
	if err != nil {
		return nil, err
	}
	unlock, err := dirlock.TryLock(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &stage{out: out, dir: dir, unlock: unlock}, nil
}

// removeStaleStages removes the stages in out that no run holds (where locks
// exist: without them a stage cannot be told from a live run's).
func removeStaleStages(out string) {
	if !dirlock.Supported {
		return
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagePrefix) {
			continue
		}
		dir := filepath.Join(out, e.Name())
		if unlock, err := dirlock.TryLock(dir); err == nil {
			os.RemoveAll(dir)
			unlock()
		}
	}
}

// path is where output name is staged.
func (st *stage) path(name string) string { return filepath.Join(st.dir, name) }

// abort removes the stage and whatever it holds (nothing after a commit), and
// releases it.
func (st *stage) abort() {
	os.RemoveAll(st.dir)
	if st.unlock != nil {
		st.unlock()
		st.unlock = nil
	}
}

// write stages files and the report.
func (st *stage) write(files []output, report any) error {
	return st.stageFiles(append(files, reportOutput(report)))
}

// reportOutput is the output that writes report as JSON.
func reportOutput(report any) output {
	return output{name: ReportFile, write: func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}}
}

// stageFiles stages files; an error names the first file in order that failed.
func (st *stage) stageFiles(files []output) error {
	errs := make([]error, len(files))
	if st.concurrent && len(files) > 1 {
		var wg sync.WaitGroup
		slots := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, o := range files {
			slots <- struct{}{}
			wg.Go(func() {
				errs[i] = st.stageFile(o)
				<-slots
			})
		}
		wg.Wait()
	} else {
		for i, o := range files {
			if errs[i] = st.stageFile(o); errs[i] != nil {
				break
			}
		}
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(st.out, files[i].name), err)
		}
	}
	return nil
}

// stageFile writes o into the stage.
func (st *stage) stageFile(o output) error {
	path := st.path(o.name)
	var err error
	if writeFault != nil {
		err = writeFault(o.name)
	}
	switch {
	case err != nil:
	case o.file != nil:
		err = o.file(path)
	default:
		err = writeFile(path, o.write)
	}
	if err == nil {
		err = os.Chmod(path, 0o644)
	}
	return err
}

// writeFault, set by tests, fails the writing of an output (a full disk).
var writeFault func(name string) error

// writeFile writes path with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// commit moves every staged output, the report last, into the output directory,
// under a lock on it: first it removes the earlier run's report (a directory
// without report.json holds no complete run) and its outputs this run does not
// write, so that the directory never mixes two runs. The stage goes.
func (st *stage) commit() error {
	staged, err := os.ReadDir(st.dir)
	if err != nil {
		return err
	}
	var moved []string // the report last
	report := false
	for _, e := range staged {
		if e.Name() != ReportFile {
			moved = append(moved, e.Name())
		} else {
			report = true
		}
	}
	if report {
		moved = append(moved, ReportFile)
	}
	unlock, err := dirlock.Lock(st.out)
	if err != nil {
		return err
	}
	defer unlock()
	defer st.abort()
	stale := append([]string{ReportFile}, allOutputs...) // the report first
	if entries, err := os.ReadDir(st.out); err == nil {
		for _, e := range entries {
			if alivePlaneFile(e.Name()) {
				stale = append(stale, e.Name())
			}
		}
	}
	for _, name := range stale {
		if name != ReportFile && slices.Contains(moved, name) {
			continue // replaced below
		}
		if err := os.Remove(filepath.Join(st.out, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	for _, name := range moved {
		if err := os.Rename(st.path(name), filepath.Join(st.out, name)); err != nil {
			return fmt.Errorf("moving %s into place: %w", name, err)
		}
	}
	return nil
}

// certificates is a run's window certificates file, written in its stage as
// the windows merge.
type certificates struct {
	f    *os.File
	w    *partition.ProofWriter
	name string // the output's path, for errors
}

// newWindowedStage makes a windowed run's stage in the output directory out,
// its window certificates file started.
func newWindowedStage(out string) (*stage, *certificates, error) {
	st, err := newStage(out)
	if err != nil {
		return nil, nil, Internal(err)
	}
	certs, err := st.newCertificates()
	if err != nil {
		st.abort()
		return nil, nil, Internal(err)
	}
	return st, certs, nil
}

// newCertificates starts the window certificates file in the stage.
func (st *stage) newCertificates() (*certificates, error) {
	f, err := os.Create(st.path(WindowCertificatesFile))
	if err != nil {
		return nil, err
	}
	c := &certificates{f: f, name: filepath.Join(st.out, WindowCertificatesFile)}
	c.w = partition.NewProofWriter(c)
	return c, nil
}

// Write writes to the staged file; its errors name the output, not the stage.
func (c *certificates) Write(b []byte) (int, error) {
	n, err := c.f.Write(b)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = fmt.Errorf("writing %s: %w", c.name, pe.Err)
	}
	return n, err
}

// finish ends and closes the file (after the last merge).
func (c *certificates) finish() error {
	err := c.w.Close()
	if writeFault != nil && err == nil {
		err = writeFault(WindowCertificatesFile)
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = fmt.Errorf("writing %s: %w", c.name, pe.Err)
	}
	if err != nil && !strings.Contains(err.Error(), c.name) {
		err = fmt.Errorf("writing %s: %w", c.name, err)
	}
	return err
}

// WriteAll writes a set of outputs into dir all or nothing, as a run does:
// write fills a fresh private directory inside dir (its argument), whose files
// are moved in only once write has succeeded — an earlier run's outputs
// removed, report.json last, under a lock on dir — and removed otherwise. What
// fetch uses for a job's outputs.
func WriteAll(dir string, write func(stage string) error) error {
	if err := PrepareOutput(dir); err != nil {
		return err
	}
	st, err := newStage(dir)
	if err != nil {
		return Internal(err)
	}
	defer st.abort()
	if err := write(st.dir); err != nil {
		return err
	}
	if err := st.commit(); err != nil {
		return Internal(err)
	}
	return nil
}

// writeOutputs writes files and the report into dir, all or nothing: staged
// first, then moved in (stage.commit) with the earlier run's other outputs
// removed.
func writeOutputs(dir string, files []output, report any) error {
	return writeOutputsWhen(dir, files, func() (any, error) { return report, nil })
}

// writeOutputsWhen is writeOutputs for a run whose last check still runs: it
// stages files meanwhile, then waits for ready; ready's error (the check
// failed) leaves nothing behind, its report is staged last and everything
// committed. Where both fail, ready's error is the one returned.
func writeOutputsWhen(dir string, files []output, ready func() (report any, err error)) error {
	st, err := newStage(dir)
	if err == nil {
		defer st.abort()
		st.concurrent = true
		err = st.stageFiles(files)
	}
	report, rerr := ready()
	switch {
	case rerr != nil:
		return rerr
	case err != nil:
		return err
	}
	if err := st.stageFiles([]output{reportOutput(report)}); err != nil {
		return err
	}
	return st.commit()
}

// writeOutputs stages files and the report beside what the run staged before,
// then commits them all.
func (st *stage) writeOutputs(files []output, report any) error {
	if err := st.write(files, report); err != nil {
		return err
	}
	return st.commit()
}

// AlivePlaneFile is the name of alive plane p (labelfile.Alive): AliveTilesFile
// for labels 0–31, then "alive.1.plf" for labels 32–63, and so on.
func AlivePlaneFile(p int) string {
	if p == 0 {
		return AliveTilesFile
	}
	return fmt.Sprintf("alive.%d.plf", p)
}

// ValidateOutputName checks that name is the name of a file a job writes (one of
// the constants above, or an alive plane): names read back from a job's status,
// which anyone who can write to the cluster may forge, are never paths.
func ValidateOutputName(name string) error {
	if name == ReportFile || slices.Contains(allOutputs, name) || alivePlaneFile(name) {
		return nil
	}
	return fmt.Errorf("%q is not the name of an output file", name)
}

// alivePlaneFile says whether name is an alive plane beyond the first.
func alivePlaneFile(name string) bool {
	p, ok := strings.CutPrefix(name, "alive.")
	if p, ok = strings.CutSuffix(p, ".plf"); !ok {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && AlivePlaneFile(n) == name
}

// aliveRasterOutputs are the raster outputs of a label elimination on m when it is
// a W×H grid of K labels everywhere (none otherwise): LabelTilesFile (x),
// PersistentTilesFile, the alive planes of domains (AlivePlaneFile) and
// PersistencyPNG (by labels left).
func aliveRasterOutputs(m *model.Model, x []int, domains [][]int, pngSide int) []output {
	w, h, ok := grid.Dims(m)
	if !ok || m.NumVars() == 0 {
		return nil
	}
	k := m.NumLabels(0)
	for v := range m.NumVars() {
		if m.NumLabels(v) != k {
			return nil
		}
	}
	lab, per := make([]int32, len(x)), make([]int32, len(x))
	alive := make([][]int32, labelfile.AlivePlanes(k))
	for p := range alive {
		alive[p] = make([]int32, len(x))
	}
	for v, l := range x {
		lab[v] = int32(l)
		if len(domains[v]) == 1 {
			per[v] = int32(domains[v][0] + 1)
		}
		for _, l := range domains[v] {
			alive[l/labelfile.AlivePlaneLabels][v] |= int32(uint32(1) << (l % labelfile.AlivePlaneLabels))
		}
	}
	header := func(kind labelfile.Kind, plane int) labelfile.Header {
		return labelfile.Header{Width: w, Height: h, Labels: k, Kind: kind, Plane: plane}
	}
	tiles := func(name string, hd labelfile.Header, values []int32) output {
		return output{name: name, file: func(path string) error {
			f, err := labelfile.Create(path, hd)
			if err != nil {
				return err
			}
			if err := f.WriteRect(0, 0, w, h, values); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}}
	}
	out := []output{tiles(LabelTilesFile, header(labelfile.Labeling, 0), lab), tiles(PersistentTilesFile, header(labelfile.Persistent, 0), per)}
	planes := make([]labelfile.Raster, len(alive))
	for p, masks := range alive {
		out = append(out, tiles(AlivePlaneFile(p), header(labelfile.Alive, p), masks))
		planes[p] = labelfile.Slice(header(labelfile.Alive, p), masks)
	}
	return append(out, output{name: PersistencyPNG, write: func(wr io.Writer) error {
		return labelfile.RenderAlivePNG(wr, labelfile.Slice(header(labelfile.Labeling, 0), lab), planes, pngSide)
	}})
}

// names are the file names of outputs.
func names(outputs []output) []string {
	var out []string
	for _, o := range outputs {
		out = append(out, o.name)
	}
	return out
}

// labelsOutput is labels.sol: the labeling x.
func labelsOutput(x []int) output {
	return output{name: LabelsFile, write: func(w io.Writer) error { return uai.WriteSolution(w, x) }}
}

// uaiOutputs are persistent.evid (ev) and labels.sol (x).
func uaiOutputs(x []int, ev uai.Evidence) []output {
	return []output{{name: PersistentFile, write: func(w io.Writer) error { return uai.WriteEvidence(w, ev) }}, labelsOutput(x)}
}

// rasterFiles are the label files of a windowed run, written in its stage (dir)
// under their own names and moved into place with the other outputs.
type rasterFiles struct {
	dir                         string
	persistent, labels, scratch *labelfile.File
}

func newRasterFiles(dir string, h labelfile.Header) (*rasterFiles, error) {
	fs := &rasterFiles{dir: dir}
	create := func(name string, kind labelfile.Kind) (*labelfile.File, error) {
		h.Kind = kind
		return labelfile.Create(filepath.Join(dir, name), h)
	}
	var err error
	if fs.persistent, err = create(PersistentTilesFile, labelfile.Persistent); err == nil {
		if fs.labels, err = create(LabelTilesFile, labelfile.Labeling); err == nil {
			fs.scratch, err = create("scratch.plf", labelfile.Persistent)
		}
	}
	if err != nil {
		fs.remove()
		return nil, err
	}
	return fs, nil
}

// finish closes the output files (writing their checksums) and removes the
// scratch file.
func (fs *rasterFiles) finish() error {
	for _, f := range []*labelfile.File{fs.persistent, fs.labels} {
		if err := f.Close(); err != nil {
			return err
		}
	}
	fs.scratch.Close()
	return os.Remove(fs.scratch.Name())
}

// remove closes the files (the stage's removal deletes them).
func (fs *rasterFiles) remove() {
	for _, f := range []*labelfile.File{fs.scratch, fs.persistent, fs.labels} {
		if f != nil {
			f.Close()
		}
	}
}

// open opens the finished outputs for reading.
func (fs *rasterFiles) open() (lab, pers *labelfile.File, err error) {
	if lab, err = labelfile.Open(filepath.Join(fs.dir, LabelTilesFile)); err != nil {
		return nil, nil, err
	}
	if pers, err = labelfile.Open(filepath.Join(fs.dir, PersistentTilesFile)); err != nil {
		lab.Close()
		return nil, nil, err
	}
	return lab, pers, nil
}

// png renders persistency.png of the finished outputs.
func (fs *rasterFiles) png(out io.Writer, maxSide int) error {
	lab, pers, err := fs.open()
	if err != nil {
		return err
	}
	defer lab.Close()
	defer pers.Close()
	return labelfile.RenderPNG(out, lab, pers, maxSide)
}

// live renders the persistency map of the files being written (label files
// allow reads while windows are merged).
func (fs *rasterFiles) live(w io.Writer, maxSide int) error {
	return labelfile.RenderPNG(w, fs.labels, fs.persistent, maxSide)
}

// read returns the whole labeling and the proven labels (−1 unproven).
func (fs *rasterFiles) read() (x, proven []int, err error) {
	lab, pers, err := fs.open()
	if err != nil {
		return nil, nil, err
	}
	defer lab.Close()
	defer pers.Close()
	h := lab.Header()
	buf := make([]int32, h.Width*h.Height)
	if err := lab.ReadRect(0, 0, h.Width, h.Height, buf); err != nil {
		return nil, nil, err
	}
	x = make([]int, len(buf))
	for i, l := range buf {
		x[i] = int(l)
	}
	if err := pers.ReadRect(0, 0, h.Width, h.Height, buf); err != nil {
		return nil, nil, err
	}
	proven = make([]int, len(buf))
	for i, p := range buf {
		proven[i] = int(p) - 1
	}
	return x, proven, nil
}
