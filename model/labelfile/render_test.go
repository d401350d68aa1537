package labelfile_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
)

func render(t *testing.T, labels, persistent labelfile.Raster, maxSide int) *image.NRGBA {
	t.Helper()
	var buf bytes.Buffer
	if err := labelfile.RenderPNG(&buf, labels, persistent, maxSide); err != nil {
		t.Fatal(err)
	}
	return decodeNRGBA(t, &buf)
}

// decodeNRGBA decodes a PNG into NRGBA pixels.
func decodeNRGBA(t *testing.T, buf *bytes.Buffer) *image.NRGBA {
	t.Helper()
	img, err := png.Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewNRGBA(img.Bounds())
	for y := range img.Bounds().Dy() {
		for x := range img.Bounds().Dx() {
			out.Set(x, y, img.At(x, y))
		}
	}
	return out
}

func pair(w, h, k int, labels, persistent []int32) (labelfile.Raster, labelfile.Raster) {
	return labelfile.Slice(labelfile.Header{Width: w, Height: h, Labels: k}, labels),
		labelfile.Slice(labelfile.Header{Width: w, Height: h, Labels: k, Kind: labelfile.Persistent}, persistent)
}

var (
	red   = color.NRGBA{255, 0, 0, 255}
	black = color.NRGBA{0, 0, 0, 255}
	white = color.NRGBA{255, 255, 255, 255}
)

func grey(g uint8) color.NRGBA { return color.NRGBA{g, g, g, 255} }

func wantPixels(t *testing.T, img *image.NRGBA, want [][]color.NRGBA) {
	t.Helper()
	if b := img.Bounds(); b.Dx() != len(want[0]) || b.Dy() != len(want) {
		t.Fatalf("image %v, want %d×%d", b, len(want[0]), len(want))
	}
	for y, row := range want {
		for x, c := range row {
			if got := img.NRGBAAt(x, y); got != c {
				t.Errorf("pixel (%d,%d) = %v, want %v", x, y, got, c)
			}
		}
	}
}

// Without downsampling, label l of K is grey 255·l/(K−1) (rounded; mid grey for
// K = 1) and a pixel that is not persistent is pure red, whatever its label.
func TestRenderPNGColours(t *testing.T) {
	l, p := pair(3, 2, 3, []int32{0, 1, 2, 2, 1, 0}, []int32{1, 0, 3, 3, 2, 0})
	wantPixels(t, render(t, l, p, 3), [][]color.NRGBA{
		{black, red, white},
		{white, grey(128), red},
	})
	l, p = pair(2, 1, 1, []int32{0, 0}, []int32{1, 0})
	wantPixels(t, render(t, l, p, 100), [][]color.NRGBA{{grey(128), red}})
}

// A 7×5 raster with at most 4 pixels a side is drawn at s = 2, 4×3 pixels; a block
// is its mean grey mixed towards red by its fraction of pixels not persistent, edge
// blocks averaging the pixels they have.
func TestRenderPNGDownsamplesBlocks(t *testing.T) {
	const W, H = 7, 5
	lab := make([]int32, W*H)
	per := make([]int32, W*H)
	set := func(x, y int, l int32, persistent bool) {
		lab[y*W+x] = l
		if persistent {
			per[y*W+x] = l + 1
		} else {
			per[y*W+x] = 0
		}
	}
	for y := range H {
		for x := range W {
			set(x, y, 0, true)
		}
	}
	// block (0,0): label 0, half not persistent → (127.5, 0, 0)
	set(0, 0, 0, false)
	set(1, 1, 0, false)
	// block (1,0): label 1 (white), a quarter not persistent → (255, 191.25, 191.25)
	for _, xy := range [][2]int{{2, 0}, {3, 0}, {2, 1}, {3, 1}} {
		set(xy[0], xy[1], 1, xy != [2]int{3, 1})
	}
	// block (3,0) is the column x = 6 of two pixels, one not persistent.
	set(6, 1, 0, false)
	// block (2,1): labels 0,1,1,1 → grey 191.25, all persistent
	set(5, 2, 1, true)
	set(4, 3, 1, true)
	set(5, 3, 1, true)
	// block (3,2) is the single pixel (6,4), label 1.
	set(6, 4, 1, true)
	l, p := pair(W, H, 2, lab, per)
	wantPixels(t, render(t, l, p, 4), [][]color.NRGBA{
		{{128, 0, 0, 255}, {255, 191, 191, 255}, black, {128, 0, 0, 255}},
		{black, black, grey(191), black},
		{black, black, black, white},
	})
}

// The factor is the smallest s with ⌈W/s⌉, ⌈H/s⌉ ≤ maxSide.
func TestRenderPNGOutputSize(t *testing.T) {
	for _, tc := range []struct{ w, h, maxSide, ow, oh int }{
		{4096, 10, 4096, 4096, 10},
		{4097, 10, 4096, 2049, 5},
		{10, 9000, 4096, 4, 3000},
		{5, 5, 1, 1, 1},
		{1, 1, 1, 1, 1},
		{12, 7, 4, 4, 3},
		{12, 7, 3, 3, 2},
		{13, 7, 4, 4, 2},
	} {
		per := make([]int32, tc.w*tc.h)
		for i := range per {
			per[i] = 1
		}
		l, p := pair(tc.w, tc.h, 2, make([]int32, tc.w*tc.h), per)
		var buf bytes.Buffer
		if err := labelfile.RenderPNG(&buf, l, p, tc.maxSide); err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Width != tc.ow || cfg.Height != tc.oh {
			t.Errorf("%d×%d at most %d a side: %d×%d, want %d×%d", tc.w, tc.h, tc.maxSide, cfg.Width, cfg.Height, tc.ow, tc.oh)
		}
	}
}

