package job_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
)

const (
	denoise = "../testdata/denoise32.uai.gz" // a 32×32 raster, 4 labels
	network = "../testdata/network-evid.uai" // higher order, with evidence
)

// outputs reads every file of dir but report.json (whose timings differ).
func outputs(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Name() == job.ReportFile {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

func sameOutputs(t *testing.T, a, b map[string][]byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d files against %d", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs", name)
		}
	}
}

// inProcess is a Runtime that does what the contract asks with partition's own
// loops, recording what it was handed.
type inProcess struct {
	got []*job.Distributed
}

func (r *inProcess) Windows(ctx context.Context, d *job.Distributed) (*job.Outcome, error) {
	r.got = append(r.got, d)
	opt := protocol.JobSpec(d.Spec).Persistency()
	if d.Graph != nil {
		return nil, errors.New("graph jobs are not run by this test runtime")
	}
	if d.Windows != nil { // a raster iri job
		res, err := partition.EliminateRaster(ctx, d.Raster, d.Alive, d.Prior, d.Labeling, d.Persistent, partition.RasterEliminateOptions{
			Plan: d.Windows, MaxLevel: d.MaxLevel, Solver: opt.Solver, Workers: 2, MaxRounds: d.Spec.MaxRounds, Proofs: d.Proofs})
		if err != nil {
			return nil, err
		}
		return &job.Outcome{RasterElimination: res, Runtime: "test"}, nil
	}
	res, err := partition.SolveRaster(ctx, d.Raster, d.Persistent, d.Labeling, d.Scratch,
		partition.RasterOptions{Core: d.Spec.Core, Halo: d.Spec.Halo, Persistency: opt, Workers: 2, MaxRounds: d.Spec.MaxRounds, Proofs: d.Proofs})
	if err != nil {
		return nil, err
	}
	return &job.Outcome{RasterResult: *res, Runtime: "test"}, nil
}

// TestRuntimeGetsTheJobAndWritesTheSameOutputs: a windowed job handed to a
// Runtime is described by its wire spec, and the outputs written from what the
// runtime left in the stores are those of the job solved here.
func TestRuntimeGetsTheJobAndWritesTheSameOutputs(t *testing.T) {
	here, there := t.TempDir(), t.TempDir()
	s := job.Spec{Model: denoise, Method: job.PBP, Window: 12, Halo: 4, Output: here}
	if _, err := job.Run(context.Background(), s, job.Options{}); err != nil {
		t.Fatal(err)
	}
	rt := &inProcess{}
	s.Output = there
	res, err := job.Run(context.Background(), s, job.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, outputs(t, here), outputs(t, there))
	if len(rt.got) != 1 {
		t.Fatalf("runtime called %d times", len(rt.got))
	}
	d := rt.got[0]
	if sp := d.Spec; sp.Width != 32 || sp.Height != 32 || sp.Labels != 4 || sp.Core != 12 || sp.Halo != 4 || sp.MaxRounds != job.DefaultRounds ||
		sp.Layout != "" || !filepath.IsAbs(sp.Model.Path) || d.PNG == nil || d.ModelPath != denoise {
		t.Errorf("runtime got spec %+v, model %q", sp, d.ModelPath)
	}
	if rep := res.Report.(*job.WindowsReport); rep.Runtime != "test" || rep.Plan != "raster" || rep.PersistentVariables == 0 || len(rep.LostWindows) != 0 {
		t.Errorf("report %+v", rep)
	}
}

