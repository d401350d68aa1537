package labelfile_test

import (
	"bytes"
	"image"
	"image/color"
	"math"
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

func renderAlive(t *testing.T, w, h, k int, labels, alive []int32, maxSide int) (*image.NRGBA, error) {
	t.Helper()
	var buf bytes.Buffer
	err := labelfile.RenderAlivePNG(&buf, labelfile.Slice(labelfile.Header{Width: w, Height: h, Labels: k}, labels),
		labelfile.Slice(labelfile.Header{Width: w, Height: h, Labels: k, Kind: labelfile.Alive}, alive), maxSide)
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
	img, err := renderAlive(t, 4, 1, 4, []int32{3, 0, 1, 2}, []int32{0b1000, 0b0011, 0b0111, 0b1111}, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantPixels(t, img, [][]color.NRGBA{{white, {255, 255, 0, 255}, {255, 128, 0, 255}, red}})
	// Downsampled 2×1 blocks: white with yellow, and the two others.
	img, err = renderAlive(t, 4, 1, 4, []int32{3, 0, 1, 2}, []int32{0b1000, 0b0011, 0b0111, 0b1111}, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantPixels(t, img, [][]color.NRGBA{{{255, 255, 128, 255}, {255, uint8(math.Round(127.5 / 2)), 0, 255}}})
	for _, mask := range []int32{0, 0b10000} {
		if _, err := renderAlive(t, 1, 1, 4, []int32{0}, []int32{mask}, 10); err == nil || !strings.Contains(err.Error(), "alive") {
			t.Errorf("mask %#b: %v, want an error", mask, err)
		}
	}
}
