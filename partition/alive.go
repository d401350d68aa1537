package partition

import (
	"errors"
	"fmt"
	"math/bits"
)

// AliveLabels are the labels alive per pixel of a raster of Labels labels, kept
// in Stores of label masks, AlivePlaneLabels labels a plane (the layout of
// labelfile's Alive planes, so a plane is a labelfile.File on disk): bit b of
// plane p's value at a pixel is set when label AlivePlaneLabels·p + b is alive.
// A raster elimination reads and writes them by rectangles (RasterMerger), so
// what it holds in memory is a window's, never the raster's.
type AliveLabels struct {
	Labels int
	Planes []Store
}

// AlivePlaneLabels is the number of labels of one plane of AliveLabels.
const AlivePlaneLabels = 32

// AlivePlaneCount is the number of planes of AliveLabels of k labels.
func AlivePlaneCount(k int) int { return (k + AlivePlaneLabels - 1) / AlivePlaneLabels }

// NewMemAlive returns in-memory AliveLabels of a w×h raster of k labels, every
// mask 0 (no label alive: fill them with InitAlive).
func NewMemAlive(w, h, k int) AliveLabels {
	a := AliveLabels{Labels: k, Planes: make([]Store, AlivePlaneCount(k))}
	for p := range a.Planes {
		a.Planes[p] = NewMemStore(w, h)
	}
	return a
}

// check checks that a has the planes of its label count.
func (a AliveLabels) check() error {
	if a.Labels < 1 || len(a.Planes) != AlivePlaneCount(a.Labels) {
		return fmt.Errorf("partition: %d alive planes for %d labels, want %d", len(a.Planes), a.Labels, AlivePlaneCount(a.Labels))
	}
	return nil
}

// planeMask is the mask of every label of plane p of k labels.
func planeMask(p, k int) uint32 {
	n := min(k-AlivePlaneLabels*p, AlivePlaneLabels)
	return uint32(uint64(1)<<n - 1)
}

// readMasks reads the planes' masks of rectangle r into masks[p] (each of
// r.Pixels() values).
func (a AliveLabels) readMasks(r Rect, masks [][]int32) error {
	for p, s := range a.Planes {
		if err := s.ReadRect(r.X0, r.Y0, r.W, r.H, masks[p][:r.Pixels()]); err != nil {
			return err
		}
	}
	return nil
}

// writeMasks writes masks to the planes over rectangle r.
func (a AliveLabels) writeMasks(r Rect, masks [][]int32) error {
	for p, s := range a.Planes {
		if err := s.WriteRect(r.X0, r.Y0, r.W, r.H, masks[p][:r.Pixels()]); err != nil {
			return err
		}
	}
	return nil
}

// newMasks allocates one mask slice per plane of n pixels.
func (a AliveLabels) newMasks(n int) [][]int32 {
	masks := make([][]int32, len(a.Planes))
	for p := range masks {
		masks[p] = make([]int32, n)
	}
	return masks
}

// ReadDomains returns the labels alive at each pixel of rectangle r,
// row-major, ascending; a pixel without any, or with a label beyond Labels,
// is an error (the planes are damaged).
func (a AliveLabels) ReadDomains(r Rect) ([][]int, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	masks := a.newMasks(r.Pixels())
	if err := a.readMasks(r, masks); err != nil {
		return nil, err
	}
	total := 0
	for p, ms := range masks {
		full := planeMask(p, a.Labels)
		for i, m := range ms {
			if uint32(m)&^full != 0 {
				return nil, fmt.Errorf("partition: pixel (%d, %d): alive mask %#x of plane %d has labels beyond %d", r.X0+i%r.W, r.Y0+i/r.W, uint32(m), p, a.Labels)
			}
			total += bits.OnesCount32(uint32(m))
		}
	}
	all := make([]int, 0, total) // one backing array for every pixel's labels
	out := make([][]int, r.Pixels())
	for i := range out {
		start := len(all)
		for p, ms := range masks {
			for m := uint32(ms[i]); m != 0; m &= m - 1 {
				all = append(all, AlivePlaneLabels*p+bits.TrailingZeros32(m))
			}
		}
		if len(all) == start {
			return nil, fmt.Errorf("partition: pixel (%d, %d) has no label alive", r.X0+i%r.W, r.Y0+i/r.W)
		}
		out[i] = all[start:len(all):len(all)]
	}
	return out, nil
}

// maskOf sets masks[·][i] to the labels ls.
func maskOf(masks [][]int32, i int, ls []int) {
	for p := range masks {
		masks[p][i] = 0
	}
	for _, l := range ls {
		masks[l/AlivePlaneLabels][i] |= int32(uint32(1) << (l % AlivePlaneLabels))
	}
}

