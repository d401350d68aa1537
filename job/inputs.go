package job

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/partition"
)

// Cheap checks first. The operations that read a result back — Verify, Energy,
// Export, Reduce — check the result directory and the files they need (that
// they exist, that their headers read, that they agree with each other and
// with a .grid model's header) before they read the model, which may be
// gigabytes; and none reads a .grid model past MaxInMemoryPixels whole: they
// work by bands or windows, or refuse before reading. A mistyped directory is
// one line, at once.

// maxReportBytes bounds the report.json the checks decode (a report is a few
// kilobytes; a lost-windows list of a huge run, a few megabytes).
const maxReportBytes = 64 << 20

// resultDir is a result directory that passed openResultDir.
type resultDir struct {
	path   string
	report *resultReport // nil without report.json
}

// resultReport is what the checks read of report.json: fields that the
// reports of every method, and of a cluster job, share.
type resultReport struct {
	Method    string `json:"method"`
	Model     string `json:"model"`
	Plan      string `json:"plan"` // windowed runs
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Variables int64  `json:"variables"` // the model's variables (a raster's pixels)
}

// openResultDir checks that dir is a directory that holds a partopt result:
// its report.json, which must decode, or, for a directory whose report is
// gone (an interrupted commit, or files copied by hand), one of the outputs.
func openResultDir(dir string) (*resultDir, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, missing("result directory "+dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("result directory %s is a file, not a directory", dir)
	}
	d := &resultDir{path: dir}
	path := filepath.Join(dir, ReportFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		for _, name := range allOutputs {
			if d.has(name) {
				return d, nil
			}
		}
		return nil, fmt.Errorf("%s: no %s: not a partopt result directory", dir, ReportFile)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d.report = new(resultReport)
	if err := json.NewDecoder(io.LimitReader(f, maxReportBytes)).Decode(d.report); err != nil {
		return nil, fmt.Errorf("%s: not a partopt report: %v", path, err)
	}
	return d, nil
}

// missing is the error of a path that could not be stat'ed: what, then the
// reason ("no such file or directory"), which errors.Is still finds.
func missing(what string, err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", what, pe.Err)
	}
	return err
}

// file is the path of name in the directory.
func (d *resultDir) file(name string) string { return filepath.Join(d.path, name) }

// has says whether the directory holds name.
func (d *resultDir) has(name string) bool {
	_, err := os.Stat(d.file(name))
	return err == nil
}

// need checks that the directory holds the file name; hint says what writes
// it, for the error.
func (d *resultDir) need(name, hint string) (string, error) {
	path := d.file(name)
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w (%s)", missing(path, err), hint)
	case info.IsDir():
		return "", fmt.Errorf("%s is a directory, not a file", path)
	}
	return path, nil
}

// modelHeader checks the model file before it is read: a .grid file's header
// (isGrid), or that any other model file exists.
func modelHeader(modelPath string) (h grid.Header, isGrid bool, err error) {
	if IsGridFile(modelPath) {
		h, err := gridHeader(modelPath)
		return h, true, err
	}
	info, err := os.Stat(modelPath)
	switch {
	case err != nil:
		return h, false, missing("model "+modelPath, err)
	case info.IsDir():
		return h, false, fmt.Errorf("model %s is a directory, not a model file", modelPath)
	}
	return h, false, nil
}

// pixels is the number of pixels of a grid.
func pixels(h grid.Header) int64 { return int64(h.Width) * int64(h.Height) }

// checkWholeRead refuses to read a .grid model past maxInMemoryPixels into
// memory for what (an operation that would read it whole).
func checkWholeRead(modelPath string, h grid.Header, what string) error {
	if n := pixels(h); n > maxInMemoryPixels {
		return fmt.Errorf("%s: %d×%d pixels: %s reads the model into memory, up to %d pixels: %w",
			modelPath, h.Width, h.Height, what, maxInMemoryPixels, errTooLarge)
	}
	return nil
}

