package labelfile

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
)

// Raster is a label raster read by rectangles. File implements it, and Slice returns
// one over values in memory.
type Raster interface {
	Header() Header
	ReadRect(x0, y0, w, h int, dst []int32) error
}

// Slice returns an in-memory Raster over values, the h.Width·h.Height values of the
// raster in row-major order (not copied), for models that fit in memory. Its ReadRect
// checks the rectangle and the values like File's. A header that is invalid or does
// not match len(values) makes every ReadRect fail.
func Slice(h Header, values []int32) Raster {
	s := &slice{h: h, v: values}
	if err := s.h.normalise(); err != nil {
		s.err = fmt.Errorf("labelfile.Slice: header: %w", err)
	} else if len(values) != h.Width*h.Height {
		s.err = fmt.Errorf("labelfile.Slice: %d values for %d×%d pixels", len(values), h.Width, h.Height)
	}
	return s
}

type slice struct {
	h   Header
	v   []int32
	err error
}

func (s *slice) Header() Header { return s.h }

func (s *slice) ReadRect(x0, y0, w, h int, dst []int32) error {
	if s.err != nil {
		return s.err
	}
	if err := checkRect("labelfile.Slice", &s.h, "ReadRect", x0, y0, w, h, len(dst)); err != nil {
		return err
	}
	m := s.h.MaxValue()
	for j := range h {
		d := dst[j*w : (j+1)*w]
		copy(d, s.v[(y0+j)*s.h.Width+x0:])
		for i, v := range d {
			if v < 0 || int(v) > m {
				return fmt.Errorf("labelfile.Slice: pixel (%d,%d): value %d outside [0,%d] (%v with %d labels)", x0+i, y0+j, v, m, s.h.Kind, s.h.Labels)
			}
		}
	}
	return nil
}

// bandValues bounds the values of one band that RenderPNG reads at once, unless a
// band of s rows alone is larger.
const bandValues = 1 << 22

// RenderPNG writes the persistency map of labels (Kind Labeling) and persistent (Kind
// Persistent, the same size and K) as a PNG, in the style of the paper's figures:
// the labeling in grey, label l as grey level 255·l/(K−1) (mid grey 128 when K = 1),
// and the pixels that are not persistent in pure red (255,0,0).
//
// When max(W,H) > maxSide the picture is downsampled by the smallest integer factor
// s with ⌈W/s⌉, ⌈H/s⌉ ≤ maxSide: an output pixel stands for an s×s block (smaller at
// the right and bottom edges) and is the block's mean grey mixed towards pure red by
// the fraction of the block's pixels that are not persistent. Channels are rounded
// to the nearest integer.
//
// RenderPNG streams the rasters in bands of whole rows: it holds the output image
// (4 bytes per output pixel) and two bands of W×b values, where the band height b is
// a multiple of s grown towards the raster's tile height (so each tile is read about
// once) while a band holds at most 4 Mi values, and b = s when W·s alone is more.
// Every value is checked against K.
func RenderPNG(w io.Writer, labels, persistent Raster, maxSide int) error {
	lh, ph := labels.Header(), persistent.Header()
	switch {
	case lh.Kind != Labeling || ph.Kind != Persistent:
		return fmt.Errorf("labelfile: RenderPNG: kinds %v and %v, want %v and %v", lh.Kind, ph.Kind, Labeling, Persistent)
	case lh.Width != ph.Width || lh.Height != ph.Height || lh.Labels != ph.Labels:
		return fmt.Errorf("labelfile: RenderPNG: labeling %d×%d with %d labels, persistency map %d×%d with %d labels",
			lh.Width, lh.Height, lh.Labels, ph.Width, ph.Height, ph.Labels)
	case maxSide < 1:
		return fmt.Errorf("labelfile: RenderPNG: maximum side %d, want ≥ 1", maxSide)
	}
	if err := lh.normalise(); err != nil {
		return fmt.Errorf("labelfile: RenderPNG: %w", err)
	}
	W, H, K := lh.Width, lh.Height, lh.Labels
	s := (max(W, H) + maxSide - 1) / maxSide
	img := image.NewNRGBA(image.Rect(0, 0, (W+s-1)/s, (H+s-1)/s))
	b := s * max(1, min((lh.TileHeight+s-1)/s, bandValues/(W*s)))
	lab, per := make([]int32, W*min(b, H)), make([]int32, W*min(b, H))
	for by := 0; by < H; by += b {
		rows := min(b, H-by)
		if err := labels.ReadRect(0, by, W, rows, lab[:W*rows]); err != nil {
			return err
		}
		if err := persistent.ReadRect(0, by, W, rows, per[:W*rows]); err != nil {
			return err
		}
		for j := 0; j < rows; j += s { // blocks start at multiples of s: b is one
			bh := min(s, rows-j)
			for ox := range img.Rect.Dx() {
				x0 := ox * s
				bw := min(s, W-x0)
				var sum, red int
				for y := j; y < j+bh; y++ {
					for i := y*W + x0; i < y*W+x0+bw; i++ {
						l, p := lab[i], per[i]
						if uint32(l) >= uint32(K) || uint32(p) > uint32(K) { // negative values wrap above K
							return fmt.Errorf("labelfile: RenderPNG: pixel (%d,%d): label %d, persistent %d, want [0,%d) and [0,%d]", i%W, by+y, l, p, K, K)
						}
						sum += int(l)
						if p == 0 {
							red++
						}
					}
				}
				n := bw * bh
				grey := 128.0
				if K > 1 {
					grey = 255 * float64(sum) / (float64(K-1) * float64(n))
				}
				f := float64(red) / float64(n)
				g := uint8(math.Round((1 - f) * grey))
				img.SetNRGBA(ox, (by+j)/s, color.NRGBA{R: uint8(math.Round((1-f)*grey + f*255)), G: g, B: g, A: 255})
			}
		}
	}
	return png.Encode(w, img)
}
