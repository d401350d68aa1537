package grid

import (
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
)

// Window is the part of a grid inside a rectangle, with the edges that leave it.
type Window struct {
	// X0, Y0, W, H is the rectangle [X0, X0+W) × [Y0, Y0+H).
	X0, Y0, W, H int
	// Model is the induced model: variable j·W+i is pixel (X0+i, Y0+j); one unary
	// factor per pixel, then the pixel's edges to later pixels inside the rectangle,
	// pixel by pixel in raster order. Its offset is zero (the file's Offset belongs to
	// the whole model).
	Model *model.Model
	// Crossing lists the edges with one pixel inside and one outside the rectangle, by
	// first pixel in raster order, then direction. They are exactly the factors of the
	// whole model that model.Induced reports as Boundary for the rectangle's pixels.
	Crossing []Edge
}

// Edge is a pairwise term of the whole grid.
type Edge struct {
	// U and V are pixels of the whole grid (y·Width+x); U is the first argument, the
	// pixel whose tile stores the edge (Header.Dirs gives the directions).
	U, V int
	// Func is the index of the edge's function in the Window's Model (Model.Func).
	Func int
}

// Local returns the variable of the window's model for grid pixel p, or −1 when p is
// outside the window.
func (w *Window) Local(p, width int) int {
	x, y := p%width-w.X0, p/width-w.Y0
	if x < 0 || x >= w.W || y < 0 || y >= w.H {
		return -1
	}
	return y*w.W + x
}

// Window returns the model induced by the rectangle [x0, x0+w) × [y0, y0+h) (see
// Window.Model). It reads only the tiles that intersect the rectangle.
func (r *Reader) Window(x0, y0, w, h int) (*model.Model, error) {
	win, err := r.read(x0, y0, w, h, false, false)
	if err != nil {
		return nil, err
	}
	return win.Model, nil
}

// ReadWindow returns the window of the rectangle [x0, x0+w) × [y0, y0+h) together
// with its crossing edges. With per-edge weights it also reads the tiles of the pixels
// just above, left of and (8-connectivity) right of the rectangle, which store the
// weights of edges entering it; otherwise it reads only the tiles that intersect it.
func (r *Reader) ReadWindow(x0, y0, w, h int) (*Window, error) {
	return r.read(x0, y0, w, h, true, false)
}

// Model reads the whole grid as one model, with the file's Offset. It is meant for
// files that fit in memory.
func (r *Reader) Model() (*model.Model, error) {
	win, err := r.read(0, 0, r.h.Width, r.h.Height, false, true)
	if err != nil {
		return nil, err
	}
	return win.Model, nil
}

// ReadFile reads a whole grid file as a model (see Reader.Model).
func ReadFile(path string) (*model.Model, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Model()
}

func (r *Reader) read(x0, y0, w, h int, crossing, offset bool) (*Window, error) {
	hd := &r.h
	if w < 1 || h < 1 || x0 < 0 || y0 < 0 || x0 > hd.Width-w || y0 > hd.Height-h {
		return nil, fmt.Errorf("%s: window %d×%d at (%d,%d) is not inside the %d×%d grid", r.name, w, h, x0, y0, hd.Width, hd.Height)
	}
	n, ok := mulOK(w, h)
	if _, ok2 := mulOK(n, hd.Labels*8); !ok || !ok2 || n > math.MaxInt32 {
		return nil, fmt.Errorf("%s: window %d×%d has too many pixels (at most %d)", r.name, w, h, math.MaxInt32)
	}
	u := rect{x0, y0, x0 + w, y0 + h}
	e := u
	if crossing {
		e = rect{max(x0-1, 0), max(y0-1, 0), u.x1, u.y1}
		if hd.Connectivity == 8 {
			e.x1 = min(u.x1+1, hd.Width)
		}
	}
	we := u
	if crossing {
		we = e
	}
	unary, weights, err := r.load(u, we)
	if err != nil {
		return nil, err
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = hd.Labels
	}
	b := model.NewBuilder(labels)
	nd := hd.Connectivity / 2
	b.Grow(n*(1+nd), n*(1+2*nd))
	if offset {
		if err := b.AddConstant(hd.Offset); err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	shared := -1
	if hd.Mode != PerEdge {
		if shared, err = b.AddFunction(hd.Function(0)); err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	// edgeFunc returns the function of the edge of direction d from pixel (x, y), whose
	// weight (PerEdge) is in weights of rectangle we.
	ef := hd.Function(0) // reused: AddFunction copies it
	edgeFunc := func(x, y, d int) (int, error) {
		if shared >= 0 {
			return shared, nil
		}
		ef.W = float64(weights[((y-we.y0)*(we.x1-we.x0)+(x-we.x0))*nd+d])
		fn, err := b.AddFunction(ef)
		if err != nil {
			return 0, fmt.Errorf("%s: pixel (%d,%d) edge %d: %w", r.name, x, y, d, err)
		}
		return fn, nil
	}
	t := make([]float64, hd.Labels)
	shape := []int{hd.Labels}
	for j := range h {
		for i := range w {
			v := j*w + i
			for l, c := range unary[v*hd.Labels:][:hd.Labels] {
				t[l] = float64(c)
			}
			fn, err := b.AddFunction(model.Function{Kind: model.Explicit, Shape: shape, Table: t})
			if err == nil {
				err = b.AddFactor(fn, v)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: pixel (%d,%d): %w", r.name, x0+i, y0+j, err)
			}
			for d, dir := range hd.Dirs() {
				qi, qj := i+dir[0], j+dir[1]
				if qi < 0 || qi >= w || qj >= h {
					continue
				}
				fn, err := edgeFunc(x0+i, y0+j, d)
				if err == nil {
					err = b.AddFactor(fn, v, qj*w+qi)
				}
				if err != nil {
					return nil, err
				}
			}
		}
	}
	win := &Window{X0: x0, Y0: y0, W: w, H: h}
	if crossing {
		for y := e.y0; y < e.y1; y++ {
			for x := e.x0; x < e.x1; x++ {
				pin := u.contains(x, y)
				for d, dir := range hd.Dirs() {
					qx, qy := x+dir[0], y+dir[1]
					if qx < 0 || qx >= hd.Width || qy >= hd.Height || pin == u.contains(qx, qy) {
						continue
					}
					fn, err := edgeFunc(x, y, d)
					if err != nil {
						return nil, err
					}
					win.Crossing = append(win.Crossing, Edge{U: y*hd.Width + x, V: qy*hd.Width + qx, Func: fn})
				}
			}
		}
	}
	if win.Model, err = b.Build(); err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	return win, nil
}
