package trws

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partopt/partopt/model"
)

// TestPatternEdgesSolveAsTheirTablesBitForBit: a grid of Potts verification terms,
// held as pattern edges, runs exactly as the same terms expanded to explicit
// tables: the same messages bit for bit, bound, labeling and certificate. The
// patterns are shared (fewer unit tables than edges) and, after SetTable rewrites
// one edge and SetFunction turns a table edge into a pattern, the others still
// send what their tables would.
func TestPatternEdgesSolveAsTheirTablesBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 31))
	shared := false
	for trial := range 60 {
		ms, mt := differenceGrid(t, rng, model.Potts)
		sp, err := New(ms)
		if err != nil {
			t.Fatal(err)
		}
		st, err := New(mt)
		if err != nil {
			t.Fatal(err)
		}
		patterns := 0
		for e, k := range sp.kind {
			if k == kindPattern {
				patterns++
			} else if k != kindDifference {
				t.Fatalf("trial %d: edge %d of kind %d, want a pattern or a Difference", trial, e, k)
			}
		}
		shared = shared || len(sp.pat.at) < patterns
		opt := DefaultOptions()
		opt.MaxIterations, opt.GapTolerance = 1+rng.IntN(40), 0
		solveBoth := func(stage string) {
			rp, err := sp.Solve(context.Background(), opt)
			if err != nil {
				t.Fatal(err)
			}
			rt, err := st.Solve(context.Background(), opt)
			if err != nil {
				t.Fatal(err)
			}
			if patterns == len(sp.kind) && !slices.Equal(sp.msg, st.msg) {
				t.Fatalf("trial %d, %s: messages differ from the tables'", trial, stage)
			}
			if d := math.Abs(rp.LowerBound - rt.LowerBound); d > 1e-5*math.Max(1, math.Abs(rt.LowerBound)) ||
				patterns == len(sp.kind) && rp.LowerBound != rt.LowerBound {
				t.Fatalf("trial %d, %s: bound %v with patterns, %v with tables", trial, stage, rp.LowerBound, rt.LowerBound)
			}
			vp, err := sp.Certificate(rp.Labeling).Check(ms)
			if err != nil {
				t.Fatal(err)
			}
			vt, err := sp.Certificate(rp.Labeling).Check(mt)
			if err != nil {
				t.Fatal(err)
			}
			if vp.Bound != vt.Bound || vp.Certified != vt.Certified {
				t.Fatalf("trial %d, %s: certificate bound %v on the model, %v on its tables", trial, stage, vp.Bound, vt.Bound)
			}
		}
		solveBoth("built")
		if len(sp.kind) == 0 {
			continue
		}
		// Rewrite one edge of each solver to the same table, another (first to a
		// table, then back) to its Difference term: the shared patterns must not
		// change under either.
		var pair []int // edge → its factor
		for f := range mt.NumFactors() {
			if len(mt.FactorVars(f)) == 2 {
				pair = append(pair, f)
			}
		}
		for _, e := range []int{rng.IntN(len(sp.kind)), rng.IntN(len(sp.kind))} {
			fn := mt.FactorFunction(pair[e])
			if err := sp.SetTable(e, fn.Table); err != nil {
				t.Fatal(err)
			}
			if err := st.SetTable(e, fn.Table); err != nil {
				t.Fatal(err)
			}
		}
		e := rng.IntN(len(sp.kind))
		diff := ms.FactorFunction(pair[e])
		if err := sp.SetTable(e, mt.FactorFunction(pair[e]).Table); err != nil {
			t.Fatal(err)
		}
		if err := sp.SetFunction(e, diff); err != nil {
			t.Fatal(err)
		}
		solveBoth("rewritten")
	}
	if !shared {
		t.Fatal("no grid shared a pattern between edges")
	}
}
