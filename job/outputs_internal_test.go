package job

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// dirFiles is every entry of dir (hidden ones included) with its content.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

// TestFailedRunLeavesTheDirectoryAsItWas: a run that fails while writing its
// outputs (a full disk, injected at each output in turn) leaves the directory
// exactly as the earlier run left it — no new file beside the old report, no
// temporary file — whether the outputs are label files made by windows, a
// certificate or the report itself.
func TestFailedRunLeavesTheDirectoryAsItWas(t *testing.T) {
	const model = "../testdata/denoise32.uai.gz"
	dir := t.TempDir()
	if _, err := Run(context.Background(), Spec{Model: model, Method: IRI, Output: dir}, Options{}); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	defer func() { writeFault = nil }()
	failed := 0
	for _, spec := range []Spec{{Model: model, Method: PBP, Window: 16, Halo: 4}, {Model: model, Method: PBP}} {
		for _, name := range []string{PersistencyPNG, LabelsFile, CertificateFile, WindowCertificatesFile, ReportFile} {
			writeFault = func(n string) error {
				if n == name {
					return syscall.ENOSPC
				}
				return nil
			}
			spec.Output = dir
			_, err := Run(context.Background(), spec, Options{})
			if err == nil { // a run without that output: its outputs are the earlier ones now
				before = dirFiles(t, dir)
				continue
			}
			failed++
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), name) {
				t.Errorf("%+v failing at %s: %v", spec, name, err)
			}
			if after := dirFiles(t, dir); !maps.Equal(after, before) {
				t.Fatalf("%+v failing at %s left %v, want the earlier run's %v", spec, name, keys(after), keys(before))
			}
		}
	}
	if failed < 7 {
		t.Errorf("only %d runs failed: the faults were not injected", failed)
	}
}