// TestWireRoundTrip: a submitted job's spec, back as a Spec, is the job that
// was submitted (what a coordinator runs is what the user asked for).
func TestWireRoundTrip(t *testing.T) {
	s := job.Spec{Model: network, Window: 3, Rounds: 2, Boundary: persistency.Original}
	s.Solver.GapTolerance, s.Solver.CheckEvery, s.Solver.StallIterations, s.Solver.MaxIterations = 1e-6, 3, 50, 77
	w, err := job.Wire(s)
	if err != nil {
		t.Fatal(err)
	}
	if w.Layout != protocol.LayoutGraph || w.Halo != job.DefaultRegionHalo || w.Width != 116 || w.Height != 1 {
		t.Fatalf("wire spec %+v: want a graph job of the 116 free variables, halo %d", w, job.DefaultRegionHalo)
	}
	back := job.FromWire(w, network, "out")
	if w.Method != protocol.MethodPBPIRI || back.Method != job.PBPIRI {
		t.Errorf("the default method travels as %q and comes back as %q, want pbp+iri", w.Method, back.Method)
	}
	if back.Window != 3 || back.Halo != job.DefaultRegionHalo || back.Rounds != 2 || back.Boundary != persistency.Original ||
		back.Solver.GapTolerance != 1e-6 || back.Solver.CheckEvery != 3 || back.Solver.StallIterations != 50 || back.Solver.MaxIterations != 77 {
		t.Errorf("back %+v", back)
	}
	s.Halo = job.NoHalo
	if w, err = job.Wire(s); err != nil || w.Halo != 0 || job.FromWire(w, network, "out").Halo != job.NoHalo {
		t.Errorf("no halo: wire %d, %v", w.Halo, err)
	}
	// pbp+iri's stages keep their own default rounds (3 and 12) unless given.
	s.Rounds = 0
	if w, err = job.Wire(s); err != nil || w.MaxRounds != job.DefaultRounds || w.EliminationRounds != job.DefaultEliminationRounds || job.FromWire(w, network, "out").Rounds != 0 {
		t.Errorf("default rounds: wire %d and %d, %v", w.MaxRounds, w.EliminationRounds, err)
	}
	// What a cluster cannot run is refused, not run as something else.
	for _, bad := range []struct {
		s    job.Spec
		want string
	}{
		{job.Spec{Model: network}, "by windows only"},
		{job.Spec{Model: network, Window: 3, Method: job.TRWS}, "by windows only"},
	} {
		if _, err := job.Wire(bad.s); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: wire error %v", bad.s, err)
		}
	}
}

// TestWireRoundTripOfLabelElimination: an iri job travels as a graph job of
// method iri with the plans' halo, and comes back as method iri (a raster model
// without evidence: its square windows' halo).
func TestWireRoundTripOfLabelElimination(t *testing.T) {
	for _, tc := range []struct {
		model string
		vars  int
		halo  int
	}{{network, 116, job.DefaultRegionHalo}, {denoise, 32 * 32, job.DefaultRasterHalo}} {
		w, err := job.Wire(job.Spec{Model: tc.model, Window: 8, Method: job.IRI})
		if err != nil {
			t.Fatal(err)
		}
		if w.Method != protocol.MethodIRI || w.Layout != protocol.LayoutGraph || w.Width != tc.vars || w.Halo != tc.halo || w.MaxRounds != job.DefaultEliminationRounds {
			t.Errorf("%s: wire spec %+v", tc.model, w)
		}
		if back := job.FromWire(w, tc.model, "out"); back.Method != job.IRI || back.Window != 8 || back.Halo != tc.halo {
			t.Errorf("%s: back %+v", tc.model, back)
		}
	}
}

