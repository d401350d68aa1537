package labelfile

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/bits"
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
			if uint32(v) > uint32(m) { // negative values wrap above it
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
	K := labels.Header().Labels
	var sum, red int
	return render(w, labels, []Raster{persistent}, Persistent, maxSide, func(x, y int, l int32, ps []int32) error {
		p := ps[0]
		if uint32(l) >= uint32(K) || uint32(p) > uint32(K) { // negative values wrap above K
			return fmt.Errorf("labelfile: RenderPNG: pixel (%d,%d): label %d, persistent %d, want [0,%d) and [0,%d]", x, y, l, p, K, K)
		}
		sum += int(l)
		if p == 0 {
			red++
		}
		return nil
	}, func(n int) color.NRGBA {
		grey := 128.0
		if K > 1 {
			grey = 255 * float64(sum) / (float64(K-1) * float64(n))
		}
		f := float64(red) / float64(n)
		g := uint8(math.Round((1 - f) * grey))
		sum, red = 0, 0
		return color.NRGBA{R: uint8(math.Round((1-f)*grey + f*255)), G: g, B: g, A: 255}
	})
}

// RenderAlivePNG writes the map of what label elimination left, from labels (Kind
// Labeling) and alive, the AlivePlanes(K) Alive planes in order (the same size and
// K): a pixel with one alive label (persistent) in grey as in RenderPNG, one with n
// ≥ 2 labels left from yellow (255,255,0) for 2 to pure red (255,0,0) for all K,
// green 255·(K−n)/(K−2). Downsampling and streaming are RenderPNG's (one band per
// plane); an output pixel is the mean colour of its block. Every value is checked:
// a label below K, masks with 1 to K bits in all.
func RenderAlivePNG(w io.Writer, labels Raster, alive []Raster, maxSide int) error {
	K := labels.Header().Labels
	if len(alive) != AlivePlanes(K) {
		return fmt.Errorf("labelfile: RenderAlivePNG: %d alive planes for %d labels, want %d", len(alive), K, AlivePlanes(K))
	}
	for p, a := range alive {
		if a.Header().Plane != p {
			return fmt.Errorf("labelfile: RenderAlivePNG: alive plane %d given as plane %d", a.Header().Plane, p)
		}
	}
	var r, g, b float64
	return render(w, labels, alive, Alive, maxSide, func(x, y int, l int32, masks []int32) error {
		n := 0
		for p, a := range masks {
			if uint64(uint32(a)) >= 1<<min(K-AlivePlaneLabels*p, AlivePlaneLabels) {
				n = -1 // a label beyond K
				break
			}
			n += bits.OnesCount32(uint32(a))
		}
		if uint32(l) >= uint32(K) || n <= 0 {
			return fmt.Errorf("labelfile: RenderAlivePNG: pixel (%d,%d): label %d, alive masks %#x, want a label below %d and 1 to %d labels", x, y, l, masks, K, K)
		}
		switch {
		case n == 1 && K > 1:
			v := 255 * float64(l) / float64(K-1)
			r, g, b = r+v, g+v, b+v
		case n == 1:
			r, g, b = r+128, g+128, b+128
		case K > 2:
			r, g = r+255, g+255*float64(K-n)/float64(K-2)
		default:
			r += 255
		}
		return nil
	}, func(n int) color.NRGBA {
		c := color.NRGBA{R: uint8(math.Round(r / float64(n))), G: uint8(math.Round(g / float64(n))), B: uint8(math.Round(b / float64(n))), A: 255}
		r, g, b = 0, 0, 0
		return c
	})
}

// render streams labels and the rasters others (of Kind kind) in bands (see
// RenderPNG), calls pixel with every pixel's label and values in others, block by
// block, and emit after each block with its pixel count for the block's colour,
// then writes the PNG.
func render(w io.Writer, labels Raster, others []Raster, kind Kind, maxSide int, pixel func(x, y int, l int32, v []int32) error, emit func(n int) color.NRGBA) error {
	lh := labels.Header()
	if lh.Kind != Labeling {
		return fmt.Errorf("labelfile: render: kinds %v and %v, want %v and %v", lh.Kind, kind, Labeling, kind)
	}
	for _, o := range others {
		switch ph := o.Header(); {
		case ph.Kind != kind:
			return fmt.Errorf("labelfile: render: kinds %v and %v, want %v and %v", lh.Kind, ph.Kind, Labeling, kind)
		case lh.Width != ph.Width || lh.Height != ph.Height || lh.Labels != ph.Labels:
			return fmt.Errorf("labelfile: render: labeling %d×%d with %d labels, %v map %d×%d with %d labels",
				lh.Width, lh.Height, lh.Labels, kind, ph.Width, ph.Height, ph.Labels)
		}
	}
	if maxSide < 1 {
		return fmt.Errorf("labelfile: render: maximum side %d, want ≥ 1", maxSide)
	}
	if err := lh.normalise(); err != nil {
		return fmt.Errorf("labelfile: render: %w", err)
	}
	W, H := lh.Width, lh.Height
	s := (max(W, H) + maxSide - 1) / maxSide
	img := image.NewNRGBA(image.Rect(0, 0, (W+s-1)/s, (H+s-1)/s))
	b := s * max(1, min((lh.TileHeight+s-1)/s, bandValues/(W*s)))
	lab := make([]int32, W*min(b, H))
	bands := make([][]int32, len(others))
	for i := range bands {
		bands[i] = make([]int32, len(lab))
	}
	vals := make([]int32, len(others))
	for by := 0; by < H; by += b {
		rows := min(b, H-by)
		if err := labels.ReadRect(0, by, W, rows, lab[:W*rows]); err != nil {
			return err
		}
		for o, band := range bands {
			if err := others[o].ReadRect(0, by, W, rows, band[:W*rows]); err != nil {
				return err
			}
		}
		for j := 0; j < rows; j += s { // blocks start at multiples of s: b is one
			bh := min(s, rows-j)
			for ox := range img.Rect.Dx() {
				x0 := ox * s
				bw := min(s, W-x0)
				for y := j; y < j+bh; y++ {
					for i := y*W + x0; i < y*W+x0+bw; i++ {
						for o, band := range bands {
							vals[o] = band[i]
						}
						if err := pixel(i%W, by+y, lab[i], vals); err != nil {
							return err
						}
					}
				}
				img.SetNRGBA(ox, (by+j)/s, emit(bw*bh))
			}
		}
	}
	return png.Encode(w, img)
}
