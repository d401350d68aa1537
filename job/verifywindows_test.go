package job_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// gridModel writes denoise32 as a .grid file with evidence on two pixels.
func gridModel(t *testing.T) string {
	t.Helper()
	m, err := modelfile.Read(denoise)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "denoise.grid")
	if err := grid.WriteModelFile(path, m, 32, 32, 16); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".evid", []byte("2 5 1 300 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// windowedRuns are windowed runs of every kind verify replays: raster pbp in
// memory and out of core (with evidence), through a Runtime, regions with
// evidence, label elimination by windows, and pbp+iri.
func windowedRuns(t *testing.T) []struct {
	name string
	spec job.Spec
	rt   job.Runtime
} {
	return []struct {
		name string
		spec job.Spec
		rt   job.Runtime
	}{
		{"raster pbp", job.Spec{Model: denoise, Method: job.PBP, Window: 12, Halo: 3, Rounds: 3}, nil},
		{"raster pbp by a runtime", job.Spec{Model: denoise, Method: job.PBP, Window: 12, Halo: 3}, &inProcess{}},
		{"grid file pbp, evidence", job.Spec{Model: gridModel(t), Method: job.PBP, Window: 10, Halo: 2, Rounds: 2}, nil},
		{"regions pbp, evidence", job.Spec{Model: network, Method: job.PBP, Window: 6, Rounds: 2}, nil},
		{"raster iri", job.Spec{Model: denoise, Method: job.IRI, Window: 8, Halo: 2, Rounds: 2}, nil},
		{"regions pbp+iri", job.Spec{Model: "../testdata/pedigree1.uai", Method: job.PBPIRI, Window: 30, Rounds: 2}, nil},
		{"raster pbp+iri", job.Spec{Model: denoise, Method: job.PBPIRI, Window: 8, Halo: 2}, nil},
		{"grid file pbp+iri by a runtime (raster iri job)", job.Spec{Model: gridWithoutEvidence(t), Method: job.PBPIRI, Window: 8, Halo: 2}, &inProcess{}},
	}
}

// gridWithoutEvidence is gridModel without its evidence file.
func gridWithoutEvidence(t *testing.T) string {
	path := gridModel(t)
	if err := os.Remove(path + ".evid"); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWindowedRunsVerify: verify re-checks every kind of windowed run from the
// model and its window certificates alone, and finds the persistent variables
// the run reported.
func TestWindowedRunsVerify(t *testing.T) {
	for _, c := range windowedRuns(t) {
		c.spec.Output = t.TempDir()
		res, err := job.Run(context.Background(), c.spec, job.Options{Runtime: c.rt})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rep := res.Report.(*job.WindowsReport)
		v, err := job.Verify(c.spec.Model, c.spec.Output, false, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if int64(v.Persistent) != rep.PersistentVariables || v.Windows == 0 || v.Rounds == 0 {
			t.Errorf("%s: verified %+v; the run reports %d persistent", c.name, v, rep.PersistentVariables)
		}
	}
}

// TestVerifyRejectsForgedWindowedResults: a windowed result whose outputs
// claim more than, or other than, its window certificates prove is NOT
// verified, and damaged certificates are bad input — whichever file a forger
// edits.
func TestVerifyRejectsForgedWindowedResults(t *testing.T) {
	ctx := context.Background()
	model := denoise
	good := t.TempDir()
	if _, err := job.Run(ctx, job.Spec{Model: model, Method: job.PBP, Window: 12, Halo: 3, Rounds: 2, Output: good}, job.Options{}); err != nil {
		t.Fatal(err)
	}
	fresh := func(t *testing.T) string {
		dir := t.TempDir()
		for name, data := range outputs(t, good) {
			os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		return dir
	}
	// A pixel no window proved, and one proven.
	pers, err := labelfile.Open(filepath.Join(good, job.PersistentTilesFile))
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]int32, 32*32)
	pers.ReadRect(0, 0, 32, 32, vals)
	pers.Close()
	free, proven := -1, -1
	for v, x := range vals {
		if x == 0 && free < 0 {
			free = v
		}
		if x > 0 && proven < 0 {
			proven = v
		}
	}
	if free < 0 || proven < 0 {
		t.Fatalf("the run proved every pixel or none (%d, %d): no forgery to try", free, proven)
	}
	editPLF := func(dir, name string, v int, x int32) {
		f, err := labelfile.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h := f.Header()
		f.Close()
		vals := make([]int32, 32*32)
		g, _ := labelfile.Open(filepath.Join(dir, name))
		g.ReadRect(0, 0, 32, 32, vals)
		g.Close()
		vals[v] = x
		w, err := labelfile.Create(filepath.Join(dir, name), h)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteRect(0, 0, 32, 32, vals)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	notVerified := func(t *testing.T, dir string) {
		t.Helper()
		_, err := job.Verify(model, dir, false, nil)
		if !errors.As(err, new(job.InternalError)) || !strings.Contains(err.Error(), "NOT verified") {
			t.Errorf("%v, want NOT verified", err)
		}
	}
	badInput := func(t *testing.T, dir string) {
		t.Helper()
		_, err := job.Verify(model, dir, false, nil)
		if err == nil || errors.As(err, new(job.InternalError)) {
			t.Errorf("%v, want bad input", err)
		}
	}
	t.Run("persistent.plf claims an unproven pixel", func(t *testing.T) {
		dir := fresh(t)
		editPLF(dir, job.PersistentTilesFile, free, 1)
		notVerified(t, dir)
	})
	t.Run("labels.plf contradicts a proven pixel", func(t *testing.T) {
		dir := fresh(t)
		editPLF(dir, job.LabelTilesFile, proven, vals[proven]%4) // vals holds label+1
		notVerified(t, dir)
	})
	t.Run("persistent.evid claims an unproven pixel", func(t *testing.T) {
		dir := fresh(t)
		os.WriteFile(filepath.Join(dir, job.PersistentFile), []byte(fmt.Sprintf("1 %d 0\n", free)), 0o644)
		notVerified(t, dir)
	})
	t.Run("forged certificates claim every pixel", func(t *testing.T) {
		dir := fresh(t)
		forgeCertificates(t, filepath.Join(dir, job.WindowCertificatesFile))
		notVerified(t, dir)
	})
	t.Run("a record dropped", func(t *testing.T) {
		dir := fresh(t)
		dropFirstRecord(t, filepath.Join(dir, job.WindowCertificatesFile))
		notVerified(t, dir)
	})
	t.Run("certificates truncated", func(t *testing.T) {
		dir := fresh(t)
		path := filepath.Join(dir, job.WindowCertificatesFile)
		data, _ := os.ReadFile(path)
		os.WriteFile(path, data[:len(data)/2], 0o644)
		badInput(t, dir)
	})
	t.Run("no persistent output", func(t *testing.T) {
		dir := fresh(t)
		os.Remove(filepath.Join(dir, job.PersistentTilesFile))
		os.Remove(filepath.Join(dir, job.PersistentFile))
		badInput(t, dir)
	})
	t.Run("another model", func(t *testing.T) {
		dir := fresh(t)
		if _, err := job.Verify(network, dir, false, nil); err == nil {
			t.Error("verified against another model")
		}
	})
}

// forgeCertificates rewrites the certificates at path as a rogue worker's:
// each window's proof replaced by one that claims label 0 on all its variables.
func forgeCertificates(t *testing.T, path string) {
	rewriteCertificates(t, path, func(w *partition.ProofWriter, recs []*partition.ProofRecord) {
		for _, r := range recs {
			all := make([]int, (r.Rect.W+4)*(r.Rect.H+4))
			w.Raster(r.Round, r.Rect, &persistency.Result{Persistent: all})
		}
	})
}

// dropFirstRecord rewrites the certificates at path without their first record.
func dropFirstRecord(t *testing.T, path string) {
	m, err := modelfile.Read(denoise)
	if err != nil {
		t.Fatal(err)
	}
	rewriteCertificates(t, path, func(w *partition.ProofWriter, recs []*partition.ProofRecord) {
		for _, r := range recs[1:] {
			p, err := r.Proof(m)
			if err != nil {
				t.Fatal(err)
			}
			w.Raster(r.Round, r.Rect, p)
		}
	})
}

// rewriteCertificates rewrites the certificates at path with what write
// writes, given the records read from them.
func rewriteCertificates(t *testing.T, path string, write func(*partition.ProofWriter, []*partition.ProofRecord)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, path, data)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := partition.NewProofWriter(f)
	write(w, recs)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readRecords reads the records of the certificates data (of the file path).
func readRecords(t *testing.T, path string, data []byte) []*partition.ProofRecord {
	t.Helper()
	rd, err := partition.NewProofReader(path, bytes.NewReader(data), int64(len(data)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []*partition.ProofRecord
	for {
		rec, err := rd.Next()
		if err != nil {
			return out
		}
		out = append(out, rec)
	}
}
