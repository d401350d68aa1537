package labelfile_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
)

// benchFile is a finished 4096×4096 file of 128×128 tiles with random values.
func benchFile(b *testing.B, labels int) (*labelfile.File, string) {
	h := labelfile.Header{Width: 4096, Height: 4096, Labels: labels}
	f, path := create(b, h)
	rng := rand.New(rand.NewPCG(1, 1))
	for y := 0; y < h.Height; y += 512 {
		if err := f.WriteRect(0, y, h.Width, 512, randomValues(rng, h.Width*512, h.MaxValue())); err != nil {
			b.Fatal(err)
		}
	}
	return f, path
}

// rectAt returns the i-th 512×512 rectangle: on tile corners when aligned (16 tiles),
// else offset by 64 pixels (25 tiles in 5 tile rows).
func rectAt(i int, aligned bool) (int, int) {
	x, y := (i*3%7)*512, (i*5%7)*512
	if !aligned {
		x, y = x+64, y+64
	}
	return x, y
}

var benchCases = []struct {
	labels  int
	aligned bool
}{{2, true}, {2, false}, {300, true}, {300, false}}

func benchName(labels int, aligned bool) string {
	a := "unaligned"
	if aligned {
		a = "aligned"
	}
	return fmt.Sprintf("K=%d/%s", labels, a)
}

// BenchmarkReadRect reads 512×512 rectangles of a finished 4096×4096 file (128×128
// tiles, checksums checked; 1 byte per value for K = 2, 2 for K = 300).
func BenchmarkReadRect(b *testing.B) {
	for _, tc := range benchCases {
		b.Run(benchName(tc.labels, tc.aligned), func(b *testing.B) {
			f, path := benchFile(b, tc.labels)
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			r := open(b, path)
			dst := make([]int32, 512*512)
			i := 0
			for b.Loop() {
				x, y := rectAt(i, tc.aligned)
				if err := r.ReadRect(x, y, 512, 512, dst); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(i)*512*512/b.Elapsed().Seconds()/1e6, "Mpx/s")
		})
	}
}

// BenchmarkWriteRect writes 512×512 rectangles into a 4096×4096 file being created
// (128×128 tiles): whole tiles when aligned, else partly covered tiles read back.
func BenchmarkWriteRect(b *testing.B) {
	for _, tc := range benchCases {
		b.Run(benchName(tc.labels, tc.aligned), func(b *testing.B) {
			f, _ := benchFile(b, tc.labels)
			defer f.Close()
			src := randomValues(rand.New(rand.NewPCG(2, 2)), 512*512, tc.labels-1)
			i := 0
			for b.Loop() {
				x, y := rectAt(i, tc.aligned)
				if err := f.WriteRect(x, y, 512, 512, src); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(i)*512*512/b.Elapsed().Seconds()/1e6, "Mpx/s")
		})
	}
}

// BenchmarkClose completes a 4096×4096 file of K = 2: checksums 1024 tiles (16 MB).
func BenchmarkClose(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		f, _ := benchFile(b, 2)
		b.StartTimer()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(4096 * 4096)
}

// BenchmarkRenderPNG draws the persistency map of two 4096×4096 files at most 1024
// pixels a side (s = 4).
func BenchmarkRenderPNG(b *testing.B) {
	lf, lp := benchFile(b, 2)
	pf, pp := benchFile(b, 2) // values in [0,1] are valid persistent values of K = 2
	lf.Close()
	pf.Close()
	l, p := open(b, lp), open(b, pp)
	b.SetBytes(4096 * 4096)
	for b.Loop() {
		if err := labelfile.RenderPNG(io.Discard, l, persistentView{p}, 1024); err != nil {
			b.Fatal(err)
		}
	}
}

// persistentView presents a labeling file of K = 2 as a persistency map of K = 2.
type persistentView struct{ *labelfile.File }

func (v persistentView) Header() labelfile.Header {
	h := v.File.Header()
	h.Kind = labelfile.Persistent
	return h
}
