package gen

import (
	"fmt"
	"image"
	"math"

	"github.com/partopt/partopt/model/grid"
)

// TiledOptions configures Tiled. Zero fields take the defaults.
type TiledOptions struct {
	SegOptions
	// Perturb is the largest colour offset per tile and channel, in [0,255] units
	// (default 20; negative: none).
	Perturb float64
}

// TiledModel is a W×H segmentation-style model made by mirror-tiling a source image
// with a colour offset per tile (see the package doc). It holds the source image and
// two rows of colours, nothing proportional to W·H.
type TiledModel struct {
	src     rgb
	cm      *colourModel
	w, h    int
	seed    uint64
	perturb float64
	cur, nx []float32 // colours of rows y and y+1, scratch for Row
}

// Tiled returns the W×H model tiled from img with k labels; seed chooses the per-tile
// offsets (k-means uses opts.Seed as in Segmentation, on the source image).
func Tiled(img image.Image, w, h, k int, seed uint64, opts TiledOptions) (*TiledModel, error) {
	if w < 1 || h < 1 || w > grid.MaxSide || h > grid.MaxSide {
		return nil, fmt.Errorf("gen: tiled size %d×%d, want 1..%d per side", w, h, grid.MaxSide)
	}
	if opts.Perturb == 0 {
		opts.Perturb = 20
	}
	if math.IsNaN(opts.Perturb) || math.IsInf(opts.Perturb, 0) {
		return nil, fmt.Errorf("gen: tiled perturbation %v, want finite", opts.Perturb)
	}
	c := toRGB(img)
	cm, err := newColourModel(c, k, opts.SegOptions)
	if err != nil {
		return nil, err
	}
	return &TiledModel{src: c, cm: cm, w: w, h: h, seed: seed, perturb: max(opts.Perturb, 0),
		cur: make([]float32, 3*w), nx: make([]float32, 3*w)}, nil
}

// Header implements Source.
func (t *TiledModel) Header() grid.Header { return t.cm.header(t.w, t.h) }

// Row implements Source.
func (t *TiledModel) Row(y int, unary, weights []float32) {
	t.colours(y, t.cur)
	if y+1 < t.h {
		t.colours(y+1, t.nx)
	}
	k := len(t.cm.centres)
	for x := range t.w {
		p := t.cur[3*x : 3*x+3]
		t.cm.unary(p, unary[x*k:(x+1)*k])
		weights[2*x], weights[2*x+1] = 0, 0
		if x+1 < t.w {
			weights[2*x] = t.cm.weight(p, t.cur[3*x+3:3*x+6])
		}
		if y+1 < t.h {
			weights[2*x+1] = t.cm.weight(p, t.nx[3*x:3*x+3])
		}
	}
}

// colours writes the perturbed colours of output row y into c.
func (t *TiledModel) colours(y int, c []float32) {
	sw, sh := t.src.w, t.src.h
	ty, v := y/sh, mirror(y, sh)
	row := t.src.c[3*v*sw : 3*(v+1)*sw]
	var off [3]float32
	lastTx := -1
	for x := range t.w {
		if tx := x / sw; tx != lastTx {
			off, lastTx = t.offset(tx, ty), tx
		}
		u := mirror(x, sw)
		for j := range 3 {
			c[3*x+j] = min(max(row[3*u+j]+off[j], 0), 255)
		}
	}
}

// mirror maps i to the source coordinate of period 2n: 0..n−1, then n−1..0.
func mirror(i, n int) int {
	if i %= 2 * n; i >= n {
		return 2*n - 1 - i
	}
	return i
}

// offset is the colour offset of tile (tx, ty), uniform in [−perturb, perturb]³.
func (t *TiledModel) offset(tx, ty int) [3]float32 {
	h := splitmix(t.seed ^ splitmix(uint64(tx)<<32|uint64(uint32(ty))))
	var off [3]float32
	for j := range off {
		h = splitmix(h)
		u := float64(h>>11) / (1 << 53)
		off[j] = float32(t.perturb * (2*u - 1))
	}
	return off
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
