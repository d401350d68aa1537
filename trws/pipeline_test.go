package trws

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
)

// TestStripsSideBySideGiveTheSamePasses: on grids large enough for the passes
// to run in column strips side by side (stereo: truncated linear, 16 labels; a spin
// glass: two labels), 1, 2 and 3 goroutines give the same messages and bounds
// bit for bit, iteration after iteration, and the same messages as the passes
// over the whole node order (whose bound is summed in another order: equal to
// 1e-12), and the same polished certificates; Solve on 1 and 2 goroutines
// gives the same Result.
func TestStripsSideBySideGiveTheSamePasses(t *testing.T) {
	models := map[string]*model.Model{"spin glass 130×130": random.FrustratedGrid(random.New(32), 130, 130)}
	if vector { // the stereo and Potts passes in strips are the assembly's
		models["stereo 160×120"] = truncLinearGridAny(31, 160, 120, 16)
		for _, k := range []int{2, 4, 8} {
			models[fmt.Sprintf("potts K=%d 130×130", k)] = random.PottsGrid(random.New(uint64(40+k)), 130, 130, k)
		}
	}
	if masked {
		models["potts K=3 130×130"] = random.PottsGrid(random.New(43), 130, 130, 3)
	}
	for name, m := range models {
		var solvers []*Solver
		for threads := 1; threads <= 3; threads++ {
			s, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			if s.rowWidth == 0 {
				t.Fatalf("%s: the strips do not run side by side", name)
			}
			s.threads = threads
			solvers = append(solvers, s)
		}
		whole, _ := New(m)
		whole.rowWidth = 0
		for it := range 12 {
			var bounds []float64
			for _, s := range solvers {
				s.forward()
				bounds = append(bounds, s.backward(false))
			}
			whole.forward()
			lw := whole.backward(false)
			for i, s := range solvers[1:] {
				if bounds[i+1] != bounds[0] || !slices.Equal(s.msg, solvers[0].msg) {
					t.Fatalf("%s, iteration %d: %d goroutines: bound %v against %v, messages equal %v", name, it, i+2, bounds[i+1], bounds[0], slices.Equal(s.msg, solvers[0].msg))
				}
			}
			if !slices.Equal(whole.msg, solvers[0].msg) || math.Abs(lw-bounds[0]) > 1e-12*math.Max(1, math.Abs(lw)) {
				t.Fatalf("%s, iteration %d: against the whole order: bound %v and %v, messages equal %v", name, it, bounds[0], lw, slices.Equal(whole.msg, solvers[0].msg))
			}
			// The check (the stereo one runs in the strips too): the same
			// consistency labels and rounded labeling.
			wc, wp := engine{whole}.Check()
			for i, s := range solvers {
				if c, p := (engine{s}).Check(); !slices.Equal(c, wc) || !slices.Equal(p, wp) {
					t.Fatalf("%s, iteration %d: %d goroutines' check differs from the whole order's", name, it, i+1)
				}
			}
		}
		// The float64 polish of a certificate runs in the same strips: the
		// same certificate bit for bit on any number of goroutines.
		x := make([]int, m.NumVars())
		want := whole.Certificate(x)
		for i, s := range solvers {
			if c := s.Certificate(x); !c.Equal(want) {
				t.Fatalf("%s: the certificate polished on %d goroutines differs from the whole order's", name, i+1)
			}
		}
		var results []Result
		for _, threads := range []int{1, 2} {
			s, _ := New(m)
			o := DefaultOptions()
			o.MaxIterations, o.Threads = 60, threads
			r, err := s.Solve(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
		}
		a, b := results[0], results[1]
		if a.LowerBound != b.LowerBound || a.Energy != b.Energy || a.Iterations != b.Iterations || !slices.Equal(a.Labeling, b.Labeling) || !slices.Equal(a.Consistent, b.Consistent) {
			t.Errorf("%s: Solve on 1 and 2 goroutines: %+v against %+v", name, a.Stop, b.Stop)
		}
	}
}

// truncLinearGridAny is a w×h truncated-linear grid of k labels (T 2,
// random weights and unaries), the stereo passes' model.
func truncLinearGridAny(seed uint64, w, h, k int) *model.Model {
	rng := random.New(seed)
	return testModel(w*h, k, func(t []float64) {
		for i := range t {
			t[i] = float64(rng.IntN(20)) + rng.Float64()
		}
	}, gridPairs(w, h), func() model.Function {
		return model.Function{Kind: model.TruncatedLinear, Shape: []int{k, k}, W: 0.5 + 3*rng.Float64(), T: 2}
	})
}

// TestACrewEndsWithItsSolve: the strips' goroutines of a Solve on two cores
// (crew) end when it returns — after its iterations, and when its context
// ends first — and its result is the one goroutine a pass gives.
func TestACrewEndsWithItsSolve(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	m := random.FrustratedGrid(random.New(61), 140, 140)
	before := runtime.NumGoroutine()
	var results []Result
	for _, threads := range []int{2, 1} {
		s, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		if s.rowWidth == 0 {
			t.Fatal("the grid does not run in strips")
		}
		o := DefaultOptions()
		o.MaxIterations, o.Threads = 30, threads
		r, err := s.Solve(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if s.crew != nil {
			t.Fatal("the crew outlives its Solve")
		}
		results = append(results, r)
	}
	if a, b := results[0], results[1]; a.LowerBound != b.LowerBound || !slices.Equal(a.Labeling, b.Labeling) {
		t.Fatalf("two cores: bound %v, one: %v", a.LowerBound, b.LowerBound)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _ := New(m)
	o := DefaultOptions()
	o.Threads = 2
	if _, err := s.Solve(ctx, o); err == nil {
		t.Fatal("a cancelled Solve returned no error")
	}
	for range 200 { // the goroutines return once they see the quit
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d goroutines after the solves, %d before", runtime.NumGoroutine(), before)
}

// TestStripsWriteMemoryOfTheirOwn: on a grid of more than one block a row,
// laid out for two strips or one a block, each strip's incoming messages are
// one stretch of memory, the strips in order, each node's one run within it,
// every entry of the messages some arc's; and the passes, in strips or whole,
// give the same messages edge by edge and the same bounds as the nodes'
// order, which a grid of one block a row keeps.
func TestStripsWriteMemoryOfTheirOwn(t *testing.T) {
	models := map[string]*model.Model{"spin glass 130×130": random.FrustratedGrid(random.New(71), 130, 130)}
	if vector {
		models["stereo 160×120"] = truncLinearGridAny(72, 160, 120, 16)
		models["potts K=4 130×130"] = random.PottsGrid(random.New(73), 130, 130, 4)
	}
	for name, m := range models {
		for _, strips := range []int{2, 3} {
			undo := byStrips(strips)
			s, err := New(m)
			undo()
			if err != nil {
				t.Fatal(err)
			}
			w := s.grid
			blocks := blocksOf(w)
			if w == 0 || blocks < 3 || s.regions != strips {
				t.Fatalf("%s: width %d, %d blocks a row, laid out for %d strips", name, w, blocks, s.regions)
			}
			owner := make([]int, len(s.msg)) // the arc+1 whose message holds each entry
			end := int32(0)                  // where the strips so far end
			for j := range strips {
				b0, b1 := stripBlocks(j, strips, blocks)
				c0, c1 := b0*w/blocks, b1*w/blocks
				lo, hi := int32(len(s.msg)), int32(0)
				for r := range s.n / w {
					for v := r*w + c0; v < r*w+c1; v++ {
						run := s.ain[s.astart[v]]
						for a := s.astart[v]; a < s.astart[v+1]; a++ {
							if s.ain[a] != run {
								t.Fatalf("%s: node %d's messages are not one run", name, v)
							}
							for i := s.ain[a]; i < s.ain[a]+s.labels[v]; i++ {
								if owner[i] != 0 {
									t.Fatalf("%s: entry %d belongs to two arcs", name, i)
								}
								owner[i] = int(a) + 1
							}
							run += s.labels[v]
						}
						lo, hi = min(lo, s.ain[s.astart[v]]), max(hi, run)
					}
				}
				if lo != end {
					t.Fatalf("%s, %d strips: strip %d starts at %d, the strips before it end at %d", name, strips, j, lo, end)
				}
				end = hi
			}
			if int(end) != len(s.msg) || slices.Contains(owner, 0) {
				t.Fatalf("%s: the strips cover %d of %d entries", name, end, len(s.msg))
			}
		}
		for _, threads := range []int{1, 2} {
			undo := byStrips(2)
			a, _ := New(m)
			byStrips(1)
			b, _ := New(m)
			undo()
			if !slices.IsSorted(b.ain) || b.regions != 0 {
				t.Fatalf("%s: laid out for one strip, the nodes are not in order", name)
			}
			a.threads, b.threads = threads, threads
			for it := range 8 {
				a.forward()
				b.forward()
				if la, lb := a.backward(false), b.backward(false); la != lb || !slices.Equal(a.messages(), b.messages()) {
					t.Fatalf("%s, %d goroutines, iteration %d: bound %v against %v in the nodes' order, messages equal %v", name, threads, it, la, lb, slices.Equal(a.messages(), b.messages()))
				}
			}
			// Saved in one layout, loaded into the other, and taken across.
			if !b.LoadMessages(a.SaveMessages()) || !slices.Equal(a.messages(), b.messages()) {
				t.Fatalf("%s: messages saved in one layout load into the other unlike", name)
			}
			undo = byStrips(3)
			c, _ := New(m)
			undo()
			if !c.TakeMessages(a) || !slices.Equal(a.messages(), c.messages()) {
				t.Fatalf("%s: messages taken from another layout differ", name)
			}
		}
	}
	undo := byStrips(2)
	defer undo()
	narrow, _ := New(random.FrustratedGrid(random.New(74), 64, 80))
	if order, strips := narrow.layoutOrder(); narrow.grid != 64 || order != nil || strips != 0 {
		t.Fatalf("a grid 64 wide: width %d, laid out in another order than the nodes'", narrow.grid)
	}
}
