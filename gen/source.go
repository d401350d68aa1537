package gen

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/uai"
)

// Source is a generated 4-connected grid model that produces its rows on demand.
type Source interface {
	// Header describes the model: Width, Height, Labels, Connectivity 4, the pairwise
	// Kind, and Mode Shared (with W, T) or PerEdge (with T).
	Header() grid.Header
	// Row fills row y: unary gets Width·Labels values (label fastest) and, in Mode
	// PerEdge, weights gets Width·2 values (right, down edge of each pixel; edges that
	// leave the image get 0). Row may be called in any order but is not safe for
	// concurrent use.
	Row(y int, unary, weights []float32)
}

// ErrOutputFormat is wrapped by WriteFile's error for an output name it cannot write.
var ErrOutputFormat = errors.New("unknown output format (want .grid, .uai or .LG, optionally .gz)")

// WriteOptions configures WriteFile.
type WriteOptions struct {
	// TileSize is the square tile side of grid files (0: grid.DefaultTileSize). The
	// grid Writer buffers TileSize rows, so it bounds the memory of a streamed file.
	TileSize int
	// Progress, when set, is told the rows of a grid file written so far (of
	// the model's height) after each row.
	Progress func(rows, height int)
}

// CheckOutput reports whether WriteFile can write a file named path (by its extension).
func CheckOutput(path string) error {
	if strings.EqualFold(filepath.Ext(path), ".grid") {
		return nil
	}
	format, comp := uai.FormatOf(path)
	if (format == uai.UAI || format == uai.LG) && comp != ".xz" {
		return nil
	}
	return fmt.Errorf("%s: %w", path, ErrOutputFormat)
}

// WriteFile writes src to path: a .grid file streamed row by row, or (.uai, .LG,
// optionally .gz) a UAI file of the model Build returns.
func WriteFile(path string, src Source, opts WriteOptions) error {
	if err := CheckOutput(path); err != nil {
		return err
	}
	if !strings.EqualFold(filepath.Ext(path), ".grid") {
		m, err := Build(src)
		if err != nil {
			return err
		}
		return uai.WriteFile(path, m)
	}
	hdr := src.Header()
	hdr.TileWidth, hdr.TileHeight = opts.TileSize, opts.TileSize
	w, err := grid.Create(path, hdr)
	if err != nil {
		return err
	}
	unary, weights := rowBuffers(hdr)
	for y := range hdr.Height {
		src.Row(y, unary, weights)
		if err := w.WriteRows(unary, weights); err != nil {
			w.Close()
			os.Remove(path)
			return err
		}
		if opts.Progress != nil {
			opts.Progress(y+1, hdr.Height)
		}
	}
	return w.Close()
}

func rowBuffers(h grid.Header) (unary, weights []float32) {
	unary = make([]float32, h.Width*h.Labels)
	if h.Mode == grid.PerEdge {
		weights = make([]float32, h.Width*2)
	}
	return unary, weights
}

// Build returns src as an in-memory model: one unary factor per pixel (constant ones
// folded into the offset) and one pairwise factor per edge, variable y·Width+x. Its
// energies equal those of the grid file WriteFile streams, values being float32 in both.
func Build(src Source) (*model.Model, error) {
	h := src.Header()
	n := h.Width * h.Height
	if h.Width < 1 || h.Height < 1 || n > math.MaxInt32 || n/h.Height != h.Width {
		return nil, fmt.Errorf("gen: a %d×%d model is too large to build in memory (write a .grid file)", h.Width, h.Height)
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = h.Labels
	}
	b := model.NewBuilder(labels)
	b.Grow(3*n, 5*n)
	shared := -1
	if h.Mode == grid.Shared {
		var err error
		if shared, err = b.AddFunction(h.Function(0)); err != nil {
			return nil, err
		}
	}
	unary, weights := rowBuffers(h)
	t := make([]float64, h.Labels)
	for y := range h.Height {
		src.Row(y, unary, weights)
		for x := range h.Width {
			p := y*h.Width + x
			for l := range t {
				t[l] = float64(unary[x*h.Labels+l])
			}
			if err := b.AddTable([]int{p}, t); err != nil {
				return nil, err
			}
			for d, q := range [2]int{p + 1, p + h.Width} {
				if (d == 0 && x+1 == h.Width) || (d == 1 && y+1 == h.Height) {
					continue
				}
				fn := shared
				if fn < 0 {
					var err error
					if fn, err = b.AddFunction(h.Function(float64(weights[2*x+d]))); err != nil {
						return nil, err
					}
				}
				if err := b.AddFactor(fn, p, q); err != nil {
					return nil, err
				}
			}
		}
	}
	return b.Build()
}