// TestRunRefusesBadSpecs: bad specs are errors before anything is read or
// written, and not InternalErrors.
func TestRunRefusesBadSpecs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		spec job.Spec
		want string
	}{
		{"method", job.Spec{Model: denoise, Output: dir, Method: "frob"}, "method"},
		{"boundary", job.Spec{Model: denoise, Output: dir, Method: job.TRWS, Boundary: persistency.Original}, "boundary"},
		{"no model", job.Spec{Output: dir}, "no model"},
		{"no output", job.Spec{Model: denoise}, "output"},
		{"window", job.Spec{Model: denoise, Output: dir, Window: -1}, "window"},
		{"windowed lp", job.Spec{Model: denoise, Output: dir, Window: 8, Method: job.SRMP}, "does not solve by windows"},
		{"missing file", job.Spec{Model: filepath.Join(dir, "none.uai"), Output: dir}, "none.uai"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := job.Run(context.Background(), c.spec, job.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, new(job.InternalError)) {
				t.Errorf("error %v: want bad input mentioning %q", err, c.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused specs wrote %d files", len(entries))
	}
}

// TestInterruptedProofWritesNothing: a canceled pbp run proves nothing, so it
// writes nothing; a canceled trws solve writes the best labeling found.
func TestInterruptedProofWritesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	for _, s := range []job.Spec{{Model: denoise, Output: dir}, {Model: denoise, Output: dir, Window: 16}} {
		_, err := job.Run(ctx, s, job.Options{})
		if !errors.As(err, new(job.InternalError)) || !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("window %d: error %v, want an interrupted InternalError", s.Window, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("window %d: an interrupted run wrote %d files", s.Window, len(entries))
		}
	}
	var notes []string
	res, err := job.Run(ctx, job.Spec{Model: denoise, Output: dir, Method: job.TRWS}, job.Options{Note: func(m string) { notes = append(notes, m) }})
	if err != nil || !res.Canceled || res.Report.(*job.LPReport).Stop != "canceled" {
		t.Fatalf("trws: %v, %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(dir, job.LabelsFile)); err != nil || len(notes) != 1 || !strings.Contains(notes[0], "interrupted") {
		t.Errorf("trws canceled: labels %v, notes %q", err, notes)
	}
}

// TestEveryRunLeavesOnlyItsOwnOutputs: runs of different kinds into one
// directory never leave another run's files behind.
func TestEveryRunLeavesOnlyItsOwnOutputs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		spec job.Spec
		want []string
	}{
		{job.Spec{Method: job.PBP, Window: 16}, []string{job.LabelTilesFile, job.LabelsFile, job.OptimalFile, job.PersistencyPNG, job.PersistentFile, job.PersistentTilesFile, job.ReportFile, job.WindowCertificatesFile}},
		{job.Spec{Method: job.PBP, Window: 16, Complete: job.Completion{Off: true}}, []string{job.LabelTilesFile, job.LabelsFile, job.PersistencyPNG, job.PersistentFile, job.PersistentTilesFile, job.ReportFile, job.WindowCertificatesFile}},
		{job.Spec{Window: 16}, []string{job.AliveTilesFile, job.DomainsFile, job.LabelTilesFile, job.LabelsFile, job.OptimalFile,
			job.PersistencyPNG, job.PersistentFile, job.PersistentTilesFile, job.ReportFile, job.WindowCertificatesFile}},
		{job.Spec{Method: job.PBP}, []string{job.CertificateFile, job.LabelsFile, job.OptimalFile, job.PersistentFile, job.ReportFile}},
		{job.Spec{}, []string{job.AliveTilesFile, job.CertificateFile, job.DomainsFile, job.LabelTilesFile, job.LabelsFile, job.OptimalFile,
			job.PersistencyPNG, job.PersistentFile, job.PersistentTilesFile, job.ReportFile}},
		{job.Spec{Complete: job.Completion{Off: true}}, []string{job.AliveTilesFile, job.CertificateFile, job.DomainsFile, job.LabelTilesFile, job.LabelsFile,
			job.PersistencyPNG, job.PersistentFile, job.PersistentTilesFile, job.ReportFile}},
		{job.Spec{Method: job.SRMP}, []string{job.LabelsFile, job.ReportFile}},
	} {
		c.spec.Model, c.spec.Output = denoise, dir
		if _, err := job.Run(context.Background(), c.spec, job.Options{}); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		slices.Sort(c.want)
		if !slices.Equal(names, c.want) {
			t.Errorf("%+v: files %v, want %v", c.spec, names, c.want)
		}
	}
}

