package gen

import (
	"fmt"
	"image"
	"math"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
)

// StereoOptions configures Stereo. Zero fields take the defaults.
type StereoOptions struct {
	// Tau is τ, the truncation of the absolute grey difference (default 20).
	Tau float64
	// W is the pairwise weight w (default 8).
	W float64
	// T is the truncation of |d_p − d_q| (default 2; +Inf: plain linear).
	T float64
	// Contrast modulates w per edge by exp(−(g_p−g_q)²/(2β)) of the left image.
	Contrast bool
}

// StereoModel is a truncated-linear stereo model (see the package doc).
type StereoModel struct {
	w, h, d     int
	left, right []float32 // grey
	beta        float64
	o           StereoOptions
}

// Stereo returns the stereo model of a rectified pair with disparities 0..maxDisp−1
// (a pixel of left at x matches right at x−d).
func Stereo(left, right image.Image, maxDisp int, opts StereoOptions) (*StereoModel, error) {
	lb, rb := left.Bounds(), right.Bounds()
	if lb.Dx() != rb.Dx() || lb.Dy() != rb.Dy() {
		return nil, fmt.Errorf("gen: stereo images are %d×%d and %d×%d, want the same size", lb.Dx(), lb.Dy(), rb.Dx(), rb.Dy())
	}
	if maxDisp < 1 || maxDisp > lb.Dx() || maxDisp > grid.MaxLabels {
		return nil, fmt.Errorf("gen: %d disparities, want 1..%d (the image width)", maxDisp, min(lb.Dx(), grid.MaxLabels))
	}
	if opts.Tau == 0 {
		opts.Tau = 20
	}
	if opts.W == 0 {
		opts.W = 8
	}
	if opts.T == 0 {
		opts.T = 2
	}
	if !(opts.Tau > 0) || math.IsInf(opts.Tau, 1) || !(opts.W > 0) || math.IsInf(opts.W, 1) || !(opts.T > 0) {
		return nil, fmt.Errorf("gen: stereo options τ=%v w=%v T=%v, want τ and w positive and finite, T > 0", opts.Tau, opts.W, opts.T)
	}
	s := &StereoModel{w: lb.Dx(), h: lb.Dy(), d: maxDisp, left: toRGB(left).grey(), right: toRGB(right).grey(), o: opts}
	if opts.Contrast {
		s.beta = meanEdgeDiff2(s.left, s.w, s.h, 1)
	}
	return s, nil
}

// Header implements Source.
func (s *StereoModel) Header() grid.Header {
	h := grid.Header{Width: s.w, Height: s.h, Labels: s.d, Connectivity: 4, Kind: model.TruncatedLinear, T: s.o.T}
	if s.o.Contrast {
		h.Mode = grid.PerEdge
	} else {
		h.Mode, h.W = grid.Shared, s.o.W
	}
	return h
}

// Row implements Source.
func (s *StereoModel) Row(y int, unary, weights []float32) {
	L, R := s.left[y*s.w:(y+1)*s.w], s.right[y*s.w:(y+1)*s.w]
	for x := range s.w {
		u := unary[x*s.d : (x+1)*s.d]
		for d := range u {
			u[d] = float32(s.o.Tau)
			if x-d >= 0 {
				u[d] = float32(min(math.Abs(float64(L[x]-R[x-d])), s.o.Tau))
			}
		}
		if !s.o.Contrast {
			continue
		}
		weights[2*x], weights[2*x+1] = 0, 0
		p := y*s.w + x
		if x+1 < s.w {
			weights[2*x] = s.edge(p, p+1)
		}
		if y+1 < s.h {
			weights[2*x+1] = s.edge(p, p+s.w)
		}
	}
}

func (s *StereoModel) edge(p, q int) float32 {
	d := float64(s.left[p] - s.left[q])
	return float32(s.o.W * contrast(d*d, s.beta))
}
