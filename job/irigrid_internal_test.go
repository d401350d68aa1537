package job

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// writeGrid writes m, a w×h raster, as a .grid file and returns its path.
func writeGrid(t *testing.T, m *model.Model, w, h int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.grid")
	if err := grid.WriteModelFile(path, m, w, h, 8); err != nil {
		t.Fatal(err)
	}
	return path
}

// truncatedRaster is a w×h raster of k labels with random unaries and
// truncated linear edges of one random weight (a small stereo model).
func truncatedRaster(rng *rand.Rand, w, h, k int) *model.Model {
	labels := make([]int, w*h)
	for v := range labels {
		labels[v] = k
	}
	b := model.NewBuilder(labels)
	for v := range labels {
		t := make([]float64, k)
		for l := range t {
			t[l] = 3 * rng.Float64()
		}
		if err := b.AddTable([]int{v}, t); err != nil {
			panic(err)
		}
	}
	fn, err := b.AddFunction(model.Function{Kind: model.TruncatedLinear, Shape: []int{k, k}, W: 0.1 + 0.4*rng.Float64(), T: 2})
	if err != nil {
		panic(err)
	}
	for y := range h {
		for x := range w {
			if x+1 < w {
				b.AddFactor(fn, y*w+x, y*w+x+1)
			}
			if y+1 < h {
				b.AddFactor(fn, y*w+x, (y+1)*w+x)
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// outputFiles reads every file of a result directory but its report.
func outputFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.Name() == ReportFile {
			continue
		}
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s: %s left in the output directory", dir, e.Name())
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

// TestOutOfCoreEliminationWritesTheInMemoryOutputs: with the in-memory bound
// lowered below a .grid model, solve --method iri|pbp+iri --window takes the
// out-of-core path (no refusal, no fallback to pbp) and writes exactly the files
// of the in-memory path — labels.plf, persistent.plf, the alive planes,
// persistency.png, window-certificates.bin, labels.sol, persistent.evid,
// domains.txt, byte for byte — and a report with the same counts; verify then
// replays its certificates out of core.
func TestOutOfCoreEliminationWritesTheInMemoryOutputs(t *testing.T) {
	denoise, err := modelfile.Read("../testdata/denoise32.uai.gz")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		m    *model.Model
		w, h int
		spec Spec
	}{
		{"denoise32 iri", denoise, 32, 32, Spec{Method: IRI, Window: 8, Halo: 2, Rounds: 3}},
		{"denoise32 pbp+iri", denoise, 32, 32, Spec{Method: PBPIRI, Window: 8, Halo: 2}},
		{"denoise32 default", denoise, 32, 32, Spec{Window: 16, Workers: 2}},
		{"potts iri", random.PottsGrid(random.New(3), 13, 9, 2), 13, 9, Spec{Method: IRI, Window: 4, Halo: 1, Rounds: 4}},
		{"denoising pbp+iri", random.PottsDenoising(random.New(6), 12, 10, 5, 2, 4, 1.5), 12, 10, Spec{Method: PBPIRI, Window: 4, Halo: 1, Workers: 2}},
		{"truncated linear iri", truncatedRaster(random.New(9), 12, 10, 5), 12, 10, Spec{Method: IRI, Window: 4, Halo: 1, Workers: 2}},
		{"truncated linear pbp+iri", truncatedRaster(random.New(4), 14, 10, 6), 14, 10, Spec{Method: PBPIRI, Window: 4, Halo: 1}},
		{"40 labels iri", random.PottsDenoising(random.New(6), 10, 8, 40, 6, 8, 1.5), 10, 8, Spec{Method: IRI, Window: 4, Halo: 1}},
	}
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Model = writeGrid(t, c.m, c.w, c.h)
			run := func(limit int64) (*WindowsReport, map[string][]byte, []string) {
				maxInMemoryPixels = limit
				s := c.spec
				s.Output = t.TempDir()
				var notes []string
				res, err := Run(context.Background(), s, Options{Note: func(n string) { notes = append(notes, n) }})
				if err != nil {
					t.Fatalf("bound %d: %v", limit, err)
				}
				v, err := Verify(s.Model, s.Output, false, nil)
				if err != nil {
					t.Fatalf("bound %d: verify: %v", limit, err)
				}
				rep := res.Report.(*WindowsReport)
				if int64(v.Persistent) != rep.PersistentVariables {
					t.Errorf("bound %d: verify finds %d persistent, the run %d", limit, v.Persistent, rep.PersistentVariables)
				}
				return rep, outputFiles(t, s.Output), notes
			}
			wantRep, want, _ := run(MaxInMemoryPixels)
			gotRep, got, notes := run(int64(c.w*c.h) - 1)
			if len(notes) != 0 {
				t.Errorf("notes %q: the out-of-core path fell back", notes)
			}
			for name, data := range want {
				if !bytes.Equal(got[name], data) {
					t.Errorf("%s: %d bytes out of core, %d in memory: they differ", name, len(got[name]), len(data))
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s written out of core only", name)
				}
			}
			if !slices.Equal(gotRep.Outputs, wantRep.Outputs) {
				t.Errorf("outputs %q, in memory %q", gotRep.Outputs, wantRep.Outputs)
			}
			g, w := *gotRep, *wantRep
			if math.Abs(float64(*g.Energy-*w.Energy)) > 1e-9*math.Max(1, math.Abs(float64(*w.Energy))) ||
				math.Abs(g.PersistentFraction-w.PersistentFraction) > 1e-12 {
				t.Errorf("energy %v, score %v; in memory %v, %v", *g.Energy, g.PersistentFraction, *w.Energy, w.PersistentFraction)
			}
			for _, r := range []*WindowsReport{&g, &w} {
				r.Energy, r.PersistentFraction, r.Seconds, r.WindowSeconds, r.VariablesPerSecond, r.PeakRSSBytes = nil, 0, 0, 0, 0, 0
				r.Provenance, r.Outputs = Provenance{}, nil
			}
			if *g.EliminatedLabels != *w.EliminatedLabels || *g.EliminatedLabelFraction != *w.EliminatedLabelFraction {
				t.Errorf("eliminated %d (%v), in memory %d (%v)", *g.EliminatedLabels, *g.EliminatedLabelFraction, *w.EliminatedLabels, *w.EliminatedLabelFraction)
			}
			g.EliminatedLabels, w.EliminatedLabels, g.EliminatedLabelFraction, w.EliminatedLabelFraction = nil, nil, nil, nil
			if (g.PBPPersistentVariables == nil) != (w.PBPPersistentVariables == nil) || (g.PBPPersistentVariables != nil && *g.PBPPersistentVariables != *w.PBPPersistentVariables) {
				t.Errorf("pbp persistent %v, in memory %v", g.PBPPersistentVariables, w.PBPPersistentVariables)
			}
			g.PBPPersistentVariables, w.PBPPersistentVariables = nil, nil
			if g.Optimal == nil || w.Optimal == nil || *g.Optimal != *w.Optimal || g.Completion == nil || w.Completion == nil {
				t.Errorf("optimal %v, in memory %v", g.Optimal, w.Optimal)
			} else {
				gc, wc := *g.Completion, *w.Completion
				gc.Seconds, wc.Seconds = 0, 0
				if !reflect.DeepEqual(gc, wc) {
					t.Errorf("completion %+v, in memory %+v", gc, wc)
				}
			}
			g.CompletionFields, w.CompletionFields = CompletionFields{}, CompletionFields{}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("report\n%+v\nin memory\n%+v", g, w)
			}
			t.Logf("%d of %d persistent, %d labels eliminated", gotRep.PersistentVariables, gotRep.FreeVariables, *gotRep.EliminatedLabels)
		})
	}
}

