package srmp

import (
	"math"

	"github.com/partopt/partopt/model"
)

// scanner enumerates the entries of a factor's function to compute minima of
//
//	θ(x) − Σ_p sub[p](x_p)
//
// over the entries consistent with fixed labels, either grouped by the label of one
// argument (a min-marginal: a message) or overall. It walks the table in storage
// order with an odometer over all arguments but the last and keeps the partial sums
// of the subtracted vectors per odometer digit, so each entry costs O(1): a message
// of a factor with T entries costs O(T), whatever the order. Values above big (the
// +Inf of forbidden states) count as big.
type scanner struct {
	idx, lo, hi, stride []int
	ps                  []float64 // ps[d] = Σ_{q<d} sub[q][idx[q]]
	base                []int     // base[d] = Σ_{q<d} idx[q]·stride[q]
	row                 []float64 // a row of a parametric function
}

func newScanner(maxOrder, maxLabels int) *scanner {
	return &scanner{
		idx: make([]int, maxOrder), lo: make([]int, maxOrder), hi: make([]int, maxOrder),
		stride: make([]int, maxOrder), ps: make([]float64, maxOrder+1), base: make([]int, maxOrder+1),
		row: make([]float64, maxLabels),
	}
}

// scan sets out[l] (len = the label count of argument group) to the minimum over the
// entries x with x_group = l, or out[0] to the overall minimum when group < 0. sub[p]
// may be nil (nothing subtracted); fix, when not nil, holds a label per argument or −1
// for a free one.
func (sc *scanner) scan(fn *model.Function, big float64, sub [][]float64, fix []int32, group int, out []float64) {
	shape := fn.Shape
	k := len(shape)
	last := k - 1
	for i := range out {
		out[i] = math.Inf(1)
	}
	st := 1
	for p := last; p >= 0; p-- {
		sc.stride[p] = st
		st *= shape[p]
		sc.lo[p], sc.hi[p] = 0, shape[p]
		if fix != nil && fix[p] >= 0 {
			sc.lo[p], sc.hi[p] = int(fix[p]), int(fix[p])+1
		}
	}
	sc.ps[0], sc.base[0] = 0, 0
	for q := 0; q < last; q++ {
		sc.idx[q] = sc.lo[q]
		sc.ps[q+1] = sc.ps[q] + at(sub[q], sc.idx[q])
		sc.base[q+1] = sc.base[q] + sc.idx[q]*sc.stride[q]
	}
	jlo, jhi := sc.lo[last], sc.hi[last]
	subLast := sub[last]
	for {
		var row []float64
		if fn.Kind == model.Explicit {
			row = fn.Table[sc.base[last] : sc.base[last]+shape[last]]
		} else {
			row = sc.row[:shape[last]]
			for j := jlo; j < jhi; j++ {
				row[j] = fn.Pairwise(sc.idx[0], j)
			}
		}
		ps := sc.ps[last]
		if group == last {
			for j := jlo; j < jhi; j++ {
				v := row[j]
				if v > big {
					v = big
				}
				if subLast != nil {
					v -= subLast[j]
				}
				if v -= ps; v < out[j] {
					out[j] = v
				}
			}
		} else {
			best := math.Inf(1)
			for j := jlo; j < jhi; j++ {
				v := row[j]
				if v > big {
					v = big
				}
				if subLast != nil {
					v -= subLast[j]
				}
				best = min(best, v)
			}
			t := 0
			if group >= 0 {
				t = sc.idx[group]
			}
			out[t] = min(out[t], best-ps)
		}
		d := last - 1
		for ; d >= 0; d-- {
			if sc.idx[d]++; sc.idx[d] < sc.hi[d] {
				break
			}
			sc.idx[d] = sc.lo[d]
		}
		if d < 0 {
			return
		}
		for q := d; q < last; q++ {
			sc.ps[q+1] = sc.ps[q] + at(sub[q], sc.idx[q])
			sc.base[q+1] = sc.base[q] + sc.idx[q]*sc.stride[q]
		}
	}
}

func at(v []float64, i int) float64 {
	if v == nil {
		return 0
	}
	return v[i]
}

// value is θ(x) − Σ_p sub[p][x_p] at one entry, θ capped at big.
func value(fn *model.Function, big float64, sub [][]float64, x []int) float64 {
	v := fn.Value(x)
	if v > big {
		v = big
	}
	for p, l := range x {
		v -= at(sub[p], l)
	}
	return v
}