// TestVerifyCatchesATamperedEvidenceFile: Verify re-checks what the proof
// claims against the files, and a listed label the proof does not give is NOT
// verified (an InternalError, the files being readable).
func TestVerifyCatchesATamperedEvidenceFile(t *testing.T) {
	dir := t.TempDir()
	var notes []string
	if _, err := job.Run(context.Background(), job.Spec{Model: network, Output: dir}, job.Options{Note: func(m string) { notes = append(notes, m) }}); err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "applied evidence") {
		t.Errorf("notes %q: want the evidence note", notes)
	}
	if _, err := job.Verify(network, dir, false, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, job.PersistentFile)
	if err := os.WriteFile(path, []byte("1 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := job.Verify(network, dir, false, nil)
	if !errors.As(err, new(job.InternalError)) || !strings.Contains(err.Error(), "NOT verified") {
		t.Errorf("tampered evidence: %v", err)
	}
}

// TestConditionIsLoadProblem: a worker conditioning the model it holds on the
// evidence bytes it received solves the model a local run solves.
func TestConditionIsLoadProblem(t *testing.T) {
	p, err := job.LoadProblem(network, false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := modelfile.Read(network)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := os.ReadFile(network + ".evid")
	if err != nil {
		t.Fatal(err)
	}
	q, err := job.Condition(network, m, ev)
	if err != nil {
		t.Fatal(err)
	}
	if q.Solved.NumVars() != p.Solved.NumVars() || q.Evidence.Observed != p.Evidence.Observed {
		t.Fatalf("conditioned %d vars, %d observed; loaded %d, %d", q.Solved.NumVars(), q.Evidence.Observed, p.Solved.NumVars(), p.Evidence.Observed)
	}
	x := make([]int, p.Solved.NumVars())
	for i := range 50 {
		for v := range x {
			x[v] = (i + v) % p.Solved.NumLabels(v)
		}
		if a, b := p.Solved.Energy(x), q.Solved.Energy(x); a != b {
			t.Fatalf("labeling %v: energy %v against %v", x, b, a)
		}
	}
	if _, err := job.Condition(network, m, []byte("1 0 99\n")); err == nil || !strings.Contains(err.Error(), ".evid") {
		t.Errorf("bad evidence: %v", err)
	}
}

// TestLabelEliminationOutputsVerify: methods iri and pbp+iri write a proof that
// Verify re-checks with the domains, evidence and labeling files; pbp+iri proves
// at least as many variables as pbp; a domains file that differs from the proof is NOT
// verified, a malformed one is bad input.
func TestLabelEliminationOutputsVerify(t *testing.T) {
	for _, model := range []string{network, "../testdata/pedigree1.uai", "../testdata/dense40.uai"} {
		pbpDir := t.TempDir()
		pbp, err := job.Run(context.Background(), job.Spec{Model: model, Method: job.PBP, Output: pbpDir}, job.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, method := range []job.Method{job.IRI, job.PBPIRI} {
			dir := t.TempDir()
			res, err := job.Run(context.Background(), job.Spec{Model: model, Method: method, Output: dir}, job.Options{})
			if err != nil {
				t.Fatalf("%s %s: %v", model, method, err)
			}
			rep := res.Report.(*job.IRIReport)
			v, err := job.Verify(model, dir, false, nil)
			if err != nil || v.Persistent != rep.PersistentVariables {
				t.Fatalf("%s %s: verify %+v, %v; report %d persistent", model, method, v, err, rep.PersistentVariables)
			}
			if rep.Method != string(method) || !rep.Verified || rep.EliminatedLabelFraction < 0 || rep.EliminatedLabelFraction > 1 {
				t.Errorf("%s %s: report %+v", model, method, rep)
			}
			if p := pbp.Report.(*job.PBPReport); method == job.PBPIRI && (rep.PersistentVariables < p.PersistentVariables || (rep.PBPAddedVariables == nil) == (rep.PBPPersistentVariables == nil)) {
				t.Errorf("%s: pbp+iri proves %d persistent (pbp's first %v, additions %v), pbp alone %d", model, rep.PersistentVariables, rep.PBPPersistentVariables, rep.PBPAddedVariables, p.PersistentVariables)
			}
			domains := filepath.Join(dir, job.DomainsFile)
			good, err := os.ReadFile(domains)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(good)), "\n")
			edited := false
			for i := 1; i < len(lines) && !edited; i++ {
				if f := strings.Fields(lines[i]); len(f) > 2 { // a variable with 2+ labels: drop one
					lines[i], edited = fmt.Sprintf("%d %s", len(f)-2, strings.Join(f[2:], " ")), true
				}
			}
			for i := 1; i < len(lines) && !edited; i++ {
				if f := strings.Fields(lines[i]); f[1] != "0" { // revive label 0 of a persistent variable
					lines[i], edited = "2 0 "+f[1], true
				}
			}
			os.WriteFile(domains, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			if _, err := job.Verify(model, dir, false, nil); !errors.As(err, new(job.InternalError)) || !strings.Contains(err.Error(), "NOT verified") {
				t.Errorf("%s %s: edited domains: %v", model, method, err)
			}
			os.WriteFile(domains, []byte("3\n1 0\n"), 0o644)
			if _, err := job.Verify(model, dir, false, nil); err == nil || errors.As(err, new(job.InternalError)) {
				t.Errorf("%s %s: malformed domains: %v, want bad input", model, method, err)
			}
		}
	}
}

// TestRasterEliminationWritesItsMaps: label elimination on a raster model, whole
// and by windows, writes labels.plf equal to labels.sol, alive.plf whose masks are
// the domains of domains.txt, persistent.plf marking the pixels with one label
// left, and persistency.png of the raster's size.
func TestRasterEliminationWritesItsMaps(t *testing.T) {
	frustrated := filepath.Join(t.TempDir(), "potts.uai")
	if err := uai.WriteFile(frustrated, random.PottsGrid(random.New(5), 12, 10, 4)); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(t.TempDir(), "many.uai") // 40 labels: two alive planes
	if err := uai.WriteFile(many, random.PottsDenoising(random.New(6), 10, 8, 40, 6, 8, 1.5)); err != nil {
		t.Fatal(err)
	}
	multi, upper := false, false
	for _, c := range []struct {
		model string
		spec  job.Spec
	}{
		{denoise, job.Spec{Method: job.IRI}}, {denoise, job.Spec{Method: job.IRI, Window: 16, Halo: 4}},
		{frustrated, job.Spec{Method: job.IRI}}, {frustrated, job.Spec{Method: job.PBPIRI}}, {frustrated, job.Spec{Method: job.IRI, Window: 6, Halo: 2, Rounds: 1}},
		{many, job.Spec{Method: job.IRI}}, {many, job.Spec{Window: 6, Halo: 2}},
	} {
		dir := t.TempDir()
		c.spec.Model, c.spec.Output = c.model, dir
		if _, err := job.Run(context.Background(), c.spec, job.Options{}); err != nil {
			t.Fatal(err)
		}
		m, err := modelfile.Read(c.model)
		if err != nil {
			t.Fatal(err)
		}
		n := m.NumVars()
		x, err := uai.ReadSolutionFile(filepath.Join(dir, job.LabelsFile), n)
		if err != nil {
			t.Fatal(err)
		}
		domains, err := job.ReadDomains(filepath.Join(dir, job.DomainsFile), m)
		if err != nil {
			t.Fatal(err)
		}
		read := func(name string) []int32 {
			f, err := labelfile.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h := f.Header()
			v := make([]int32, h.Width*h.Height)
			if len(v) != n || h.Labels != m.NumLabels(0) {
				t.Fatalf("%s: %d×%d of %d labels for %d variables of %d", name, h.Width, h.Height, h.Labels, n, m.NumLabels(0))
			}
			if err := f.ReadRect(0, 0, h.Width, h.Height, v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		lab, pers := read(job.LabelTilesFile), read(job.PersistentTilesFile)
		planes := labelfile.AlivePlanes(m.NumLabels(0))
		for p := range planes + 1 { // and no plane beyond them
			path := filepath.Join(dir, job.AlivePlaneFile(p))
			if _, err := os.Stat(path); p == planes && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%+v: %s of %d labels: %v, want no such file", c.spec, job.AlivePlaneFile(p), m.NumLabels(0), err)
			}
		}
		alive := make([][]int32, planes)
		for p := range alive {
			alive[p] = read(job.AlivePlaneFile(p))
		}
		for v := range n {
			mask := make([]uint32, planes)
			for _, l := range domains[v] {
				mask[l/32] |= 1 << (l % 32)
			}
			want := int32(0)
			if len(domains[v]) == 1 {
				want = int32(domains[v][0] + 1)
			}
			multi = multi || len(domains[v]) > 1
			for p := range planes {
				upper = upper || p > 0 && mask[p] != 0
				if uint32(alive[p][v]) != mask[p] {
					t.Fatalf("%+v: pixel %d: plane %d mask %#b, domains %v", c.spec, v, p, alive[p][v], domains[v])
				}
			}
			if int(lab[v]) != x[v] || pers[v] != want {
				t.Fatalf("%+v: pixel %d: label %d (labels.sol %d), persistent %d, domains %v", c.spec, v, lab[v], x[v], pers[v], domains[v])
			}
		}
		f, err := os.Open(filepath.Join(dir, job.PersistencyPNG))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if w, h, _ := grid.Dims(m); err != nil || cfg.Width != w || cfg.Height != h {
			t.Errorf("%+v: persistency.png %+v, %v; want %d×%d", c.spec, cfg, err, w, h)
		}
	}
	if !multi || !upper {
		t.Errorf("masks of several labels checked: %v; labels of a second plane: %v", multi, upper)
	}
	// A run on 4 labels into the directory of a run on 40 removes its second plane.
	dir := t.TempDir()
	for _, model := range []string{many, denoise} {
		if _, err := job.Run(context.Background(), job.Spec{Model: model, Output: dir, Method: job.IRI}, job.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, job.AlivePlaneFile(1))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier run's %s stayed: %v", job.AlivePlaneFile(1), err)
	}
}

// TestReducedProblemKeepsTheOptimum: toulbar2 on the problem that "reduce" writes
// after a label elimination finds the optimum of the model with its evidence, on
// the committed fixtures (pairwise, higher order, evidence, forbidden states).
func TestReducedProblemKeepsTheOptimum(t *testing.T) {
	path, err := oracle.FindToulbar2()
	if err != nil {
		t.Skipf("toulbar2 not installed (%v): reduced problems not solved", err)
	}
	tb := oracle.Toulbar2{Path: path, Timeout: time.Minute}
	for _, name := range []string{"network-evid.uai", "pedigree1.uai", "water.uai", "dense40.uai", "grid4x4.uai", "tiny.uai"} {
		t.Run(name, func(t *testing.T) {
			modelPath := filepath.Join("../testdata", name)
			m, err := modelfile.Read(modelPath)
			if err != nil {
				t.Fatal(err)
			}
			var ev uai.Evidence
			if e, err := uai.ReadEvidenceFile(modelPath + ".evid"); err == nil {
				ev = e
			}
			want, err := tb.Solve(t.Context(), m, ev)
			if err != nil || !want.Optimal {
				t.Fatalf("toulbar2 on the model: %+v, %v", want, err)
			}
			for _, method := range []job.Method{job.IRI, job.PBPIRI} {
				dir := t.TempDir()
				res, err := job.Run(t.Context(), job.Spec{Model: modelPath, Method: method, Output: dir}, job.Options{})
				if err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(dir, "reduced.uai")
				if _, err := job.Reduce(modelPath, dir, out); err != nil {
					t.Fatal(err)
				}
				reduced, err := modelfile.Read(out)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tb.Solve(t.Context(), reduced, uai.Evidence{})
				if err != nil || !got.Optimal {
					t.Fatalf("%s: toulbar2 on the reduced model: %+v, %v", method, got, err)
				}
				// Energies of the original model: the reduced model's optimum is one of its labelings.
				e := m.Energy(got.Labeling)
				if math.Abs(e-want.Energy) > want.Tolerance+got.Tolerance+1e-6*math.Max(1, math.Abs(want.Energy)) {
					t.Errorf("%s (%d labels eliminated): the reduced problem's optimum has energy %v, the model's %v", method, res.Report.(*job.IRIReport).EliminatedLabels, e, want.Energy)
				}
			}
		})
	}
	if _, err := job.Reduce(network, t.TempDir(), filepath.Join(t.TempDir(), "x.LG")); err == nil || !strings.Contains(err.Error(), "LG") {
		t.Errorf("reduce to LG: %v", err)
	}
}

// TestEveryReportSaysWhereItComesFrom: every kind of report names the
// partopt that wrote it, where its windows ran (this process), and the model
// file by path, size and SHA-256.
func TestEveryReportSaysWhereItComesFrom(t *testing.T) {
	for _, s := range []job.Spec{
		{Model: denoise, Method: job.TRWS}, {Model: denoise, Method: job.PBP}, {Model: denoise, Method: job.IRI},
		{Model: denoise, Method: job.PBP, Window: 16, Halo: 4}, {Model: denoise, Method: job.IRI, Window: 16, Halo: 4},
		{Model: network, Method: job.PBP, Window: 20},
	} {
		t.Run(fmt.Sprintf("%s-%d-%s", s.Method, s.Window, filepath.Base(s.Model)), func(t *testing.T) {
			s.Output = t.TempDir()
			if _, err := job.Run(context.Background(), s, job.Options{}); err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Model   string `json:"model"`
				Runtime string `json:"runtime"`
				Version string `json:"partopt_version"`
				Bytes   int64  `json:"model_bytes"`
				SHA256  string `json:"model_sha256"`
			}
			raw, err := os.ReadFile(filepath.Join(s.Output, job.ReportFile))
			if err == nil {
				err = json.Unmarshal(raw, &rep)
			}
			data, _ := os.ReadFile(s.Model)
			want := sha256.Sum256(data)
			if err != nil || rep.Model != s.Model || rep.Runtime != job.RuntimeProcess || rep.Version == "" ||
				rep.Bytes != int64(len(data)) || rep.SHA256 != hex.EncodeToString(want[:]) {
				t.Errorf("report %+v, %v", rep, err)
			}
		})
	}
}

// TestVerifyReportsItsProgress: the replay of a windowed result reports how far
// it has read the window certificates, never backwards, to their end.
func TestVerifyReportsItsProgress(t *testing.T) {
	dir := t.TempDir()
	if _, err := job.Run(context.Background(), job.Spec{Model: denoise, Method: job.PBP, Window: 8, Halo: 2, Output: dir}, job.Options{}); err != nil {
		t.Fatal(err)
	}
	var reads []int64
	var size int64
	v, err := job.VerifyWith(denoise, dir, job.VerifyOptions{Progress: func(read, total int64) {
		reads, size = append(reads, read), total
	}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, job.WindowCertificatesFile))
	if err != nil {
		t.Fatal(err)
	}
	if v.Windows == 0 || len(reads) < 2 || size != info.Size() || reads[len(reads)-1] != size || !slices.IsSorted(reads) {
		t.Errorf("%d windows verified; progress %v of %d bytes (file %d)", v.Windows, reads, size, info.Size())
	}
}