// TestOutOfCoreEliminationKeepsTheOptimum: past the in-memory bound, on small
// random rasters with and without evidence (which the in-memory path plans
// differently), the out-of-core elimination verifies and the labels it leaves
// hold an optimum of the model with its evidence (brute force; toulbar2 too,
// where installed).
func TestOutOfCoreEliminationKeepsTheOptimum(t *testing.T) {
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	maxInMemoryPixels = 1
	_, tb2Err := oracle.FindToulbar2()
	for seed := range uint64(16) {
		rng := random.New(200 + seed)
		w, h := 4, 3
		var m *model.Model
		switch seed % 3 {
		case 0:
			m = random.PottsGrid(rng, w, h, 3)
		case 1:
			m = truncatedRaster(rng, w, h, 3)
		default:
			m = random.PottsDenoising(rng, w, h, 3, 0.8, 4, 1.2)
		}
		path := writeGrid(t, m, w, h)
		stored, err := modelfile.Read(path) // float32 numbers, as solved
		if err != nil {
			t.Fatal(err)
		}
		fixed := make([]int, w*h)
		for v := range fixed {
			fixed[v] = -1
		}
		if seed%2 == 1 { // evidence on one pixel
			v, l := int(seed)%(w*h), int(seed/2)%stored.NumLabels(0)
			fixed[v] = l
			os.WriteFile(path+".evid", []byte("1 "+strconv.Itoa(v)+" "+strconv.Itoa(l)+"\n"), 0o644)
		}
		method := []Method{IRI, PBPIRI}[seed%2]
		dir := t.TempDir()
		if _, err := Run(context.Background(), Spec{Model: path, Method: method, Window: 1 + int(seed%2), Halo: int(seed % 2), Output: dir}, Options{}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if _, err := Verify(path, dir, false, nil); err != nil {
			t.Fatalf("seed %d: verify: %v", seed, err)
		}
		domains, err := ReadDomains(filepath.Join(dir, DomainsFile), stored)
		if err != nil {
			t.Fatal(err)
		}
		cond, err := stored.Condition(fixed)
		if err != nil {
			t.Fatal(err)
		}
		_, opt, err := oracle.BruteForce(cond.Model, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		for v, l := range fixed {
			if l >= 0 && !slices.Equal(domains[v], []int{l}) {
				t.Fatalf("seed %d: observed pixel %d: domain %v, evidence %d", seed, v, domains[v], l)
			}
		}
		restricted, err := stored.Restrict(domains)
		if err != nil {
			t.Fatal(err)
		}
		_, ropt, err := oracle.BruteForce(restricted, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ropt-opt) > 1e-6*math.Max(1, math.Abs(opt)) {
			t.Errorf("seed %d (%s): optimum %v, over the alive labels %v", seed, method, opt, ropt)
		}
		if tb2Err == nil && seed%4 == 0 {
			res, err := oracle.Toulbar2{}.Solve(context.Background(), restricted, uai.Evidence{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Energy-opt > res.Tolerance+1e-6*math.Max(1, math.Abs(opt)) {
				t.Errorf("seed %d: toulbar2 on the alive labels: %v, the optimum %v", seed, res.Energy, opt)
			}
		}
	}
}

// TestVerifyRejectsAForgedOutOfCoreElimination: verify of an out-of-core
// elimination (past the bound: replayed out of core) rejects an alive.plf that
// keeps fewer labels than the proofs leave, a domains.txt that keeps more, a
// persistent.plf or labels.plf that contradicts them, and certificates without their records or with the
// proofs of two windows swapped.
func TestVerifyRejectsAForgedOutOfCoreElimination(t *testing.T) {
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	maxInMemoryPixels = 1
	m := truncatedRaster(random.New(9), 12, 10, 5)
	path := writeGrid(t, m, 12, 10)
	good := t.TempDir()
	if _, err := Run(context.Background(), Spec{Model: path, Method: IRI, Window: 4, Halo: 1, Output: good}, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(path, good, false, nil); err != nil {
		t.Fatal(err)
	}
	fresh := func(t *testing.T) string {
		dir := t.TempDir()
		for name, data := range outputFiles(t, good) {
			os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		data, _ := os.ReadFile(filepath.Join(good, ReportFile))
		os.WriteFile(filepath.Join(dir, ReportFile), data, 0o644)
		return dir
	}
	edit := func(t *testing.T, dir, name string, change func(vals []int32) bool) {
		t.Helper()
		f, err := labelfile.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h := f.Header()
		vals := make([]int32, h.Width*h.Height)
		f.ReadRect(0, 0, h.Width, h.Height, vals)
		f.Close()
		if !change(vals) {
			t.Skipf("%s: nothing to forge", name)
		}
		g, err := labelfile.Create(filepath.Join(dir, name), h)
		if err != nil {
			t.Fatal(err)
		}
		g.WriteRect(0, 0, h.Width, h.Height, vals)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	notVerified := func(t *testing.T, dir string) {
		t.Helper()
		_, err := Verify(path, dir, false, nil)
		if !errors.As(err, new(InternalError)) || !strings.Contains(err.Error(), "NOT verified") {
			t.Errorf("%v, want NOT verified", err)
		}
	}
	t.Run("alive.plf drops a label the proofs keep", func(t *testing.T) {
		dir := fresh(t)
		edit(t, dir, AliveTilesFile, func(vals []int32) bool {
			for v, x := range vals {
				if m := uint32(x); m&(m-1) != 0 { // two labels or more
					vals[v] = int32(m & (m - 1))
					return true
				}
			}
			return false
		})
		notVerified(t, dir)
	})
	t.Run("persistent.plf claims an undecided pixel", func(t *testing.T) {
		dir := fresh(t)
		alive := readPlane(t, filepath.Join(good, AliveTilesFile))
		edit(t, dir, PersistentTilesFile, func(vals []int32) bool {
			for v, x := range vals {
				if m := uint32(alive[v]); x == 0 && m&(m-1) != 0 {
					vals[v] = 1
					return true
				}
			}
			return false
		})
		notVerified(t, dir)
	})
	t.Run("labels.plf takes another label at a persistent pixel", func(t *testing.T) {
		dir := fresh(t)
		pers := readPlane(t, filepath.Join(good, PersistentTilesFile))
		edit(t, dir, LabelTilesFile, func(vals []int32) bool {
			for v, p := range pers {
				if p > 0 {
					vals[v] = p % 5 // label+1 mod 5: another label
					return true
				}
			}
			return false
		})
		notVerified(t, dir)
	})
	t.Run("domains.txt lists a label the proofs eliminate", func(t *testing.T) {
		dir := fresh(t)
		path := filepath.Join(dir, DomainsFile)
		data, _ := os.ReadFile(path)
		lines := strings.Split(string(data), "\n")
		for i, l := range lines[1:] {
			if f := strings.Fields(l); len(f) == 2 { // one label left
				other := (f[1][0]-'0'+1)%5 + '0'
				lines[i+1] = "2 " + strings.Join(sortedPair(f[1], string(other)), " ")
				break
			}
		}
		os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
		notVerified(t, dir)
	})
	t.Run("the windows' records dropped", func(t *testing.T) {
		dir := fresh(t)
		rewriteProofs(t, filepath.Join(dir, WindowCertificatesFile), func(recs []partition.ProofRecord, proofs [][]byte) ([]partition.ProofRecord, [][]byte) {
			return nil, nil
		})
		notVerified(t, dir)
	})
	t.Run("two windows' proofs swapped", func(t *testing.T) {
		dir := fresh(t)
		rewriteProofs(t, filepath.Join(dir, WindowCertificatesFile), func(recs []partition.ProofRecord, proofs [][]byte) ([]partition.ProofRecord, [][]byte) {
			proofs[0], proofs[1] = proofs[1], proofs[0]
			return recs, proofs
		})
		notVerified(t, dir)
	})
}

// readPlane reads a whole label file.
func readPlane(t *testing.T, path string) []int32 {
	t.Helper()
	f, err := labelfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := f.Header()
	vals := make([]int32, h.Width*h.Height)
	if err := f.ReadRect(0, 0, h.Width, h.Height, vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// rewriteProofs rewrites the elimination records of the certificates file at
// path by edit, given the records and their proofs' bytes.
func rewriteProofs(t *testing.T, path string, edit func([]partition.ProofRecord, [][]byte) ([]partition.ProofRecord, [][]byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := partition.NewProofReader(path, bytes.NewReader(data), int64(len(data)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var recs []partition.ProofRecord
	var proofs [][]byte
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		recs = append(recs, *rec)
		data, err := rec.ProofData()
		if err != nil {
			t.Fatal(err)
		}
		proofs = append(proofs, data)
	}
	if len(recs) < 2 {
		t.Skip("fewer than two records: nothing to forge")
	}
	recs, proofs = edit(recs, proofs)
	var buf bytes.Buffer
	w := partition.NewProofWriter(&buf)
	for i, r := range recs {
		if err := w.Elimination(r.Round, r.Nodes, proofs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, buf.Bytes(), 0o644)
}

// sortedPair is the two one-digit labels a and b, ascending.
func sortedPair(a, b string) []string {
	if a > b {
		a, b = b, a
	}
	return []string{a, b}
}

// loopRuntime is a Runtime that runs a raster job's windows with partition's
// own loops, as a coordinator and its workers must leave them — raster pbp
// (SolveRaster) and raster iri (EliminateRaster) — and records the specs it
// was handed.
type loopRuntime struct{ specs []protocol.JobSpec }

func (r *loopRuntime) Windows(ctx context.Context, d *Distributed) (*Outcome, error) {
	r.specs = append(r.specs, d.Spec)
	opt := d.Spec.Persistency()
	switch {
	case d.Graph != nil:
		return nil, errors.New("a graph job: the model in memory")
	case d.Windows != nil:
		res, err := partition.EliminateRaster(ctx, d.Raster, d.Alive, d.Prior, d.Labeling, d.Persistent, partition.RasterEliminateOptions{
			Plan: d.Windows, MaxLevel: d.MaxLevel, Solver: opt.Solver, Workers: 2, MaxRounds: d.Spec.MaxRounds, Proofs: d.Proofs})
		if err != nil {
			return nil, err
		}
		return &Outcome{RasterElimination: res, Runtime: "test"}, nil
	}
	res, err := partition.SolveRaster(ctx, d.Raster, d.Persistent, d.Labeling, d.Scratch,
		partition.RasterOptions{Core: d.Spec.Core, Halo: d.Spec.Halo, Persistency: opt, Workers: 2, MaxRounds: d.Spec.MaxRounds, Proofs: d.Proofs})
	if err != nil {
		return nil, err
	}
	return &Outcome{RasterResult: *res, Runtime: "test"}, nil
}

// TestRunOfAGridPastMemoryEliminatesThroughItsRuntime is issue 34's first
// reproduction: `partopt run giga.grid -o out`, the default method, on a
// .grid past memory exited 2 ("method pbp+iri reads the model into memory").
// Its windows now go to the runtime as raster jobs — pbp's, then a raster iri
// job (layout raster, the labels alive in label files) — and it writes what
// solve writes; a cluster takes every method of such a file (Wire: a raster
// spec, the model never read into memory), as it does a .grid without
// evidence below the bound.
func TestRunOfAGridPastMemoryEliminatesThroughItsRuntime(t *testing.T) {
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	path := writeGrid(t, random.PottsDenoising(random.New(6), 12, 10, 5, 2, 4, 1.5), 12, 10)
	for i, limit := range []int64{12*10 - 1, MaxInMemoryPixels, 12*10 - 1, MaxInMemoryPixels} {
		maxInMemoryPixels = limit
		method := []Method{PBPIRI, IRI}[i/2]
		solved := Spec{Model: path, Method: method, Window: 4, Halo: 1, Output: t.TempDir()}
		if _, err := Run(context.Background(), solved, Options{}); err != nil {
			t.Fatal(err)
		}
		ran := solved
		ran.Output = t.TempDir()
		rt := &loopRuntime{}
		res, err := Run(context.Background(), ran, Options{Runtime: rt})
		if err != nil {
			t.Fatalf("%s, bound %d: run: %v", method, limit, err)
		}
		want, got := outputFiles(t, solved.Output), outputFiles(t, ran.Output)
		for name, data := range want {
			if name != ReportFile && !bytes.Equal(got[name], data) {
				t.Errorf("%s, bound %d: %s differs between run and solve", method, limit, name)
			}
		}
		if specs := rt.specs; method == PBPIRI && (len(specs) != 2 || specs[0].Method != "" || specs[0].Layout != "") {
			t.Errorf("%s, bound %d: the runtime got %+v: want a raster pbp job, then a raster iri job", method, limit, rt.specs)
		} else if last := specs[len(specs)-1]; !last.RasterIRI() || last.Width != 12 || last.Height != 10 || last.Core != 4 || last.Halo != 1 {
			t.Errorf("%s, bound %d: the runtime's last job %+v: want a raster iri job", method, limit, last)
		}
		if rep := res.Report.(*WindowsReport); rep.Runtime != "test" || rep.PersistentVariables == 0 {
			t.Errorf("bound %d: report runtime %q, %d persistent", limit, rep.Runtime, rep.PersistentVariables)
		}
		for _, m := range []Method{PBPIRI, IRI, "", PBP} {
			s := solved
			s.Method = m
			w, err := Wire(s)
			if err != nil || w.Layout != "" || w.Width != 12 || w.Height != 10 || (m == IRI) != w.RasterIRI() {
				t.Errorf("bound %d: submitting %q: %+v, %v: want a raster spec", limit, m, w, err)
			}
		}
	}
	// With evidence, below the bound the elimination plans regions over the
	// conditioned model (a graph job, as solve's in memory); past it, raster
	// tiles over every pixel, the observed ones with their label alone (a
	// raster job, as solve's out of core).
	if err := os.WriteFile(path+".evid", []byte("2 5 2 30 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{12*10 - 1, MaxInMemoryPixels} {
		maxInMemoryPixels = limit
		past := limit < 12*10
		s := Spec{Model: path, Method: IRI, Window: 4, Halo: 1, Output: t.TempDir()}
		if w, err := Wire(s); err != nil || w.RasterIRI() != past || (w.Layout == protocol.LayoutGraph) == past {
			t.Errorf("bound %d, evidence: wire spec %+v, %v: want a raster iri job past the bound, a graph one below", limit, w, err)
		}
		if !past {
			continue
		}
		if _, err := Run(context.Background(), s, Options{}); err != nil {
			t.Fatal(err)
		}
		ran := s
		ran.Output = t.TempDir()
		rt := &loopRuntime{}
		if _, err := Run(context.Background(), ran, Options{Runtime: rt}); err != nil {
			t.Fatalf("evidence: run: %v", err)
		}
		want, got := outputFiles(t, s.Output), outputFiles(t, ran.Output)
		for name, data := range want {
			if name != ReportFile && !bytes.Equal(got[name], data) {
				t.Errorf("evidence: %s differs between run and solve", name)
			}
		}
		if len(rt.specs) != 1 || !rt.specs[0].RasterIRI() {
			t.Errorf("evidence: the runtime got %+v: want a raster iri job", rt.specs)
		}
	}
}

// TestVerifyPastMemoryReportsTheReplaysProgress: verify of a .grid past memory
// reports its progress through the certificates as the replay reads them. The
// look at the records' kinds before the replay read through the progress
// reader and took it to the end at once, so a 10⁹-pixel verify logged nothing
// for its whole replay: the end must be reported while the replay runs (its
// scratch label files exist).
func TestVerifyPastMemoryReportsTheReplaysProgress(t *testing.T) {
	defer func(old int64) { maxInMemoryPixels = old }(maxInMemoryPixels)
	path := writeGrid(t, random.PottsDenoising(random.New(6), 12, 10, 5, 2, 4, 1.5), 12, 10)
	for _, m := range []Method{PBP, PBPIRI} {
		maxInMemoryPixels = MaxInMemoryPixels
		s := Spec{Model: path, Method: m, Window: 4, Halo: 1, Output: t.TempDir()}
		if _, err := Run(context.Background(), s, Options{}); err != nil {
			t.Fatal(err)
		}
		maxInMemoryPixels = 12*10 - 1
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		var before, during int // reports before the replay's scratch files, and while they exist
		end := false
		_, err := VerifyWith(path, s.Output, VerifyOptions{Progress: func(read, total int64) {
			if scratch, _ := filepath.Glob(filepath.Join(tmp, "partopt-verify-*")); len(scratch) == 0 {
				before++
				return
			}
			during++
			end = end || read == total
		}})
		// Before the replay: at most its reader's look at the file's header.
		if err != nil || before > 1 || during == 0 || !end {
			t.Errorf("%s: %d progress reports before the replay, %d during it, the end reported by it: %v (%v)", m, before, during, end, err)
		}
	}
}

// TestVerifyOfAnOptimalGridPastTheTextOutputs: a windowed pbp+iri run of a
// .grid past UAIOutputLimit pixels writes labels.plf but neither labels.sol
// nor optimal.sol, and verify — in memory, below MaxInMemoryPixels — re-checks
// its optimal labeling from labels.plf. It demanded optimal.sol: `partopt run
// s10m.grid -o out` (10⁷ pixels of stereo, optimal) then `partopt verify
// s10m.grid out` said "NOT verified: … claims an optimal labeling, but stat
// out/optimal.sol: no such file or directory".
func TestVerifyOfAnOptimalGridPastTheTextOutputs(t *testing.T) {
	defer func(limit, memory int64) { uaiOutputLimit, maxInMemoryPixels = limit, memory }(uaiOutputLimit, maxInMemoryPixels)
	uaiOutputLimit = 12*10 - 1
	path := writeGrid(t, random.PottsDenoising(random.New(6), 12, 10, 5, 2, 4, 1.5), 12, 10)
	s := Spec{Model: path, Method: PBPIRI, Window: 4, Halo: 1, Output: t.TempDir()}
	maxInMemoryPixels = 12*10 - 1 // the run out of core, as `run` runs every .grid
	res, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	maxInMemoryPixels = MaxInMemoryPixels // verify in memory
	if !strings.Contains(res.Summary, " optimal (") {
		t.Fatalf("summary %q: want a proven optimum", res.Summary)
	}
	for _, name := range []string{LabelsFile, OptimalFile} {
		if _, err := os.Stat(filepath.Join(s.Output, name)); err == nil {
			t.Fatalf("%s written past UAIOutputLimit", name)
		}
	}
	v, err := VerifyWith(path, s.Output, VerifyOptions{})
	if err != nil || !v.Optimal {
		t.Fatalf("verify: %+v, %v: want the optimal labeling of labels.plf verified", v, err)
	}
}
