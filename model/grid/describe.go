package grid

import (
	"fmt"
	"math"
	"os"

	"github.com/partopt/partopt/model"
)

// Stats describes the model a grid file holds from its header alone, without reading
// a tile: what model.Model.Stats would say of the model Reader.Model builds, where the
// header determines it, computed in constant memory for a grid of any size.
//
// The header determines the variables, the factors by order and by kind, and the
// offset exactly. The distinct functions, and so the memory, depend on the unaries and
// per-edge weights in the tiles (the model shares identical functions): Stats gives
// their bounds, the upper reached when the stored values are all distinct, the lower
// when they are all equal. Forbidden (+Inf) unaries live in the tiles and are not
// counted.
type Stats struct {
	// Header is the file's header, with its table in Mode Table.
	Header Header
	// Variables is Width·Height, one per pixel, each of Header.Labels labels.
	Variables int64
	// Unaries is the number of factors of order 1: one explicit table per pixel.
	Unaries int64
	// Edges is the number of factors of order 2: the edges of the Width×Height
	// raster in the header's connectivity, each of the header's pairwise kind.
	Edges int64
	// MinFunctions and MaxFunctions bound the distinct functions: one unary table
	// per pixel at most, and the pairwise function, shared, or one per edge with
	// per-edge weights.
	MinFunctions, MaxFunctions int64
	// TableForbidden counts the +Inf entries of the pairwise table (Mode Table).
	TableForbidden int
	// MinMemoryBytes and MemoryBytes bound what model.Model.MemoryBytes would
	// return for the model read whole: its arrays, which the header determines, and
	// MinFunctions or MaxFunctions functions. They saturate at math.MaxInt64.
	MinMemoryBytes, MemoryBytes int64
	// FileBytes is the size of the file (Describe; 0 from Header.Stats).
	FileBytes int64
}

// Factors is the number of factors, Unaries + Edges.
func (s Stats) Factors() int64 { return s.Unaries + s.Edges }

// FactorsByKind counts the factors per function kind, as model.Stats does: the
// unaries are explicit, the edges of the header's kind (explicit in Mode Table).
func (s Stats) FactorsByKind() map[model.Kind]int64 {
	k := map[model.Kind]int64{model.Explicit: s.Unaries}
	if s.Edges > 0 {
		k[s.Header.Kind] += s.Edges
	}
	return k
}

// Stats returns the description of the model of a grid with header h (see Stats).
// h must be valid, as Reader.Header and Writer.Header return it.
func (h *Header) Stats() Stats {
	w, ht := int64(h.Width), int64(h.Height)
	n := w * ht
	edges := (w-1)*ht + w*(ht-1) // right, down
	if h.Connectivity == 8 {
		edges += 2 * (w - 1) * (ht - 1) // down-right, down-left
	}
	s := Stats{Header: *h, Variables: n, Unaries: n, Edges: edges}
	// The functions: an explicit K-table per pixel, all equal or all distinct; the
	// pairwise function once (Reader.Model adds it even to a grid of one pixel),
	// or with per-edge weights once per edge, all equal or all distinct.
	minPair, maxPair := int64(1), int64(1)
	pairTable := 0
	switch h.Mode {
	case PerEdge:
		minPair, maxPair = min(edges, 1), edges
	case Table:
		pairTable = len(h.Table)
		for _, v := range h.Table {
			if math.IsInf(float64(v), 1) {
				s.TableForbidden++
			}
		}
	}
	s.MinFunctions, s.MaxFunctions = 1+minPair, n+maxPair
	// model.Model.MemoryBytes: labels, facFunc, facStart, facVars, adjStart, adjFac
	// (each variable of a factor once in facVars and once in adjFac), then 72 bytes
	// and the table per function; in float64, as sizes near 2⁶³ overflow int64.
	fn, fe := float64(n), float64(edges)
	factors, vars := fn+fe, fn+2*fe
	arrays := 4*fn + 4*factors + 8*(factors+1) + 4*vars + 8*(fn+1) + 4*vars
	memory := func(unaries, pairs int64) int64 {
		b := arrays + float64(unaries)*(72+8*float64(h.Labels)) + float64(pairs)*(72+8*float64(pairTable))
		if b >= math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(b)
	}
	s.MinMemoryBytes, s.MemoryBytes = memory(1, minPair), memory(n, maxPair)
	return s
}

// Describe returns the Stats of the grid file path, with its size. It reads and checks
// the header and the table (sizes against the file's length, checksums) but neither the
// tile index nor a tile, so it takes constant time and memory for a file of any size;
// a damaged tile shows only when it is read.
func Describe(path string) (Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Stats{}, err
	}
	if st.IsDir() {
		return Stats{}, fmt.Errorf("%s is a directory, not a grid file", path)
	}
	head, err := readHead(f, st.Size(), path)
	if err != nil {
		return Stats{}, err
	}
	s := head.h.Stats()
	s.FileBytes = st.Size()
	return s, nil
}
