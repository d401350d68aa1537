//go:build linux

package labelfile_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
)

// A 20000×20000 file is created sparse: 400 MB long but (nearly) no blocks on disk,
// before and after a write and Close; it opens and reads back.
func TestCreateIsSparse(t *testing.T) {
	if testing.Short() {
		t.Skip("Close checksums 400 MB of holes")
	}
	path := filepath.Join(t.TempDir(), "big.lab")
	h := labelfile.Header{Width: 20000, Height: 20000, Labels: 2}
	f, err := labelfile.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	allocated := func() (size, disk int64) {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size(), st.Sys().(*syscall.Stat_t).Blocks * 512
	}
	if size, disk := allocated(); size < 400e6 || disk > 1<<20 {
		t.Errorf("new file: %d bytes long, %d on disk", size, disk)
	}
	if err := f.WriteRect(19999, 19999, 1, 1, []int32{1}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, disk := allocated(); disk > 1<<20 {
		t.Errorf("finished file: %d bytes on disk", disk)
	}
	r := open(t, path)
	got := make([]int32, 4)
	if err := r.ReadRect(19998, 19998, 2, 2, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int32{0, 0, 0, 1}) {
		t.Errorf("corner %v, want [0 0 0 1]", got)
	}
}
