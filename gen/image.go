package gen

import (
	"fmt"
	"image"
	_ "image/gif" // registered decoders for LoadImage
	_ "image/jpeg"
	_ "image/png"
	"io"
	"math"
	"os"

	// golang.org/x/image supplies the BMP and TIFF decoders the standard library lacks;
	// the Middlebury stereo pairs of ../shared/images are BMP and TIFF files.
	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
)

// MaxImagePixels bounds the images LoadImage decodes: models are built from them
// in memory (about 40 bytes per pixel with the decoded image), 2^26 pixels (an
// 8192×8192 image) at most.
const MaxImagePixels = 1 << 26

// LoadImage decodes a PNG, JPEG, GIF, BMP or TIFF file of at most MaxImagePixels
// pixels. The size is read from the header first: a small file may declare an
// image of billions of pixels (an 8.8 KB PNG of 60000² once made gen allocate
// 14 GB), and is refused before anything is allocated for it.
func LoadImage(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable image (PNG, JPEG, GIF, BMP or TIFF): %w", path, err)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxImagePixels {
		return nil, fmt.Errorf("%s: an image of %d×%d pixels; gen builds models of images up to %d pixels in memory", path, cfg.Width, cfg.Height, MaxImagePixels)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable image (PNG, JPEG, GIF, BMP or TIFF): %w", path, err)
	}
	if b := img.Bounds(); b.Empty() {
		return nil, fmt.Errorf("%s: empty image", path)
	}
	return img, nil
}

// rgb is an image as float32 RGB in [0,255], three values per pixel in raster order.
type rgb struct {
	w, h int
	c    []float32
}

func toRGB(img image.Image) rgb {
	b := img.Bounds()
	r := rgb{w: b.Dx(), h: b.Dy(), c: make([]float32, 3*b.Dx()*b.Dy())}
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			r.c[i], r.c[i+1], r.c[i+2] = float32(cr>>8), float32(cg>>8), float32(cb>>8)
			i += 3
		}
	}
	return r
}

// grey returns 0.299R + 0.587G + 0.114B per pixel.
func (r rgb) grey() []float32 {
	g := make([]float32, r.w*r.h)
	for i := range g {
		g[i] = 0.299*r.c[3*i] + 0.587*r.c[3*i+1] + 0.114*r.c[3*i+2]
	}
	return g
}

func dist2(a, b []float32) float64 {
	d0, d1, d2 := float64(a[0]-b[0]), float64(a[1]-b[1]), float64(a[2]-b[2])
	return d0*d0 + d1*d1 + d2*d2
}

// meanEdgeDiff2 is β: the mean of ‖I_p − I_q‖² over the 4-connected edges of an image
// with ch channels per pixel (0 when there are no edges).
func meanEdgeDiff2(c []float32, w, h, ch int) float64 {
	var s float64
	n := 0
	for y := range h {
		for x := range w {
			p := (y*w + x) * ch
			if x+1 < w {
				s += diffN(c[p:p+ch], c[p+ch:p+2*ch])
				n++
			}
			if y+1 < h {
				q := p + w*ch
				s += diffN(c[p:p+ch], c[q:q+ch])
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

func diffN(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i] - b[i])
		s += d * d
	}
	return s
}

// contrast is exp(−d²/(2β)), 1 when β = 0.
func contrast(d2, beta float64) float64 {
	if beta <= 0 {
		return 1
	}
	return math.Exp(-d2 / (2 * beta))
}