// TestConcurrentRunsIntoOneDirectory: two runs writing into one directory at
// once both succeed, and the directory ends with one run's complete set of
// outputs, its report among them, and nothing else.
func TestConcurrentRunsIntoOneDirectory(t *testing.T) {
	const model = "../testdata/denoise32.uai.gz"
	for range 3 {
		dir := t.TempDir()
		specs := []Spec{{Model: model, Method: IRI, Output: dir}, {Model: model, Method: PBP, Window: 16, Halo: 4, Output: dir}}
		var wg sync.WaitGroup
		for _, s := range specs {
			wg.Go(func() {
				if _, err := Run(context.Background(), s, Options{}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		got := dirFiles(t, dir)
		var rep struct {
			Method  string   `json:"method"`
			Outputs []string `json:"outputs"`
		}
		if err := json.Unmarshal([]byte(got[ReportFile]), &rep); err != nil || len(rep.Outputs) == 0 {
			t.Fatalf("report.json %q: %v", got[ReportFile], err)
		}
		if want := append(rep.Outputs, ReportFile); !sameSet(keys(got), want) {
			t.Fatalf("directory holds %v, want the %s run's %v", keys(got), rep.Method, want)
		}
	}
}

// TestEveryReportListsItsOutputs: report.json names every file its run wrote
// beside it, whole or by windows, whatever the method — a whole iri run's did
// not, which TestConcurrentRunsIntoOneDirectory found whenever that run's
// outputs were the ones left.
func TestEveryReportListsItsOutputs(t *testing.T) {
	const model = "../testdata/denoise32.uai.gz"
	for _, s := range []Spec{
		{Method: TRWS}, {Method: PBP}, {Method: IRI}, {Method: PBPIRI},
		{Method: PBP, Window: 16, Halo: 4}, {Method: IRI, Window: 16, Halo: 4}, {Method: PBPIRI, Window: 16, Halo: 4},
	} {
		s.Model, s.Output = model, t.TempDir()
		if _, err := Run(context.Background(), s, Options{}); err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		got := dirFiles(t, s.Output)
		var rep struct {
			Outputs []string `json:"outputs"`
		}
		if err := json.Unmarshal([]byte(got[ReportFile]), &rep); err != nil {
			t.Fatal(err)
		}
		if want := append(rep.Outputs, ReportFile); !sameSet(keys(got), want) {
			t.Errorf("%s (window %d): the directory holds %v, the report lists %v", s.Method, s.Window, keys(got), rep.Outputs)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

// TestNothingIsCommittedBeforeTheLastCheckPasses: a whole iri run verifies its
// proof while its outputs are staged (writeOutputsWhen). While the check runs
// the directory holds the earlier run's outputs alone; a failed check leaves it
// so, without a stage; a passed one commits the outputs and its report; and
// where staging fails too, the check's failure is the error.
func TestNothingIsCommittedBeforeTheLastCheckPasses(t *testing.T) {
	dir := t.TempDir()
	if err := writeOutputs(dir, []output{{name: LabelsFile, write: func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }}}, "old report"); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	files := []output{
		{name: LabelsFile, write: func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }},
		{name: DomainsFile, write: func(w io.Writer) error { _, err := io.WriteString(w, "domains"); return err }},
	}
	checkFailed := errors.New("the result failed its own verification")
	err := writeOutputsWhen(dir, files, func() (any, error) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries { // the old outputs, and the stage beside them
			if _, old := before[e.Name()]; !old && !(e.IsDir() && strings.HasPrefix(e.Name(), stagePrefix)) {
				t.Errorf("while checking the directory holds %s", e.Name())
			}
		}
		return nil, checkFailed
	})
	if !errors.Is(err, checkFailed) {
		t.Fatalf("a failed check gave %v", err)
	}
	if after := dirFiles(t, dir); !maps.Equal(after, before) {
		t.Fatalf("a failed check left %v, want %v", keys(after), keys(before))
	}

	defer func() { writeFault = nil }()
	writeFault = func(n string) error {
		if n == DomainsFile {
			return syscall.ENOSPC
		}
		return nil
	}
	if err := writeOutputsWhen(dir, files, func() (any, error) { return nil, checkFailed }); !errors.Is(err, checkFailed) {
		t.Errorf("a failed check and a full disk gave %v, want the check's failure", err)
	}
	writeFault = nil

	if err := writeOutputsWhen(dir, files, func() (any, error) { return "new report", nil }); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{LabelsFile: "new", DomainsFile: "domains", ReportFile: "\"new report\"\n"}
	if after := dirFiles(t, dir); !maps.Equal(after, want) {
		t.Errorf("a passed check left %v, want %v", after, want)
	}
}

// TestOutputsWrittenSideBySideFailInOrder: a run whose model is in memory
// writes its outputs side by side (stage.concurrent); where several fail, the
// error names the first in the run's order, as one at a time did, and nothing
// is committed.
func TestOutputsWrittenSideBySideFailInOrder(t *testing.T) {
	dir := t.TempDir()
	var files []output
	for _, name := range []string{LabelsFile, PersistentFile, DomainsFile, OptimalFile, CertificateFile} {
		files = append(files, output{name: name, write: func(w io.Writer) error { _, err := io.WriteString(w, name); return err }})
	}
	defer func() { writeFault = nil }()
	writeFault = func(n string) error {
		if n == DomainsFile || n == CertificateFile {
			return syscall.ENOSPC
		}
		return nil
	}
	for range 20 {
		err := writeOutputs(dir, files, "report")
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), DomainsFile) {
			t.Fatalf("got %v, want the failure of %s", err, DomainsFile)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("a failed run left %d entries", len(entries))
		}
	}
	writeFault = nil
	if err := writeOutputs(dir, files, "report"); err != nil {
		t.Fatal(err)
	}
	got := dirFiles(t, dir)
	for _, o := range files {
		if got[o.name] != o.name {
			t.Errorf("%s holds %q", o.name, got[o.name])
		}
	}
}

// TestAWholeIRIRunWhoseProofFailsItsCheckWritesNothing: the re-check of a whole
// iri run's proof runs beside its completion and staged outputs; when it fails
// (injected), the run says so and the directory keeps the earlier run's outputs
// alone, no stage beside them.
func TestAWholeIRIRunWhoseProofFailsItsCheckWritesNothing(t *testing.T) {
	const file = "../testdata/denoise32.uai.gz"
	dir := t.TempDir()
	spec := Spec{Model: file, Method: IRI, Output: dir}
	if _, err := Run(context.Background(), spec, Options{}); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	defer func() { verifyProof = persistency.Verify }()
	forged := errors.New("a forged certificate")
	verifyProof = func(*model.Model, *persistency.Result) (persistency.CheckResult, error) {
		return persistency.CheckResult{}, forged
	}
	for _, method := range []Method{IRI, PBPIRI} {
		spec.Method = method
		_, err := Run(context.Background(), spec, Options{})
		var internal InternalError
		if !errors.Is(err, forged) || !errors.As(err, &internal) || !strings.Contains(err.Error(), "failed its own verification") {
			t.Fatalf("%s: %v, want the failed verification", method, err)
		}
		if after := dirFiles(t, dir); !maps.Equal(after, before) {
			t.Fatalf("%s: a failed verification left %v, want %v", method, keys(after), keys(before))
		}
	}
}