// naiveRender is the definition of RenderPNG's picture, over whole rasters in memory.
func naiveRender(w, h, k int, lab, per []int32, maxSide int) *image.NRGBA {
	s := 1
	for (w+s-1)/s > maxSide || (h+s-1)/s > maxSide {
		s++
	}
	img := image.NewNRGBA(image.Rect(0, 0, (w+s-1)/s, (h+s-1)/s))
	for oy := range img.Rect.Dy() {
		for ox := range img.Rect.Dx() {
			var g, f, n float64
			for y := oy * s; y < min(h, (oy+1)*s); y++ {
				for x := ox * s; x < min(w, (ox+1)*s); x++ {
					g += 255 * float64(lab[y*w+x]) / float64(k-1)
					if per[y*w+x] == 0 {
						f++
					}
					n++
				}
			}
			g, f = g/n, f/n
			img.SetNRGBA(ox, oy, color.NRGBA{uint8(math.Round((1-f)*g + f*255)), uint8(math.Round((1 - f) * g)), uint8(math.Round((1 - f) * g)), 255})
		}
	}
	return img
}

// Rendering files band by band (bands of s rows grown towards the tile height, tiles
// not dividing the raster), whole or in pieces of a few rows and columns, draws the
// same picture as the definition over whole rasters in memory.
func TestRenderPNGFilesMatchDefinition(t *testing.T) {
	const W, H, K = 53, 37, 5
	rng := rand.New(rand.NewPCG(5, 5))
	lab := randomValues(rng, W*H, K-1)
	per := make([]int32, W*H)
	for i := range per {
		if rng.IntN(3) > 0 {
			per[i] = lab[i] + 1
		}
	}
	write := func(kind labelfile.Kind, v []int32) labelfile.Raster {
		f, path := create(t, labelfile.Header{Width: W, Height: H, Labels: K, Kind: kind, TileWidth: 8, TileHeight: 5})
		if err := f.WriteRect(0, 0, W, H, v); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return open(t, path)
	}
	lf, pf := write(labelfile.Labeling, lab), write(labelfile.Persistent, per)
	for _, band := range []int{1 << 22, 400, 100, 30, 7, 1} {
		restore := labelfile.SetBandValues(band)
		for _, maxSide := range []int{100, 53, 52, 20, 12, 7, 3, 1} {
			t.Run(fmt.Sprintf("band %d maxSide %d", band, maxSide), func(t *testing.T) {
				got, want := render(t, lf, pf, maxSide), naiveRender(W, H, K, lab, per, maxSide)
				if got.Rect != want.Rect {
					t.Fatalf("image %v, want %v", got.Rect, want.Rect)
				}
				for y := range want.Rect.Dy() {
					for x := range want.Rect.Dx() {
						if got.NRGBAAt(x, y) != want.NRGBAAt(x, y) {
							t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, got.NRGBAAt(x, y), want.NRGBAAt(x, y))
						}
					}
				}
			})
		}
		restore()
	}
}

// RenderPNG refuses rasters of the wrong kinds, of different sizes or K, a maximum
// side below 1 and values out of range.
func TestRenderPNGRejectsMismatches(t *testing.T) {
	hd := func(w, h, k int, kind labelfile.Kind) labelfile.Header {
		return labelfile.Header{Width: w, Height: h, Labels: k, Kind: kind}
	}
	zeros := make([]int32, 12)
	ones := []int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	lab := labelfile.Slice(hd(4, 3, 2, labelfile.Labeling), zeros)
	per := labelfile.Slice(hd(4, 3, 2, labelfile.Persistent), ones)
	for _, tc := range []struct {
		name       string
		labels     labelfile.Raster
		persistent labelfile.Raster
		maxSide    int
		want       string
	}{
		{"swapped", per, lab, 10, "kinds"},
		{"two labelings", lab, lab, 10, "kinds"},
		{"other width", lab, labelfile.Slice(hd(3, 4, 2, labelfile.Persistent), ones), 10, "4×3"},
		{"other K", lab, labelfile.Slice(hd(4, 3, 3, labelfile.Persistent), ones), 10, "labels"},
		{"maximum side 0", lab, per, 0, "maximum side"},
		{"too few labels", labelfile.Slice(hd(4, 3, 2, labelfile.Labeling), ones[:11]), per, 10, "values"},
		{"label out of range", labelfile.Slice(hd(4, 3, 2, labelfile.Labeling), []int32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}), per, 10, "pixel (3,2)"},
		{"persistent value out of range", lab, labelfile.Slice(hd(4, 3, 2, labelfile.Persistent), []int32{1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1}), 10, "pixel (1,1)"},
		{"invalid header", labelfile.Slice(hd(0, 3, 2, labelfile.Labeling), nil), labelfile.Slice(hd(0, 3, 2, labelfile.Persistent), nil), 10, "size"},
	} {
		err := labelfile.RenderPNG(&bytes.Buffer{}, tc.labels, tc.persistent, tc.maxSide)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