// checkGridResult checks that the report of the directory, when it has one,
// is of the .grid model of header h at modelPath.
func (d *resultDir) checkGridResult(modelPath string, h grid.Header) error {
	r := d.report
	if r == nil {
		return nil
	}
	if (r.Variables > 0 && r.Variables != pixels(h)) || (r.Width > 0 && (r.Width != h.Width || r.Height != h.Height)) {
		return fmt.Errorf("%s: a result of a model of %d variables (%s), but %s has %d×%d pixels: a result of another model",
			d.file(ReportFile), r.Variables, r.Model, modelPath, h.Width, h.Height)
	}
	return nil
}

// checkLabelFile reads the header of the label file path, which must be of
// kind and, when want is set, of the size of want (the label file wantFrom).
func checkLabelFile(path string, kind labelfile.Kind, want *labelfile.Header, wantFrom string) (labelfile.Header, error) {
	f, err := labelfile.Open(path)
	if err != nil {
		return labelfile.Header{}, err
	}
	h := f.Header()
	f.Close()
	if h.Kind != kind {
		return h, fmt.Errorf("%s: a %v map, where the result has a %v map", path, h.Kind, kind)
	}
	if want != nil && (h.Width != want.Width || h.Height != want.Height) {
		return h, fmt.Errorf("%s: %d×%d pixels, %s %d×%d: the files of two results", path, h.Width, h.Height, wantFrom, want.Width, want.Height)
	}
	return h, nil
}

// checkLabelFiles reads the headers of the label files of the directory
// (labels.plf, persistent.plf, the alive planes), which must agree; it
// returns their dimensions (nil without label files).
func (d *resultDir) checkLabelFiles() (*labelfile.Header, error) {
	var first *labelfile.Header
	var from string
	check := func(name string, kind labelfile.Kind) (bool, error) {
		if !d.has(name) {
			return false, nil
		}
		h, err := checkLabelFile(d.file(name), kind, first, from)
		if err != nil {
			return false, err
		}
		if first == nil {
			first, from = &h, name
		}
		return true, nil
	}
	for _, c := range []struct {
		name string
		kind labelfile.Kind
	}{{LabelTilesFile, labelfile.Labeling}, {PersistentTilesFile, labelfile.Persistent}} {
		if _, err := check(c.name, c.kind); err != nil {
			return nil, err
		}
	}
	for p := 0; ; p++ {
		ok, err := check(AlivePlaneFile(p), labelfile.Alive)
		if err != nil {
			return nil, err
		}
		if !ok {
			return first, nil
		}
	}
}

// checkVerify is Verify's cheap checks, before it reads the model: the
// directory holds a result, with its proofs — window certificates (windowed)
// or certificate.gob, whose headers read — and its claims: for a windowed
// result its persistent outputs, whose label files' headers agree; for a
// whole-model run with its report persistent.evid, labels.sol and an
// elimination's domains.txt (without a report, files put together by hand,
// those are checked after the certificate is read); a .grid model's header
// agrees with them; and a whole-model result's .grid model is not past
// memory (a run that read it whole would not have been).
func checkVerify(modelPath, dir string) (windowed bool, err error) {
	d, err := openResultDir(dir)
	if err != nil {
		return false, err
	}
	var plf *labelfile.Header
	if windowed = d.has(WindowCertificatesFile); windowed {
		path := d.file(WindowCertificatesFile)
		if err := checkProofsHeader(path); err != nil {
			return true, err
		}
		if !d.has(PersistentFile) && !d.has(PersistentTilesFile) {
			return true, fmt.Errorf("%s holds neither %s nor %s: nothing claims persistent labels", dir, PersistentFile, PersistentTilesFile)
		}
		if plf, err = d.checkLabelFiles(); err != nil {
			return true, err
		}
	} else {
		if !d.has(CertificateFile) && d.report != nil && d.report.Plan != "" {
			return false, fmt.Errorf("%s holds a windowed result without its %s (written since partopt kept window certificates): nothing to verify it from", dir, WindowCertificatesFile)
		}
		path, err := d.need(CertificateFile, "partopt solve --method pbp writes it")
		if r := d.report; err != nil && r != nil && (r.Method == string(TRWS) || r.Method == string(SRMP)) {
			return false, fmt.Errorf("%w: a %s run proves no persistency", err, r.Method)
		}
		if err != nil {
			return false, err
		}
		if err := checkResultFileHeader(path); err != nil {
			return false, err
		}
		if d.report != nil { // a complete run (its report is written last): the files its proof claims are there
			needs := []string{PersistentFile, LabelsFile}
			if m := Method(d.report.Method); m == IRI || m == PBPIRI {
				needs = append(needs, DomainsFile)
			}
			for _, name := range needs {
				if _, err := d.need(name, "the run that wrote "+CertificateFile+" writes it"); err != nil {
					return false, err
				}
			}
		}
	}
	h, isGrid, err := modelHeader(modelPath)
	if err != nil || !isGrid {
		return windowed, err
	}
	if err := d.checkGridResult(modelPath, h); err != nil {
		return windowed, err
	}
	if plf != nil && (plf.Width != h.Width || plf.Height != h.Height) {
		return windowed, fmt.Errorf("%s: %d×%d pixels, but %s has %d×%d: a result of another model", dir, plf.Width, plf.Height, modelPath, h.Width, h.Height)
	}
	if !windowed {
		return false, checkWholeRead(modelPath, h, "verify of a whole-model result ("+CertificateFile+")")
	}
	return true, nil
}

