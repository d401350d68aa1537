package hdf5

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkReadGzip reads 10⁷ float64 stored in chunks of 2¹⁶ elements with
// deflate and shuffle. The file (about 20 MB) is written at benchmark time by
// Debian's h5py (/usr/bin/python3); without it the benchmark is skipped.
func BenchmarkReadGzip(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.h5")
	script := `import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("x", data=np.arange(10**7, dtype="<f8") * 0.5, chunks=(1 << 16,),
                     compression="gzip", shuffle=True)
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, path).CombinedOutput(); err != nil {
		b.Skipf("cannot write the file with h5py: %v\n%s", err, out)
	}
	f, err := OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(8e7)
	for b.Loop() {
		d, err := f.Dataset("x")
		if err != nil {
			b.Fatal(err)
		}
		v, err := d.Float64s(0)
		if err != nil {
			b.Fatal(err)
		}
		if len(v) != 1e7 || v[12345] != 12345*0.5 {
			b.Fatalf("%d values, v[12345] = %v", len(v), v[12345])
		}
	}
}
