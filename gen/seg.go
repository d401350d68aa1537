package gen

import (
	"fmt"
	"image"
	"math"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
)

// SegOptions configures Segmentation and Tiled. Zero fields take the defaults.
type SegOptions struct {
	// Lambda is λ, the Potts weight of an edge between equal colours (default 1).
	Lambda float64
	// Cap truncates the normalised unaries ‖I_p−μ_l‖²/(2σ²) (default 10).
	Cap float64
	// Iterations bounds the Lloyd steps of k-means (default 20).
	Iterations int
	// Sample bounds the pixels k-means is run on (default 65536).
	Sample int
	// Seed seeds the k-means generator (default 1; the same seed gives the same model).
	Seed uint64
}

func (o *SegOptions) defaults() error {
	if o.Lambda == 0 {
		o.Lambda = 1
	}
	if o.Cap == 0 {
		o.Cap = 10
	}
	if o.Iterations == 0 {
		o.Iterations = 20
	}
	if o.Sample == 0 {
		o.Sample = 65536
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if !(o.Lambda > 0) || math.IsInf(o.Lambda, 1) || !(o.Cap > 0) || math.IsInf(o.Cap, 1) || o.Iterations < 1 || o.Sample < 1 {
		return fmt.Errorf("gen: segmentation options: λ=%v cap=%v iterations=%d sample=%d, want positive and finite", o.Lambda, o.Cap, o.Iterations, o.Sample)
	}
	return nil
}

// colourModel is the part of a segmentation model that depends on colours only.
type colourModel struct {
	centres [][3]float32
	sigma2  float64 // mean squared distance to the nearest centre (1 if 0)
	beta    float64 // mean squared 4-neighbour colour difference
	lambda  float64
	cap     float64
}

func newColourModel(c rgb, k int, o SegOptions) (*colourModel, error) {
	if k < 1 || k > grid.MaxLabels {
		return nil, fmt.Errorf("gen: %d labels, want 1..%d", k, grid.MaxLabels)
	}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	cm := &colourModel{centres: kmeans(c.c, k, o.Iterations, o.Sample, o.Seed), lambda: o.Lambda, cap: o.Cap}
	for i := 0; i < len(c.c); i += 3 {
		cm.sigma2 += dist2(c.c[i:], cm.centres[nearest(c.c[i:], cm.centres)][:])
	}
	cm.sigma2 /= float64(c.w * c.h)
	if cm.sigma2 == 0 {
		cm.sigma2 = 1
	}
	cm.beta = meanEdgeDiff2(c.c, c.w, c.h, 3)
	return cm, nil
}

// unary writes θ_p(l) for the colour p into u[0:K].
func (cm *colourModel) unary(p []float32, u []float32) {
	s := 1 / (2 * cm.sigma2)
	for l := range cm.centres {
		u[l] = float32(min(dist2(p, cm.centres[l][:])*s, cm.cap))
	}
}

// weight is λ·exp(−‖p−q‖²/(2β)).
func (cm *colourModel) weight(p, q []float32) float32 {
	return float32(cm.lambda * contrast(dist2(p, q), cm.beta))
}

func (cm *colourModel) header(w, h int) grid.Header {
	return grid.Header{Width: w, Height: h, Labels: len(cm.centres), Connectivity: 4, Kind: model.Potts, Mode: grid.PerEdge}
}

// Seg is a contrast-sensitive Potts colour segmentation model (see the package doc).
type Seg struct {
	img rgb
	cm  *colourModel
}

// Segmentation clusters the colours of img into k centres and returns the Potts model
// of the package doc: k labels per pixel, per-edge weights.
func Segmentation(img image.Image, k int, opts SegOptions) (*Seg, error) {
	c := toRGB(img)
	cm, err := newColourModel(c, k, opts)
	if err != nil {
		return nil, err
	}
	return &Seg{img: c, cm: cm}, nil
}

// Header implements Source.
func (s *Seg) Header() grid.Header { return s.cm.header(s.img.w, s.img.h) }

// Row implements Source.
func (s *Seg) Row(y int, unary, weights []float32) {
	w, k, c := s.img.w, len(s.cm.centres), s.img.c
	for x := range w {
		p := 3 * (y*w + x)
		s.cm.unary(c[p:p+3], unary[x*k:(x+1)*k])
		weights[2*x], weights[2*x+1] = 0, 0
		if x+1 < w {
			weights[2*x] = s.cm.weight(c[p:p+3], c[p+3:p+6])
		}
		if y+1 < s.img.h {
			weights[2*x+1] = s.cm.weight(c[p:p+3], c[p+3*w:p+3*w+3])
		}
	}
}

// Centres returns the k-means centres (RGB in [0,255]), label l's centre at index l.
func (s *Seg) Centres() [][3]float32 { return append([][3]float32(nil), s.cm.centres...) }

// Scales returns σ² (the unary normaliser) and β (the contrast normaliser).
func (s *Seg) Scales() (sigma2, beta float64) { return s.cm.sigma2, s.cm.beta }

// Labeling returns the k-means labeling: each pixel's nearest centre.
func (s *Seg) Labeling() []int {
	x := make([]int, s.img.w*s.img.h)
	for i := range x {
		x[i] = nearest(s.img.c[3*i:], s.cm.centres)
	}
	return x
}