// resultFileMagic starts a result file (persistency.WriteResult), as
// certificate.gob does.
const resultFileMagic = "partopt persistency result\n"

// checkResultFileHeader checks that the file path starts as a result file.
func checkResultFileHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, len(resultFileMagic))
	if n, _ := io.ReadFull(f, b); string(b[:n]) != resultFileMagic {
		return fmt.Errorf("%s: not a result file (no %q header)", path, strings.TrimSpace(resultFileMagic))
	}
	return nil
}

// checkProofsHeader checks that the file path starts as a window
// certificates file (partition.NewProofReader reads only its header).
func checkProofsHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = partition.NewProofReader(path, f, st.Size(), 0)
	return err
}

// checkLabeling is Energy's check of the labeling file, before it reads the
// model: a label raster (.plf) whose header reads and is a labeling, returned;
// or a solution file that starts as one does ("MPE", "MAP" or a label).
func checkLabeling(path string) (*labelfile.Header, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, missing("labeling "+path, err)
	}
	if info.IsDir() {
		var in []string
		for _, name := range []string{LabelTilesFile, LabelsFile} {
			if _, err := os.Stat(filepath.Join(path, name)); err == nil {
				in = append(in, filepath.Join(path, name))
			}
		}
		if len(in) == 0 {
			return nil, fmt.Errorf("labeling %s is a directory, not a labeling file (labels.sol or labels.plf)", path)
		}
		return nil, fmt.Errorf("labeling %s is a directory: give its labeling file, %s", path, strings.Join(in, " or "))
	}
	if isLabelRaster(path) {
		f, err := labelfile.Open(path)
		if err != nil {
			return nil, err
		}
		h := f.Header()
		f.Close()
		if h.Kind != labelfile.Labeling {
			return nil, fmt.Errorf("%s: a %v map, not a labeling (labels.plf)", path, h.Kind)
		}
		return &h, nil
	}
	r, err := uai.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sc := bufio.NewScanner(io.LimitReader(r, 1<<16))
	sc.Buffer(make([]byte, 0, 1<<12), 1<<16)
	sc.Split(bufio.ScanWords)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: not a labeling: %v", path, err)
		}
		return nil, fmt.Errorf("%s: empty file: not a labeling", path)
	}
	tok := sc.Text()
	if w := strings.ToUpper(tok); w != "MPE" && w != "MAP" {
		if n, err := strconv.ParseUint(tok, 10, 63); err != nil || n > 1<<62 {
			return nil, fmt.Errorf("%s: starts with %q: not a labeling (\"MPE\", then the variable count and the labels; or the labels)", path, clip(tok))
		}
	}
	return nil, nil
}

