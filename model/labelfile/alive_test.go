package labelfile_test

import (
	"bytes"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
)

// TestAliveMasksRoundTrip: masks of up to 32 labels, the top bit included (negative
// as int32), are stored in the fewest bytes, read back, and checked against 2^K.
func TestAliveMasksRoundTrip(t *testing.T) {
	for _, k := range []int{1, 2, 8, 9, 16, 17, 32} {
		h := labelfile.Header{Width: 7, Height: 5, Labels: k, Kind: labelfile.Alive, TileWidth: 4, TileHeight: 3}
		top := uint32(1<<k - 1)
		vals := make([]int32, 35)
		for i := range vals {
			vals[i] = int32(top >> (i % k)) // from all labels down to one
		}
		f, path := create(t, h)
		if err := f.WriteRect(0, 0, 7, 5, vals); err != nil {
			t.Fatalf("K=%d: %v", k, err)
		}
		if k < 32 {
			bad := []int32{int32(top + 1)}
			if err := f.WriteRect(0, 0, 1, 1, bad); err == nil {
				t.Errorf("K=%d: mask %#x above 2^K accepted", k, top+1)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		g := open(t, path)
		want := 4
		switch {
		case k <= 8:
			want = 1
		case k <= 16:
			want = 2
		}
		if g.Header().BytesPerValue() != want {
			t.Errorf("K=%d: %d bytes per value, want %d", k, g.Header().BytesPerValue(), want)
		}
		got := make([]int32, 35)
		if err := g.ReadRect(0, 0, 7, 5, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != vals[i] {
				t.Fatalf("K=%d: pixel %d read %#x, wrote %#x", k, i, uint32(got[i]), uint32(vals[i]))
			}
		}
		g.Close()
	}
}

// renderAlive renders labels with the alive planes (one slice of masks each).
func renderAlive(t *testing.T, w, h, k int, labels []int32, maxSide int, planes ...[]int32) (*image.NRGBA, error) {
	t.Helper()
	var buf bytes.Buffer
	alive := make([]labelfile.Raster, len(planes))
	for p, masks := range planes {
		alive[p] = labelfile.Slice(labelfile.Header{Width: w, Height: h, Labels: k, Kind: labelfile.Alive, Plane: p}, masks)
	}
	err := labelfile.RenderAlivePNG(&buf, labelfile.Slice(labelfile.Header{Width: w, Height: h, Labels: k}, labels), alive, maxSide)
	if err != nil {
		return nil, err
	}
	return decodeNRGBA(t, &buf), nil
}

// TestRenderAlivePNGColoursByLabelsLeft: one label left is the labeling's grey, two
// yellow, all K red, in between the green fades; a downsampled pixel is the mean of
// its block; empty masks and masks beyond K are refused.
func TestRenderAlivePNGColoursByLabelsLeft(t *testing.T) {
	// K = 4: labels 0..3; masks: {3} persistent, {0,1} two left, {0,1,2} three, all four.
	img, err := renderAlive(t, 4, 1, 4, []int32{3, 0, 1, 2}, 10, []int32{0b1000, 0b0011, 0b0111, 0b1111})
	if err != nil {
		t.Fatal(err)
	}
	wantPixels(t, img, [][]color.NRGBA{{white, {255, 255, 0, 255}, {255, 128, 0, 255}, red}})
	// Downsampled 2×1 blocks: white with yellow, and the two others.
	img, err = renderAlive(t, 4, 1, 4, []int32{3, 0, 1, 2}, 2, []int32{0b1000, 0b0011, 0b0111, 0b1111})
	if err != nil {
		t.Fatal(err)
	}
	wantPixels(t, img, [][]color.NRGBA{{{255, 255, 128, 255}, {255, uint8(math.Round(127.5 / 2)), 0, 255}}})
	for _, mask := range []int32{0, 0b10000} {
		if _, err := renderAlive(t, 1, 1, 4, []int32{0}, 10, []int32{mask}); err == nil || !strings.Contains(err.Error(), "alive") {
			t.Errorf("mask %#b: %v, want an error", mask, err)
		}
	}
}

// TestAlivePlanesHoldMoreThan32Labels: a model of K > 32 labels takes ⌈K/32⌉ alive
// planes, each a file of its 32 labels' masks (the last of the rest) that keeps its
// plane number; planes beyond K, and planes of other kinds, are refused.
func TestAlivePlanesHoldMoreThan32Labels(t *testing.T) {
	for _, k := range []int{33, 64, 70} {
		planes := labelfile.AlivePlanes(k)
		if want := (k + 31) / 32; planes != want {
			t.Fatalf("K=%d: %d planes, want %d", k, planes, want)
		}
		for p := range planes {
			n := min(32, k-32*p) // labels of plane p
			h := labelfile.Header{Width: 3, Height: 2, Labels: k, Kind: labelfile.Alive, Plane: p}
			top := uint32(1<<n - 1)
			vals := []int32{int32(top), 1, int32(uint32(1) << (n - 1)), 0, int32(top >> 1), int32(1 | uint32(1)<<(n-1))}
			f, path := create(t, h)
			if err := f.WriteRect(0, 0, 3, 2, vals); err != nil {
				t.Fatalf("K=%d plane %d: %v", k, p, err)
			}
			if n < 32 {
				if err := f.WriteRect(0, 0, 1, 1, []int32{int32(top + 1)}); err == nil {
					t.Errorf("K=%d plane %d: mask %#x beyond its %d labels accepted", k, p, top+1, n)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			g := open(t, path)
			if g.Header().Plane != p || g.Header().Labels != k {
				t.Fatalf("K=%d: plane %d read back as plane %d of %d labels", k, p, g.Header().Plane, g.Header().Labels)
			}
			if got := readAll(t, g); !slices.Equal(got, vals) {
				t.Fatalf("K=%d plane %d: read %v, wrote %v", k, p, got, vals)
			}
		}
		for _, bad := range []labelfile.Header{
			{Width: 1, Height: 1, Labels: k, Kind: labelfile.Alive, Plane: planes},
			{Width: 1, Height: 1, Labels: k, Kind: labelfile.Alive, Plane: -1},
			{Width: 1, Height: 1, Labels: k, Kind: labelfile.Labeling, Plane: 1},
		} {
			if _, err := labelfile.Create(filepath.Join(t.TempDir(), "x.plf"), bad); err == nil || !strings.Contains(err.Error(), "plane") {
				t.Errorf("K=%d: header %+v: %v, want a plane error", k, bad, err)
			}
		}
	}
}

// TestRenderAlivePNGCountsEveryPlane: with K = 40 a pixel's labels left are the set
// bits of both planes: one bit in the second plane alone is persistent (the grey
// of its label), all 40 red, 21 the middle green; a plane missing, given out of
// order, or empty in all planes is refused.
func TestRenderAlivePNGCountsEveryPlane(t *testing.T) {
	all0, all1 := int32(-1), int32(0xff) // 32 labels, and the 8 of the second plane
	img, err := renderAlive(t, 3, 1, 40, []int32{39, 0, 5}, 10, []int32{0, all0, 0xfffff}, []int32{0x80, all1, 1})
	if err != nil {
		t.Fatal(err)
	}
	wantPixels(t, img, [][]color.NRGBA{{white, red, {255, uint8(math.Round(255 * 19.0 / 38)), 0, 255}}})
	if _, err := renderAlive(t, 1, 1, 40, []int32{0}, 10, []int32{1}); err == nil {
		t.Error("one plane of two rendered")
	}
	if _, err := renderAlive(t, 1, 1, 40, []int32{0}, 10, []int32{0}, []int32{0}); err == nil || !strings.Contains(err.Error(), "alive") {
		t.Errorf("no label left in either plane: %v, want an error", err)
	}
	var buf bytes.Buffer
	lab := labelfile.Slice(labelfile.Header{Width: 1, Height: 1, Labels: 40}, []int32{0})
	p1 := labelfile.Slice(labelfile.Header{Width: 1, Height: 1, Labels: 40, Kind: labelfile.Alive, Plane: 1}, []int32{1})
	if err := labelfile.RenderAlivePNG(&buf, lab, []labelfile.Raster{p1, p1}, 10); err == nil || !strings.Contains(err.Error(), "plane") {
		t.Errorf("planes out of order: %v, want an error", err)
	}
}
