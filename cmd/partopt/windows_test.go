package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
	"github.com/partopt/partopt/partition"
	"github.com/spf13/cobra"
)

// windowedOutputs is what a windowed solve left behind.
type windowedOutputs struct {
	dir            string
	stdout         string
	report         windowedReport
	labels, listed []int // labels.sol; persistent.evid as a label per variable or −1
}

// solveWindowed runs solve with args on modelPath (n variables, a raster w×h when w >
// 0), fails unless it succeeds, and checks that the outputs agree with each other.
func solveWindowed(t *testing.T, modelPath string, n, w, h int, args ...string) windowedOutputs {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := partopt(append(append([]string{"solve", "-o", dir}, args...), modelPath)...)
	if code != 0 {
		t.Fatalf("solve %v: exit %d: %s", args, code, stderr)
	}
	o := windowedOutputs{dir: dir, stdout: stdout}
	data, err := os.ReadFile(filepath.Join(dir, reportFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &o.report); err != nil {
		t.Fatal(err)
	}
	r := o.report
	if r.Variables != int64(n) || r.FreeVariables+int64(r.Observed) != int64(n) || !r.Verified || r.Windows < 1 || r.Rounds < 1 {
		t.Errorf("report: %s", data)
	}
	if o.labels, err = uai.ReadSolutionFile(filepath.Join(dir, labelsFile), n); err != nil {
		t.Fatal(err)
	}
	ev, err := uai.ReadEvidenceFile(filepath.Join(dir, persistentFile))
	if err != nil {
		t.Fatal(err)
	}
	o.listed = slices.Repeat([]int{-1}, n)
	for i, v := range ev.Vars {
		o.listed[v] = ev.Labels[i]
		if o.labels[v] != ev.Labels[i] {
			t.Errorf("variable %d: labels.sol %d, persistent.evid %d", v, o.labels[v], ev.Labels[i])
		}
	}
	if int64(ev.Len()) != r.PersistentVariables+int64(r.Observed) {
		t.Errorf("persistent.evid lists %d, report %d persistent + %d observed", ev.Len(), r.PersistentVariables, r.Observed)
	}
	if !testutil.CloseTo(r.Fraction, float64(r.PersistentVariables)/float64(max(r.FreeVariables, 1)), 1e-12) {
		t.Errorf("fraction %v for %d of %d", r.Fraction, r.PersistentVariables, r.FreeVariables)
	}
	if r.Energy == nil {
		t.Fatal("no energy in the report")
	}
	checkEnergyCommand(t, modelPath, dir, slices.Contains(args, "--no-evid"), float64(*r.Energy))
	if w > 0 {
		checkLabelFiles(t, o, w, h)
	}
	return o
}

// checkLabelFiles: labels.plf and persistent.plf hold what labels.sol and
// persistent.evid hold, and persistency.png is the picture of their size.
func checkLabelFiles(t *testing.T, o windowedOutputs, w, h int) {
	t.Helper()
	for _, c := range []struct {
		name string
		want func(v int) int32
	}{
		{labelTilesFile, func(v int) int32 { return int32(o.labels[v]) }},
		{persistentTilesFile, func(v int) int32 { return int32(o.listed[v] + 1) }},
	} {
		f, err := labelfile.Open(filepath.Join(o.dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int32, w*h)
		if err := f.ReadRect(0, 0, w, h, got); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for v, x := range got {
			if x != c.want(v) {
				t.Fatalf("%s: pixel %d holds %d, want %d", c.name, v, x, c.want(v))
			}
		}
	}
	pf, err := os.Open(filepath.Join(o.dir, persistencyPNG))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("persistency.png is %v, want %d×%d", b, w, h)
	}
}

// genGrid writes the colour segmentation of the committed blocks image (24×16) as
// .grid and .uai and returns both paths.
func genGrid(t *testing.T, lambda string) (gridPath, uaiPath string) {
	t.Helper()
	dir := t.TempDir()
	gridPath, uaiPath = filepath.Join(dir, "b.grid"), filepath.Join(dir, "b.uai")
	for _, out := range []string{gridPath, uaiPath} {
		if code, _, stderr := partopt("gen", "seg", filepath.Join(genTestdata, "blocks.png"), "-o", out, "--labels", "4", "--lambda", lambda); code != 0 {
			t.Fatal(stderr)
		}
	}
	return gridPath, uaiPath
}

// TestSolveWindowsGridFileSoundAndDeterministic: a .grid model is solved by windows
// out of core; the outputs agree with each other, any worker count gives byte-identical
// label files, the UAI form of the model (a recognised raster) gives the same labels,
// and fixing the persistent labels keeps toulbar2's optimum.
func TestSolveWindowsGridFileSoundAndDeterministic(t *testing.T) {
	gp, up := genGrid(t, "3")
	const w, h = 24, 16
	args := []string{"--window", "8", "--halo", "2"}
	a := solveWindowed(t, gp, w*h, w, h, append(args, "--workers", "1")...)
	b := solveWindowed(t, gp, w*h, w, h, append(args, "--workers", "3")...)
	for _, name := range []string{labelTilesFile, persistentTilesFile, labelsFile, persistentFile, persistencyPNG} {
		x, _ := os.ReadFile(filepath.Join(a.dir, name))
		y, _ := os.ReadFile(filepath.Join(b.dir, name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between 1 and 3 workers", name)
		}
	}
	if r := a.report; r.Plan != "raster" || r.Width != w || r.Height != h || r.Window != 8 || r.Halo != 2 || r.Windows < 6 {
		t.Errorf("report %+v", r)
	}
	u := solveWindowed(t, up, w*h, w, h, args...)
	if !slices.Equal(u.listed, a.listed) {
		t.Errorf("the UAI model proves %d, the grid file %d", u.report.PersistentVariables, a.report.PersistentVariables)
	}
	if k := a.report.PersistentVariables; k == 0 || k == w*h {
		t.Logf("all or nothing proven (%d): the soundness check below checks little", k)
	}
	checkSoundWithToulbar2(t, up, a.listed)
	t.Logf("%d of %d persistent in %d rounds", a.report.PersistentVariables, w*h, a.report.Rounds)
}

// checkSoundWithToulbar2: fixing the listed labels (−1 free) keeps the optimum.
func checkSoundWithToulbar2(t *testing.T, modelPath string, listed []int) {
	t.Helper()
	path, err := oracle.FindToulbar2()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("toulbar2 is required in CI: %v", err)
		}
		t.Logf("toulbar2 not installed (%v): soundness not checked", err)
		return
	}
	m, err := uai.ReadFile(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	tb := oracle.Toulbar2{Path: path, Timeout: time.Minute}
	free, err := tb.Solve(context.Background(), m, uai.Evidence{})
	if err != nil {
		t.Fatal(err)
	}
	var ev uai.Evidence
	for v, l := range listed {
		if l >= 0 {
			ev.Vars, ev.Labels = append(ev.Vars, v), append(ev.Labels, l)
		}
	}
	fixed, err := tb.Solve(context.Background(), m, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !free.Optimal || !fixed.Optimal || math.Abs(free.Energy-fixed.Energy) > free.Tolerance+fixed.Tolerance+1e-9*math.Abs(free.Energy) {
		t.Errorf("toulbar2: optimum %v (proven %v), with the persistent labels fixed %v (proven %v)", free.Energy, free.Optimal, fixed.Energy, fixed.Optimal)
	}
}

// TestSolveWindowsRegionsOfAnyModel: a model that is not a raster is solved by BFS
// regions; the outputs agree and the persistent labels keep the optimum.
func TestSolveWindowsRegionsOfAnyModel(t *testing.T) {
	path := writeFrustrated(t, t.TempDir())
	o := solveWindowed(t, path, 6, 0, 0, "--window", "2", "--halo", "1")
	if o.report.Plan != "regions" || o.report.Windows < 3 {
		t.Errorf("plan %q, %d windows", o.report.Plan, o.report.Windows)
	}
	checkSoundWithToulbar2(t, path, o.listed)
}

// TestSolveWindowsGridEvidence: MODEL.evid of a grid file fixes its pixels, which
// persistent.evid lists and the counts exclude; --no-evid ignores it.
func TestSolveWindowsGridEvidence(t *testing.T) {
	gp, _ := genGrid(t, "3")
	if err := os.WriteFile(gp+".evid", []byte("2 5 3 100 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := solveWindowed(t, gp, 24*16, 24, 16, "--window", "8", "--halo", "2")
	if o.report.Observed != 2 || o.listed[5] != 3 || o.listed[100] != 1 || !strings.Contains(o.report.Evidence, ".evid") {
		t.Errorf("observed %d, labels %d %d", o.report.Observed, o.listed[5], o.listed[100])
	}
	if n := solveWindowed(t, gp, 24*16, 24, 16, "--window", "8", "--no-evid"); n.report.Observed != 0 {
		t.Errorf("--no-evid: observed %d", n.report.Observed)
	}
	if err := os.WriteFile(gp+".evid", []byte("1 5 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := partopt("solve", "-o", t.TempDir(), gp, "--method", "pbp"); code != exitBadInput || !strings.Contains(stderr, "observation 1") {
		t.Errorf("a label out of range: exit %d, %q", code, stderr)
	}
	if code, _, stderr := partopt("solve", "-o", t.TempDir(), gp); code != exitBadInput || !strings.Contains(stderr, ".evid") || !strings.Contains(stderr, "label 9") {
		t.Errorf("a label out of range: exit %d, %q", code, stderr)
	}
}

// TestSolveWindowsBadInputAndInterrupt: a corrupt tile is bad input naming the tile;
// bad flags are refused; an interrupted run writes nothing and leaves no temporary file.
func TestSolveWindowsBadInputAndInterrupt(t *testing.T) {
	gp, up := genGrid(t, "1")
	data, err := os.ReadFile(gp)
	if err != nil {
		t.Fatal(err)
	}
	data[grid.HeaderSize+10] ^= 0xff // a byte of the first tile
	bad := filepath.Join(t.TempDir(), "bad.grid")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := partopt("solve", "-o", t.TempDir(), bad); code != exitBadInput || !strings.Contains(stderr, "tile (0,0)") {
		t.Errorf("corrupt tile: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{
		{"--window", "-1"}, {"--window", "8", "--method", "trws"}, {"--workers", "0"}, {"--rounds", "-1"}, {"--halo", "-1"},
	} {
		if code, _, stderr := partopt(append([]string{"solve", "-o", t.TempDir(), up}, args...)...); code != exitBadInput || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := runContext(ctx, []string{"solve", "-o", dir, gp}, &out, &errOut); code != exitInternal || !strings.Contains(errOut.String(), "interrupted") {
		t.Errorf("interrupted: exit %d, %q", code, errOut.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an interrupted run left %v", entries)
	}
}

// TestWindowStatusText: the status line shows the round, windows, persistent
// fraction and an ETA from the round's pace; a resumed run's merges of its
// earlier results are no pace.
func TestWindowStatusText(t *testing.T) {
	got := windowProgressText(partition.RasterProgress{Round: 1, WindowsDone: 10, Windows: 40, Persistent: 750}, 1000, 20*time.Second)
	if want := "round 2  windows 10/40 (25.0%)  persistent 75.0%  ETA 1m0s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := windowProgressText(partition.RasterProgress{Windows: 4}, 10, 0); !strings.HasSuffix(got, "ETA -") {
		t.Errorf("no window done yet: %q", got)
	}
	if got := windowProgressText(partition.RasterProgress{WindowsDone: 30, Windows: 40, Resuming: true}, 10, time.Second); !strings.HasSuffix(got, "windows 30/40 (75.0%)  persistent 0.0%  resuming") {
		t.Errorf("while resuming: %q", got)
	}
	// 30 windows replayed, then 5 solved in 50 s: 5 left take 50 s more.
	if got := windowProgressText(partition.RasterProgress{WindowsDone: 35, Windows: 40, Reused: 30}, 10, 50*time.Second); !strings.HasSuffix(got, "ETA 50s") {
		t.Errorf("after resuming: %q", got)
	}
	if got := windowProgressText(partition.RasterProgress{WindowsDone: 30, Windows: 40, Reused: 30}, 10, time.Second); !strings.HasSuffix(got, "ETA -") {
		t.Errorf("nothing solved since the resume: %q", got)
	}
	// A resumed run whose windows under way at the stop come first in plan
	// order: what it replayed waits for them, and says so.
	if got := windowProgressText(partition.RasterProgress{Windows: 400, Waiting: 100, Reused: 100}, 10, time.Minute); !strings.HasSuffix(got, "windows 0/400 (0.0%) +100 solved  persistent 0.0%  ETA -") {
		t.Errorf("replayed windows waiting: %q", got)
	}
}

// TestResumedPaceCountsOnlyNewWindows: the windows a resumed run replayed,
// merged or waiting for the windows before them, are no pace: the ETA counts
// only the windows solved since the replay ended. The 10⁸ run's line said
// "windows 14/400 ETA 7m27s" right after replaying 14 (the replayed windows
// merged after the last report of the replay, and counted), then "ETA 21m19s"
// with nothing solved since.
func TestResumedPaceCountsOnlyNewWindows(t *testing.T) {
	var out strings.Builder
	cmd := &cobra.Command{}
	cmd.SetErr(&out)
	v := newProgress(cmd)
	clock := time.Unix(1000, 0)
	v.line.now, v.line.every, v.line.last = func() time.Time { return clock }, 0, clock
	report := func(p partition.RasterProgress, after time.Duration) string {
		clock = clock.Add(after)
		out.Reset()
		p.Windows = 400
		v.update(job.Progress{Variables: 10, Windows: &p})
		return out.String()
	}
	report(partition.RasterProgress{Resuming: true}, 0)
	report(partition.RasterProgress{Resuming: true, Reused: 14}, 15*time.Second)
	if got := report(partition.RasterProgress{WindowsDone: 14, Reused: 14}, time.Second); !strings.Contains(got, "windows 14/400 (3.5%)  persistent 0.0%  ETA -") {
		t.Errorf("right after the replay: %q", got)
	}
	if got := report(partition.RasterProgress{WindowsDone: 14, Waiting: 2, Reused: 14}, 30*time.Second); !strings.Contains(got, "ETA -") {
		t.Errorf("nothing merged since the replay: %q", got)
	}
	// Two windows merged 60 s after the replay: 384 left at 30 s a window.
	if got := report(partition.RasterProgress{WindowsDone: 16, Reused: 14}, 29*time.Second); !strings.Contains(got, "windows 16/400 (4.0%)  persistent 0.0%  ETA 3h12m0s") {
		t.Errorf("two windows after the replay: %q", got)
	}
}

// TestSolveLeavesNoStaleOutputs: solving into a directory that holds another run's
// outputs removes those this run does not write, so no file disagrees with the report.
func TestSolveLeavesNoStaleOutputs(t *testing.T) {
	_, up := genGrid(t, "1")
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--method", "pbp"}, []string{certificateFile, labelsFile, optimalFile, persistentFile, reportFile}},
		{nil, []string{aliveTilesFile, certificateFile, domainsFile, labelTilesFile, labelsFile, optimalFile, persistencyPNG, persistentFile, persistentTilesFile, reportFile}},
		{[]string{"--window", "8", "--method", "pbp"}, []string{labelTilesFile, labelsFile, optimalFile, persistencyPNG, persistentFile, persistentTilesFile, reportFile, windowCertificatesFile}},
		{[]string{"--method", "trws"}, []string{labelsFile, reportFile}},
		{[]string{"--window", "8"}, []string{aliveTilesFile, domainsFile, labelTilesFile, labelsFile, optimalFile, persistencyPNG, persistentFile, persistentTilesFile, reportFile, windowCertificatesFile}},
		{[]string{"--method", "pbp", "--complete=false"}, []string{certificateFile, labelsFile, persistentFile, reportFile}},
		{nil, []string{aliveTilesFile, certificateFile, domainsFile, labelTilesFile, labelsFile, optimalFile, persistencyPNG, persistentFile, persistentTilesFile, reportFile}},
	} {
		if code, _, stderr := partopt(append([]string{"solve", "-o", dir, up}, c.args...)...); code != 0 {
			t.Fatal(stderr)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("after solve %v: %v, want %v", c.args, got, c.want)
		}
	}
}

// TestSolveWindowsHigherOrderRegions: regions of a higher-order model are solved by
// enumeration, and the persistent labels keep the optimum (brute force).
func TestSolveWindowsHigherOrderRegions(t *testing.T) {
	found := false
	for seed := uint64(1); seed < 40 && !found; seed++ {
		m := random.HigherOrder(random.New(seed), 12, 3, 3, 14)
		path := filepath.Join(t.TempDir(), "ho.uai")
		if err := uai.WriteFile(path, m); err != nil {
			t.Fatal(err)
		}
		o := solveWindowed(t, path, 12, 0, 0, "--window", "4", "--halo", "1")
		_, opt, err := oracle.BruteForce(m, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Condition(o.listed)
		if err != nil {
			t.Fatal(err)
		}
		_, copt, err := oracle.BruteForce(c.Model, 1<<22)
		if err != nil {
			t.Fatal(err)
		}
		if !testutil.CloseTo(copt, opt, 1e-9) {
			t.Fatalf("seed %d: optimum %v, with the windowed labels fixed %v", seed, opt, copt)
		}
		found = o.report.PersistentVariables > 0
	}
	if !found {
		t.Error("no random model had a persistent variable: the test checks too little")
	}
}

// TestVerifyReplaysWindowedResults: verify re-checks a windowed result from
// the model and its window certificates (exit 0, the proofs counted), says NOT
// verified (exit 1) when an output claims a pixel no window proved, and
// explains a windowed result without certificates (bad input, one line).
func TestVerifyReplaysWindowedResults(t *testing.T) {
	gp, _ := genGrid(t, "1")
	o := solveWindowed(t, gp, 24*16, 24, 16, "--window", "8")
	code, stdout, stderr := partopt("verify", gp, o.dir)
	want := fmt.Sprintf("verified %d persistent variables from ", o.report.PersistentVariables)
	if code != 0 || !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, "window proofs in") {
		t.Errorf("exit %d, %q %q; want %q…", code, stdout, stderr, want)
	}
	evid := filepath.Join(o.dir, persistentFile)
	if err := os.WriteFile(evid, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := partopt("verify", gp, o.dir); code != exitInternal || !strings.HasPrefix(stderr, "partopt: NOT verified") {
		t.Errorf("a persistent.evid claiming nothing: exit %d, %q", code, stderr)
	}
	os.Remove(filepath.Join(o.dir, windowCertificatesFile))
	code, _, stderr = partopt("verify", gp, o.dir)
	if code != exitBadInput || !strings.Contains(stderr, "windowed result") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("without certificates: exit %d, %q", code, stderr)
	}
}
