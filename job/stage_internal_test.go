package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/dirlock"
)

// TestAKilledRunsStageIsRemovedByTheNext: a run killed before its commit
// leaves its stage behind, unlocked (here made by hand: a partial window
// proofs file); the next run into the directory removes it, leaves the stage
// of a run still going (its lock held) alone, and leaves no stage of its own.
func TestAKilledRunsStageIsRemovedByTheNext(t *testing.T) {
	if !dirlock.Supported {
		t.Skip("no directory locks on this platform: a stage cannot be told from a live run's, so none is removed")
	}
	out := t.TempDir()
	stale, live := filepath.Join(out, stagePrefix+"killed"), filepath.Join(out, stagePrefix+"live")
	for _, dir := range []string{stale, live} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, WindowCertificatesFile), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := dirlock.Lock(live) // another run, still going
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Run(context.Background(), Spec{Model: "../testdata/denoise32.uai.gz", Output: out}, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed run's stage: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(live, WindowCertificatesFile)); err != nil {
		t.Errorf("the live run's stage: %v, want it kept", err)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagePrefix) && filepath.Join(out, e.Name()) != live {
			t.Errorf("a stage left after the run: %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(out, ReportFile)); err != nil {
		t.Errorf("the run's outputs: %v", err)
	}
}
