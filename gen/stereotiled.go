package gen

import (
	"fmt"
	"image"

	"github.com/partopt/partopt/model/grid"
)

// StereoTiledModel is a W×H truncated-linear stereo model made by mirror-tiling the
// stereo model of a rectified pair (see the package doc). It holds the pair's grey
// levels and one source row, nothing proportional to W·H.
type StereoTiledModel struct {
	src    *StereoModel
	w, h   int
	sy     int       // the source row in su (−1: none yet)
	su, sw []float32 // unaries and weights of source row sy, scratch for src.Row
}

// StereoTiled returns the W×H model tiled from the stereo model of the rectified pair
// (left, right) with disparities 0..maxDisp−1 (at least 2) and the options of Stereo.
func StereoTiled(left, right image.Image, w, h, maxDisp int, opts StereoOptions) (*StereoTiledModel, error) {
	if w < 1 || h < 1 || w > grid.MaxSide || h > grid.MaxSide {
		return nil, fmt.Errorf("gen: stereo tiled size %d×%d, want 1..%d per side", w, h, grid.MaxSide)
	}
	if maxDisp < 2 {
		return nil, fmt.Errorf("gen: %d disparities, want at least 2", maxDisp)
	}
	s, err := Stereo(left, right, maxDisp, opts)
	if err != nil {
		return nil, err
	}
	su, sw := rowBuffers(s.Header())
	return &StereoTiledModel{src: s, w: w, h: h, sy: -1, su: su, sw: sw}, nil
}

// Header implements Source: the pair's header at W×H.
func (t *StereoTiledModel) Header() grid.Header {
	h := t.src.Header()
	h.Width, h.Height = t.w, t.h
	return h
}

// Row implements Source. Output pixel (x, y) is source pixel (mirror(x), mirror(y)),
// so a row is periodic in x with period 2·(source width): Row builds one period and
// repeats it.
func (t *StereoTiledModel) Row(y int, unary, weights []float32) {
	s := t.src
	v := mirror(y, s.h)
	if t.sy != v {
		s.Row(v, t.su, t.sw)
		t.sy = v
	}
	n := min(t.w, 2*s.w) // pixels of one period
	for x := range n {
		u := mirror(x, s.w)
		copy(unary[x*s.d:(x+1)*s.d], t.su[u*s.d:(u+1)*s.d])
	}
	repeat(unary, n*s.d)
	if !s.o.Contrast {
		return
	}
	// The weight of an output edge is the stereo weight of its two source pixels: the
	// source edge between them, or at a seam (one source pixel) that of equal greys, w.
	p, q := v*s.w, mirror(y+1, s.h)*s.w
	for x := range n {
		u := mirror(x, s.w)
		weights[2*x] = s.edge(p+u, p+mirror(x+1, s.w))
		weights[2*x+1] = s.edge(p+u, q+u)
	}
	repeat(weights, 2*n)
	weights[2*(t.w-1)] = 0
	if y+1 == t.h {
		for x := range t.w {
			weights[2*x+1] = 0
		}
	}
}

// repeat fills b with copies of its first period values.
func repeat(b []float32, period int) {
	for i := period; i < len(b); {
		i += copy(b[i:], b[:i])
	}
}