// InitAlive sets the w×h planes of a: a pixel with a persistent label (a
// Store of label+1, or 0: pbp's map, evidence) keeps that label alone, every
// other pixel every label (persistent nil: every pixel every label). It
// returns the pixels left with one label. Band by band: memory is a band's.
func InitAlive(a AliveLabels, w, h int, persistent Store) (int64, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	var single int64
	err := bands(w, h, func(r Rect) error {
		pers := make([]int32, r.Pixels())
		if persistent != nil {
			if err := persistent.ReadRect(r.X0, r.Y0, r.W, r.H, pers); err != nil {
				return err
			}
		}
		masks := a.newMasks(r.Pixels())
		for i, x := range pers {
			switch {
			case x > 0 && int(x) <= a.Labels:
				l := int(x) - 1
				masks[l/AlivePlaneLabels][i] = int32(uint32(1) << (l % AlivePlaneLabels))
				single++
			case x != 0:
				return fmt.Errorf("partition: pixel (%d, %d): persistent value %d of %d labels", r.X0+i%r.W, r.Y0+i/r.W, x, a.Labels)
			default:
				for p := range masks {
					masks[p][i] = int32(planeMask(p, a.Labels))
				}
				if a.Labels == 1 {
					single++
				}
			}
		}
		return a.writeMasks(r, masks)
	})
	return single, err
}

// bandPixels is the most pixels a band pass (bands) handles at a time.
const bandPixels = 1 << 20

// bands calls f on the w×h raster's bands of whole rows, top to bottom (a
// band of one row when a row alone is larger than bandPixels).
func bands(w, h int, f func(Rect) error) error {
	rows := max(1, bandPixels/max(w, 1))
	for y := 0; y < h; y += rows {
		if err := f(Rect{0, y, w, min(rows, h-y)}); err != nil {
			return err
		}
	}
	return nil
}

// PersistentView is a read-only Store over a: label+1 at a pixel with one
// label alive, 0 elsewhere (what persistent.plf of the elimination holds).
func (a AliveLabels) PersistentView() Store { return persistentView{a} }

type persistentView struct{ a AliveLabels }

func (v persistentView) ReadRect(x0, y0, w, h int, dst []int32) error {
	r := Rect{x0, y0, w, h}
	masks := v.a.newMasks(r.Pixels())
	if err := v.a.readMasks(r, masks); err != nil {
		return err
	}
	for i := range dst[:r.Pixels()] {
		dst[i] = persistentValue(masks, i)
	}
	return nil
}

func (persistentView) WriteRect(int, int, int, int, []int32) error {
	return errors.New("partition: the persistent view of alive labels is read-only")
}

// persistentValue is label+1 when the masks of pixel i hold one label, else 0.
func persistentValue(masks [][]int32, i int) int32 {
	label, n := -1, 0
	for p, ms := range masks {
		if m := uint32(ms[i]); m != 0 {
			n += bits.OnesCount32(m)
			label = AlivePlaneLabels*p + bits.TrailingZeros32(m)
		}
	}
	if n == 1 {
		return int32(label + 1)
	}
	return 0
}

// aliveCount is the number of labels the masks of pixel i hold.
func aliveCount(masks [][]int32, i int) int {
	n := 0
	for _, ms := range masks {
		n += bits.OnesCount32(uint32(ms[i]))
	}
	return n
}

// hasLabel says whether the masks of pixel i hold label l.
func hasLabel(masks [][]int32, i, l int) bool {
	p := l / AlivePlaneLabels
	return p < len(masks) && l >= 0 && uint32(masks[p][i])&(1<<(l%AlivePlaneLabels)) != 0
}

// lowestLabel is the lowest label the masks of pixel i hold (−1: none).
func lowestLabel(masks [][]int32, i int) int {
	for p, ms := range masks {
		if m := uint32(ms[i]); m != 0 {
			return AlivePlaneLabels*p + bits.TrailingZeros32(m)
		}
	}
	return -1
}

// PersistentAlive is the alive labels a persistency map proves (pers: label+1
// where persistent, 0 elsewhere, as a windowed pbp leaves it) for a raster of
// k labels: the persistent label alone, every label elsewhere. Its planes are
// read-only views of pers, so a pbp result is completed (CompleteRaster,
// CheckRaster) out of core without planes of its own.
func PersistentAlive(pers Store, k int) AliveLabels {
	a := AliveLabels{Labels: k, Planes: make([]Store, AlivePlaneCount(k))}
	for p := range a.Planes {
		a.Planes[p] = persistentPlane{pers, p, k}
	}
	return a
}

// persistentPlane is plane p of PersistentAlive's masks.
type persistentPlane struct {
	pers Store
	p, k int
}

func (v persistentPlane) ReadRect(x0, y0, w, h int, dst []int32) error {
	dst = dst[:w*h]
	if err := v.pers.ReadRect(x0, y0, w, h, dst); err != nil {
		return err
	}
	all := int32(planeMask(v.p, v.k))
	for i, l := range dst {
		switch l--; {
		case l < 0:
			dst[i] = all
		case l >= int32(v.k):
			return fmt.Errorf("partition: pixel (%d, %d) is persistent with label %d of %d", x0+i%w, y0+i/w, l, v.k)
		case int(l)/AlivePlaneLabels == v.p:
			dst[i] = 1 << (l % AlivePlaneLabels)
		default:
			dst[i] = 0
		}
	}
	return nil
}

func (persistentPlane) WriteRect(int, int, int, int, []int32) error {
	return errors.New("partition: the alive labels of a persistency map are read-only")
}
