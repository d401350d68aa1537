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

// bandValues bounds the values of each raster that RenderPNG reads at once (a
// variable for the tests).
var bandValues = 1 << 22

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
// RenderPNG streams the rasters in bands of whole blocks: it holds the output image
// (4 bytes per output pixel), sums for a row of blocks, and up to 4 Mi values of
// each raster. A band of b rows, b a multiple of s grown towards the
// raster's tile height (so each tile is read about once), is read whole while it
// holds at most 4 Mi values, else (then b = s) in pieces of at most 4 Mi values:
// up to a tile's height of rows by as many whole tiles' columns as fit. So any
// shape, a single row of 2³¹−1 pixels included, costs the same. Every value is
// checked against K.
func RenderPNG(w io.Writer, labels, persistent Raster, maxSide int) error {
	K := labels.Header().Labels
	return render(w, labels, []Raster{persistent}, Persistent, maxSide, func(x, y int, l int32, ps []int32, sum *[3]float64) error {
		p := ps[0]
		if uint32(l) >= uint32(K) || uint32(p) > uint32(K) { // negative values wrap above K
			return fmt.Errorf("labelfile: RenderPNG: pixel (%d,%d): label %d, persistent %d, want [0,%d) and [0,%d]", x, y, l, p, K, K)
		}
		sum[0] += float64(l)
		if p == 0 {
			sum[1]++
		}
		return nil
	}, func(sum [3]float64, n int) color.NRGBA {
		grey := 128.0
		if K > 1 {
			grey = 255 * sum[0] / (float64(K-1) * float64(n))
		}
		f := sum[1] / float64(n)
		g := uint8(math.Round((1 - f) * grey))
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
	return render(w, labels, alive, Alive, maxSide, func(x, y int, l int32, masks []int32, sum *[3]float64) error {
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
			sum[0], sum[1], sum[2] = sum[0]+v, sum[1]+v, sum[2]+v
		case n == 1:
			sum[0], sum[1], sum[2] = sum[0]+128, sum[1]+128, sum[2]+128
		case K > 2:
			sum[0], sum[1] = sum[0]+255, sum[1]+255*float64(K-n)/float64(K-2)
		default:
			sum[0] += 255
		}
		return nil
	}, func(sum [3]float64, n int) color.NRGBA {
		return color.NRGBA{R: uint8(math.Round(sum[0] / float64(n))), G: uint8(math.Round(sum[1] / float64(n))), B: uint8(math.Round(sum[2] / float64(n))), A: 255}
	})
}

// render streams labels and the rasters others (of Kind kind) in bands (see
// RenderPNG), calls pixel with every pixel's label and values in others and
// the sums of its block, to add the pixel to them (in raster order within
// each piece read), and colour with each block's sums and pixel count once
// the block is complete, then writes the PNG.
func render(w io.Writer, labels Raster, others []Raster, kind Kind, maxSide int, pixel func(x, y int, l int32, v []int32, sum *[3]float64) error, colour func(sum [3]float64, n int) color.NRGBA) error {
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
	ow := img.Rect.Dx()
	// A band is b rows, whole blocks; a piece of it ph rows × pw columns.
	b := min(s*max(1, min((lh.TileHeight+s-1)/s, bandValues/W/s)), s*((H+s-1)/s))
	ph, pw := min(b, H), W
	if ph*W > bandValues {
		ph = min(ph, lh.TileHeight, bandValues)
		pw = min(W, bandValues/ph)
		if pw < W && lh.TileWidth <= pw {
			pw -= pw % lh.TileWidth // a tile that two pieces share is read twice
		}
	}
	lab := make([]int32, ph*pw)
	bands := make([][]int32, len(others))
	for i := range bands {
		bands[i] = make([]int32, len(lab))
	}
	vals := make([]int32, len(others))
	sums := make([][3]float64, ow) // of the blocks of a row of blocks
	for by := 0; by < H; by += b {
		rows := min(b, H-by)
		for py := by; py < by+rows; py += ph {
			k := min(ph, by+rows-py)
			for px := 0; px < W; px += pw {
				cols := min(pw, W-px)
				if err := labels.ReadRect(px, py, cols, k, lab[:cols*k]); err != nil {
					return err
				}
				for o, band := range bands {
					if err := others[o].ReadRect(px, py, cols, k, band[:cols*k]); err != nil {
						return err
					}
				}
				for y := py; y < py+k; y++ {
					for x := px; x < px+cols; x++ {
						i := (y-py)*cols + x - px
						for o, band := range bands {
							vals[o] = band[i]
						}
						if err := pixel(x, y, lab[i], vals, &sums[x/s]); err != nil {
							return err
						}
					}
					// A row of blocks is complete at its last row's right edge.
					if px+cols == W && ((y+1)%s == 0 || y+1 == H) {
						for ox, sum := range sums {
							img.SetNRGBA(ox, y/s, colour(sum, (y%s+1)*min(s, W-ox*s)))
						}
						clear(sums)
					}
				}
			}
		}
	}
	return png.Encode(w, img)
}