// clip shortens a token for a message.
func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

// checkEnergyModel is Energy's check of a .grid model (header h) against the
// labeling raster (nil: a solution file), before it reads the model: the
// raster must be of its pixels and labels, and a solution file of a model
// past memory is refused (the model is read whole for it).
func checkEnergyModel(modelPath string, h grid.Header, labeling string, raster *labelfile.Header) error {
	if raster == nil {
		if err := checkWholeRead(modelPath, h, "the energy of a solution file"); err != nil {
			return fmt.Errorf("%w (the energy of the result's labels.plf is read band by band)", err)
		}
		return nil
	}
	if err := checkRaster(labeling, *raster, pixels(h)); err != nil {
		return err
	}
	if raster.Labels > h.Labels {
		return fmt.Errorf("%s: labels up to %d, the model has %d", labeling, raster.Labels-1, h.Labels)
	}
	return nil
}

// checkExportSource is Export's check of src, before it writes: a result
// directory with the label raster name, or a label file; it returns the
// label file's path.
func checkExportSource(src, name string) (string, error) {
	info, err := os.Stat(src)
	if err != nil {
		return "", missing("result "+src, err)
	}
	if !info.IsDir() {
		f, err := os.Open(src)
		if err != nil {
			return "", err
		}
		b := make([]byte, len(labelfile.Magic))
		n, _ := io.ReadFull(f, b)
		f.Close()
		if string(b[:n]) != labelfile.Magic {
			return "", fmt.Errorf("%s: not a label file (.plf): export writes the label rasters of a result (%s, %s) or its directory", src, LabelTilesFile, PersistentTilesFile)
		}
		return src, nil
	}
	d, err := openResultDir(src)
	if err != nil {
		return "", err
	}
	if !d.has(name) && !d.has(LabelTilesFile) && d.has(LabelsFile) {
		return "", fmt.Errorf("%s holds no %s: export writes label rasters, and this result's model is not a raster (its labeling is %s)", src, name, LabelsFile)
	}
	return d.need(name, "a raster result's label file, which solve, run and fetch write")
}

// checkOutputDir checks that the directory of the output file out exists.
func checkOutputDir(out string) error {
	dir := filepath.Dir(out)
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return missing(fmt.Sprintf("output %s: directory %s", out, dir), err)
	case !info.IsDir():
		return fmt.Errorf("output %s: %s is a file, not a directory", out, dir)
	}
	return nil
}

// CheckReduce is Reduce's cheap checks, for its callers to make before Reduce
// reads the model: out's directory exists; dir is a result directory with
// its domains file, whose first line is a variable count; the model exists
// and, a .grid file, has that many pixels and is not past MaxInMemoryPixels
// (Reduce reads the model whole, and writes it whole as UAI).
func CheckReduce(modelPath, dir, out string) error {
	if err := checkOutputDir(out); err != nil {
		return err
	}
	d, err := openResultDir(dir)
	if err != nil {
		return err
	}
	path, err := d.need(DomainsFile, "partopt solve --method iri or pbp+iri writes it")
	if err != nil {
		return err
	}
	n, err := domainsCount(path)
	if err != nil {
		return err
	}
	h, isGrid, err := modelHeader(modelPath)
	if err != nil || !isGrid {
		return err
	}
	if n != pixels(h) {
		return fmt.Errorf("%s: %d variables, but %s has %d×%d pixels: a result of another model", path, n, modelPath, h.Width, h.Height)
	}
	return checkWholeRead(modelPath, h, "reduce")
}

// domainsCount reads the first line of a domains file, its variable count.
func domainsCount(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<16))
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n < 0 || len(fields) != 1 {
			return 0, fmt.Errorf("%s: line %d: %q: want the number of variables: not a domains file", path, line, clip(sc.Text()))
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: not a domains file: %v", path, err)
	}
	return 0, fmt.Errorf("%s: empty file: not a domains file", path)
}
