package labelfile

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
)

// Rendering rasters of one row of 2²⁸−1 pixels (1 GB each as int32, where
// the render once read a band of whole rows) reads them at most bandValues
// values at once, and the heap stays under 100 MB while 2²⁴ values are drawn;
// so for the alive map of 40 labels (two planes).
func TestRenderHoldsABandOfAHugeRow(t *testing.T) {
	row := func(kind Kind, plane int) *wideRow {
		return &wideRow{h: Header{Width: 1<<28 - 1, Height: 1, Labels: 40, Kind: kind, Plane: plane}, most: bandValues, limit: 1 << 24}
	}
	for _, alive := range []bool{false, true} {
		t.Run(fmt.Sprint("alive ", alive), func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatal(p)
				}
			}()
			runtime.GC()
			lab := row(Labeling, 0)
			var err error
			if alive {
				err = RenderAlivePNG(io.Discard, lab, []Raster{row(Alive, 0), row(Alive, 1)}, 4096)
			} else {
				err = RenderPNG(io.Discard, lab, row(Persistent, 0), 4096)
			}
			if !errors.Is(err, errEnough) {
				t.Fatalf("render: %v after %d values, want to get past %d", err, lab.n, lab.limit)
			}
			if lab.peakHeapBytes > 100<<20 {
				t.Errorf("heap in use %d MB", lab.peakHeapBytes>>20)
			}
		})
	}
}
