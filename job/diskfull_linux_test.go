package job

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
)

// TestFullDiskLeavesEveryOutputOrNone: on a real full disk — a small tmpfs,
// where the test may mount one (root; else TestFailedRunLeavesTheDirectoryAsItWas
// injects the fault) — a windowed run whose outputs do not fit fails with a
// clear error and leaves the directory as the earlier run left it, and a run
// that fits writes every output.
func TestFullDiskLeavesEveryOutputOrNone(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=192k"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the injected-fault test covers a full disk", err)
	}
	defer syscall.Unmount(mnt, 0)
	big := filepath.Join(t.TempDir(), "big.uai") // its window certificates alone exceed the disk
	if err := uai.WriteFile(big, random.PottsDenoising(random.New(4), 96, 96, 4, 0.6, 4, 1)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "out")
	small := Spec{Model: "../testdata/network-evid.uai", Method: PBP, Output: dir}
	if _, err := Run(context.Background(), small, Options{}); err != nil {
		t.Fatalf("a run that fits: %v", err)
	}
	before := dirFiles(t, dir)
	if _, ok := before[ReportFile]; !ok || len(before) != 5 { // optimal.sol too: every variable is persistent
		t.Fatalf("the run that fits wrote %v", keys(before))
	}
	_, err := Run(context.Background(), Spec{Model: big, Method: PBP, Window: 24, Halo: 4, Output: dir}, Options{})
	if err == nil || !errors.Is(err, syscall.ENOSPC) && !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a run that does not fit: %v, want no space left", err)
	}
	if after := dirFiles(t, dir); !maps.Equal(after, before) {
		t.Errorf("the failed run left %v, want the earlier run's %v", keys(after), keys(before))
	}
	if free := freeBytes(t, mnt); free < 150<<10 {
		t.Errorf("the failed run left its stage's bytes behind: %d bytes free of 192 KiB", free)
	}
}

// freeBytes is the free space of the filesystem at path.
func freeBytes(t *testing.T, path string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
