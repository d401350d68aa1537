package persistency

// Label elimination by iterative relaxed inference (IRI): Shekhovtsov, Swoboda,
// Savchynskyy, "Maximum Persistency via Iterative Relaxed Inference with
// Graphical Models" (CVPR 2015, TPAMI 2018).
//
// For a test labeling y and immovable label sets Y_u ∋ y_u, the node-wise map
// p_u(i) = i for i ∈ Y_u, y_u otherwise is improving when E(p(x)) ≤ E(x) for every
// labeling x; then some optimal labeling lies in p's image and every movable label
// is eliminated. The verification problem g_F(x) = f_F(x) − f_F(p(x)) is a model
// on the same factors whose energy is E(x) − E(p(x)); a dual bound ≥ 0 of its LP
// relaxation proves p improving (Λ-improving implies improving). The search is a
// discrete cutting-plane method: start with every label but y_u movable, solve the
// verification problem, and while it is not certified, make immovable the movable
// labels its relaxed solution uses (the locally minimal labels of the dual, and an
// integral violator's labels), then solve again. Each round shrinks the movable
// sets, so the search ends; the last round's dual is the certificate.
//
// What makes the rounds cheap (the reference's speed-ups, in our form):
//   - single-node pruning (prune.go) before every round marks, without a solver,
//     the labels that violate with immovable labels all around;
//   - a round's solver stops at its first check (5 iterations) whose labeling is a
//     violator, and the round marks that violator's labels as they are (moving
//     them first onto immovable labels where g does not rise marked fewer a
//     round and took more rounds: pdb1jmx 20 rounds against 15, 3 labels fewer);
//   - a round without a violator stops once its bound, at its recent rate, could
//     not reach −tolerance in twice its iterations left (trws.Options.HasReach):
//     its dual then marks the locally minimal labels;
//   - a round rewrites, in the last round's TRW-S solver, only the factors around
//     the variables whose immovable sets changed (rewrite.go), messages kept;
//   - a round's TRW-S tries the float64 certificate as soon as its float32 gap is
//     within earlyGap tolerances, instead of waiting for float32 to close it.

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/trws"
)

// EliminateOptions configure Eliminate.
type EliminateOptions struct {
	// Solver solves the verification problems (default Auto: TRW-S for pairwise
	// models, SRMP otherwise; Exhaustive decides them exactly on tiny models).
	Solver Relaxation
	// Candidates, when set (one entry per variable), restricts the elimination to
	// the variables marked true: p is the identity elsewhere, so a window's core
	// inside the model of the window and its surroundings proves labels for the
	// whole model it was cut from.
	Candidates []bool
	// Domains, when set (one list per variable, ascending), are the labels alive
	// before: an earlier proof showed that some optimal labeling takes them. The
	// elimination composes with it: Domains must be given to VerifyElimination
	// too, with their own proof checked separately.
	Domains [][]int
	// Test, when set, is the test labeling y (alive, of finite energy); by default
	// the labeling of a relaxed solve of the model restricted to Domains.
	Test []int
	// RoundIterations caps the solver's iterations per round (default 50): a
	// round's problem differs little from the previous one, whose messages it
	// starts from, and labels are fixed as soon as the dual points at them; a
	// round ends earlier at its first check that finds a violator.
	RoundIterations int
	// MaxStages bounds the stages of the search (default 10; 1: one test labeling).
	// After a stage, the test labeling is improved on what it left undecided;
	// when it gets better, another stage runs with it on the labels still alive.
	MaxStages int
	// Progress, if set, is called after every round.
	Progress func(EliminateProgress)
	// relaxed, when set, is a relaxed solve of the model (Domains the full
	// ones) that the first stage starts from instead of solving: Algorithm 1's
	// first, where it proved nothing (PruneFirst).
	relaxed *Outcome
}

// EliminateProgress reports a round of the search.
type EliminateProgress struct {
	Round   int
	Movable int     // labels still movable (to be eliminated if this round certifies)
	Bound   float64 // the verification problem's lower bound (≥ −tolerance: done)
}

// Elimination is the outcome of Eliminate: the labels alive per variable, proven
// by a certificate on the verification problem of the test labeling.
type Elimination struct {
	// Test is the test labeling y; Energy its energy.
	Test   []int
	Energy float64
	// Alive[v] are v's labels that some optimal labeling may take, ascending; a
	// variable with one alive label is persistent (Persistent[v], else −1).
	Alive      [][]int
	Persistent []int
	// Prior are the domains the elimination started from (nil: every label).
	Prior [][]int
	// LowerBound is the initial relaxed solve's lower bound on min E (−Inf when
	// the test labeling was given).
	LowerBound float64
	// Certificate proves, for Test, that the verification problem of Alive (built
	// by BuildVerification) has a relaxation bound ≥ −Tolerance(Energy); nil when
	// nothing is eliminated. Its labeling is Test renumbered over the labels
	// alive before the stage.
	Certificate *Certificate
	// Earlier are the stages before the last (whose test labeling, alive labels
	// and certificate are Test, Alive and Certificate), in order: each proves its
	// Alive from the previous stage's (the first from Prior).
	Earlier    []Stage
	Eliminated int // labels eliminated here (Prior's dead labels not counted)
	// Pruned are the variables PruneAfter's Algorithm 1 proved, which the
	// search had left undecided (result files do not store it).
	Pruned           int
	Rounds           int
	SolverIterations int
	Seconds          float64
	SolverSeconds    float64
	// first is the first stage's relaxed solve of m with every label, when the
	// search made it, between eliminate and PruneAfter's Algorithm 1 (which
	// may start from it); nil in what they return.
	first *Outcome
}

// Stage is one certified step of an elimination: the labels Alive after it,
// proven by Certificate for the test labeling Test (see Elimination.Earlier).
type Stage struct {
	Test        []int
	Alive       [][]int
	Certificate *Certificate
}

// EliminationTolerance is the relative tolerance of an elimination certificate:
// the verification problem's bound must be ≥ −EliminationTolerance·max(1, |E(y)|),
// so p is improving up to that much energy — the duality-gap tolerance of every
// certificate of this package (trws.GapTolerance).
const EliminationTolerance = trws.GapTolerance

// tolerance is the bound an elimination certificate must reach for energy e.
func tolerance(e float64) float64 { return EliminationTolerance * math.Max(1, math.Abs(e)) }

// firstIterations caps the TRW-S iterations of the relaxed solve that starts a
// search, unless the solver sets its own cap (see firstCapped).
const firstIterations = 500

// earlyGap·tolerance is the gap at which a round's TRW-S stops to try its
// certificate: the float64 polish closes gaps of float32 rounding, so waiting for
// the strict gap (a float32 bound within tolerance) costs iterations for nothing.
const earlyGap = 10

// nearlyTight is the relative gap under which the first relaxed solve goes on
// past its loose stall rule.
const nearlyTight = 1e-3

// restartRounds is the rounds after which a search from the relaxation's labeling
// tries a better one (Eliminate's guess).
const restartRounds = 20

// hopeless is how far below 0 a solver's own bound may be for a certificate to be
// tried: float32 sums are off by ~1e-7 relative, so 1e-5 relative is safely out
// of reach.
func hopeless(e float64) float64 { return 1e-5 * math.Max(1, math.Abs(e)) }

// domains are, per variable, the alive labels and among them the immovable ones
// (p's fixed points). The verification problems are built over the alive labels
// only: a label is named by its position c in labels[v], so that labels an earlier
// proof eliminated cost the solver nothing.
type domains struct {
	labels [][]int  // alive labels (the model's), ascending
	fixed  [][]bool // by position: immovable
	y      []int    // the test label's position
	// forbidding are the factors whose function takes +Inf (closeForbidden's),
	// found once: nil until then.
	forbidding []int
}

func (d *domains) movable(v, c int) bool { return !d.fixed[v][c] }

// hasMovable says whether v has a movable label.
func (d *domains) hasMovable(v int) bool { return slices.Contains(d.fixed[v], false) }

// image is p's image of position c at v.
func (d *domains) image(v, c int) int {
	if d.fixed[v][c] {
		return c
	}
	return d.y[v]
}

// full says whether every label of every variable is alive.
func (d *domains) full(m *model.Model) bool {
	for v, ls := range d.labels {
		if len(ls) != m.NumLabels(v) {
			return false
		}
	}
	return true
}

// decided says whether every variable has one label alive.
func (d *domains) decided() bool {
	for _, ls := range d.labels {
		if len(ls) != 1 {
			return false
		}
	}
	return true
}

// newDomains returns the alive labels of prior (nil: every label), none fixed yet.
func newDomains(m *model.Model, prior [][]int) (*domains, error) {
	n := m.NumVars()
	d := &domains{labels: make([][]int, n), fixed: make([][]bool, n), y: make([]int, n)}
	var every [256][]int // every label of k, one list shared by the variables of k < 256 labels (never written)
	for v := range n {
		k := m.NumLabels(v)
		if prior == nil {
			if k >= len(every) {
				d.labels[v] = allLabels(k)
			} else {
				if every[k] == nil {
					every[k] = allLabels(k)
				}
				d.labels[v] = every[k]
			}
		} else {
			for i, l := range prior[v] {
				if l < 0 || l >= k || (i > 0 && l <= prior[v][i-1]) {
					return nil, fmt.Errorf("persistency: domain of variable %d: %v is not an ascending list of labels of %d", v, prior[v], k)
				}
			}
			if len(prior[v]) == 0 {
				return nil, fmt.Errorf("persistency: domain of variable %d is empty", v)
			}
			d.labels[v] = prior[v]
		}
	}
	size := 0
	for _, ls := range d.labels {
		size += len(ls)
	}
	fixed := make([]bool, size) // by variable, one after the other
	for v, ls := range d.labels {
		d.fixed[v], fixed = fixed[:len(ls):len(ls)], fixed[len(ls):]
	}
	return d, nil
}

// setTest makes y (the model's labels) the test labeling, immovable, with every
// alive label fixed outside the candidates (nil: everywhere candidates).
func (d *domains) setTest(y []int, candidates []bool) error {
	for v, ls := range d.labels {
		c, ok := slices.BinarySearch(ls, y[v])
		if !ok {
			return fmt.Errorf("persistency: the test labeling gives variable %d label %d, which is not alive", v, y[v])
		}
		d.y[v] = c
		for i := range d.fixed[v] {
			d.fixed[v][i] = candidates != nil && !candidates[v]
		}
		d.fixed[v][c] = true
	}
	return nil
}

// labelMap is v's alive labels and p's images of them (the model's labels), the
// argument map of v's verification terms. maps caches them by variable (nil: none
// cached); a variable's entry is dropped when its immovable labels change.
func (d *domains) labelMap(maps []*model.LabelMap, v int) *model.LabelMap {
	if maps != nil && maps[v] != nil {
		return maps[v]
	}
	ls := d.labels[v]
	mp := &model.LabelMap{Labels: ls, Images: make([]int, len(ls))}
	for c := range ls {
		mp.Images[c] = ls[d.image(v, c)]
	}
	if maps != nil {
		maps[v] = mp
	}
	return mp
}

// parametric says whether fn is a parametric pairwise kind, whose verification terms
// may be model.Difference functions.
func parametric(fn *model.Function) bool {
	return fn.Kind == model.Potts || fn.Kind == model.TruncatedLinear || fn.Kind == model.TruncatedQuadratic
}

// structured says whether the verification term of a factor with the parametric
// function fn, whose variables have ka and kb alive labels below r, is a
// model.Difference function rather than a table. A Potts term always is: TRW-S
// holds the small ones as a weight times a shared unit table (trws pattern edges),
// which sends the table's messages without a table per edge to build or stream
// from memory. A truncated one is when the table's messages cost more than the
// Difference kernel's distance transforms (trws.TablesCheaper).
func structured(fn *model.Function, ka, kb, r int) bool {
	return forceStructured || fn.Kind == model.Potts || !trws.TablesCheaper(ka, kb, r)
}

// forceStructured makes every parametric verification term a Difference function
// (the tests' small models check that path too).
var forceStructured bool

// VerificationSize is the number of entries of label elimination's verification
// problem on m with every label alive: Σ over its factors of the product of their
// label counts, or for the Potts factors and the truncated ones that hold label
// maps instead of a table (structured), the sum.
func VerificationSize(m *model.Model) int64 {
	var n int64
	for f := range m.NumFactors() {
		vars := m.FactorVars(f)
		size, sum, r := int64(1), int64(0), 0
		for _, v := range vars {
			k := m.NumLabels(int(v))
			size, sum, r = size*int64(k), sum+int64(k), max(r, k)
		}
		if fn := m.FactorFunction(f); len(vars) == 2 && parametric(fn) && structured(fn, m.NumLabels(int(vars[0])), m.NumLabels(int(vars[1])), r) {
			size = sum
		}
		n += size
	}
	return n
}

// differenceFactor says whether the verification term of factor f of m is a
// model.Difference function on the domains d.
func differenceFactor(m *model.Model, d *domains, f int) bool {
	vars, fn := m.FactorVars(f), m.FactorFunction(f)
	if len(vars) != 2 || !parametric(fn) {
		return false
	}
	a, b := d.labels[vars[0]], d.labels[vars[1]]
	return structured(fn, len(a), len(b), 1+max(a[len(a)-1], b[len(b)-1]))
}

// differenceTerm is g of the pairwise factor with the parametric function fn on
// (u, v) as a model.Difference term: solvers send its messages by distance
// transforms instead of a table, and it takes no memory per label pair.
func differenceTerm(fn *model.Function, d *domains, maps []*model.LabelMap, u, v int) *model.Function {
	x, y := d.labelMap(maps, u), d.labelMap(maps, v)
	return &model.Function{Kind: model.Difference, Base: fn.Kind, W: fn.W, T: fn.T,
		Shape: []int{len(x.Labels), len(y.Labels)}, Args: [2]*model.LabelMap{x, y}}
}

// original maps x (positions) to the model's labels.
func (d *domains) original(x []int) []int {
	out := make([]int, len(x))
	for v, c := range x {
		out[v] = d.labels[v][c]
	}
	return out
}

// closeForbidden makes immovable every movable label that p would move from an
// allowed (finite) entry of a factor to a forbidden one: such a p maps a feasible
// labeling to an infeasible one and cannot be improving. It repeats until no such
// entry is left (fixing labels changes p).
func closeForbidden(m *model.Model, d *domains) {
	if d.forbidding == nil {
		inf := make([]bool, m.NumFunctions())
		for i := range inf {
			inf[i] = hasInf(m.Func(i))
		}
		d.forbidding = []int{}
		for f := range m.NumFactors() {
			if inf[m.FactorFunc(f)] {
				d.forbidding = append(d.forbidding, f)
			}
		}
	}
	for changed := len(d.forbidding) > 0; changed; {
		changed = false
		for _, f := range d.forbidding {
			vars := m.FactorVars(f)
			if !slices.ContainsFunc(vars, func(v int32) bool { return d.hasMovable(int(v)) }) {
				continue
			}
			fn := m.FactorFunction(f)
			forEachAlive(d, vars, func(c, x, px []int) {
				if math.IsInf(fn.Value(x), 1) || !math.IsInf(fn.Value(px), 1) {
					return
				}
				for p, v := range vars {
					if d.movable(int(v), c[p]) {
						d.fixed[v][c[p]] = true
						changed = true
					}
				}
			})
		}
	}
}

// hasInf says whether a function takes +Inf somewhere.
func hasInf(fn *model.Function) bool {
	if fn.Kind != model.Explicit {
		return math.IsInf(fn.W, 1)
	}
	return slices.Contains(fn.Table, math.Inf(1))
}

// forEachAlive calls visit with every labeling of vars over alive labels (last
// variable fastest): c its positions, x its labels and px the labels of p(x). The
// slices are reused.
func forEachAlive(d *domains, vars []int32, visit func(c, x, px []int)) {
	c, x, px := make([]int, len(vars)), make([]int, len(vars)), make([]int, len(vars))
	var rec func(p int)
	rec = func(p int) {
		if p == len(vars) {
			visit(c, x, px)
			return
		}
		v := int(vars[p])
		for i, l := range d.labels[v] {
			c[p], x[p], px[p] = i, l, d.labels[v][d.image(v, i)]
			rec(p + 1)
		}
	}
	rec(0)
}

// BuildVerification builds the verification problem of the map p of test labeling
// y with immovable labels fixed (per variable, ascending) among the alive labels
// prior (nil: every label): over m's variables and factors, in their order, with
// variable v's labels the alive ones renumbered 0, 1, … in ascending order, the
// tables g_F(x) = f_F(x) − f_F(p(x)), +Inf where f_F(x) is +Inf (a factor on which
// p is the identity gets a zero table). Its energy is E(x) − E(p(x)) on alive
// feasible labelings, 0 at y. It also returns y renumbered, the labeling a
// certificate on the problem is made for. The construction is deterministic, so
// VerifyElimination rebuilds the model a certificate was made on.
func BuildVerification(m *model.Model, y []int, fixed, prior [][]int) (*model.Model, []int, error) {
	d, err := verificationDomains(m, y, fixed, prior)
	if err != nil {
		return nil, nil, err
	}
	g, err := build(m, d, checking)
	return g, d.y, err
}

// verificationDomains are the domains of BuildVerification's problem, its
// arguments checked: prior's labels alive, y's and fixed's among them immovable.
func verificationDomains(m *model.Model, y []int, fixed, prior [][]int) (*domains, error) {
	if len(y) != m.NumVars() || len(fixed) != m.NumVars() || (prior != nil && len(prior) != m.NumVars()) {
		return nil, errors.New("persistency: verification problem: one test label, immovable set and domain per variable needed")
	}
	d, err := newDomains(m, prior)
	if err != nil {
		return nil, err
	}
	if err := d.setTest(y, nil); err != nil {
		return nil, err
	}
	for v, ls := range fixed {
		clear(d.fixed[v])
		for _, l := range ls {
			c, ok := slices.BinarySearch(d.labels[v], l)
			if !ok {
				return nil, fmt.Errorf("persistency: immovable label %d of variable %d is not alive", l, v)
			}
			d.fixed[v][c] = true
		}
		if !d.fixed[v][d.y[v]] {
			return nil, fmt.Errorf("persistency: the test label %d of variable %d is not immovable", y[v], v)
		}
	}
	return d, nil
}

// What build builds.
type buildMode uint8

const (
	// restrictedModel: m itself over the alive labels.
	restrictedModel buildMode = iota
	// solving: the verification problem, each parametric pairwise term a table
	// or a Difference function by what its messages cost (structured).
	solving
	// checking: the verification problem with every parametric pairwise term a
	// Difference function, which takes no table to build: for a certificate's
	// check, which reads each entry once, whatever the representation (a
	// Difference entry is computed as the table's would be, so the bound is the
	// same).
	checking
)

// build builds m over the alive labels of d: the verification problem of d's
// map, or m itself restricted to the alive labels (mode).
func build(m *model.Model, d *domains, mode buildMode) (*model.Model, error) {
	return buildReusing(m, d, mode, nil)
}

// buildReusing is build taking the tables of the factors whose variables' domains
// and maps are unchanged from the last model built with the same cache (nil:
// none kept).
func buildReusing(m *model.Model, d *domains, mode buildMode, cache *tableCache) (*model.Model, error) {
	verification := mode != restrictedModel
	if cache != nil {
		cache.update(d)
	}
	labels := make([]int, m.NumVars())
	for v := range labels {
		labels[v] = len(d.labels[v])
	}
	b := model.NewBuilder(labels)
	if !verification {
		if err := b.AddConstant(m.Offset()); err != nil {
			return nil, err
		}
	}
	args := make([]int, 0, 8)
	shape, key := make([]int, 0, 8), make([]byte, 0, 32)
	zeros := map[string]int{} // one zero table per shape
	kept := map[int]int{}     // m's functions on factors whose labels are all alive
	maps := make([]*model.LabelMap, m.NumVars())
	for f := 0; f < m.NumFactors(); f++ {
		vars := m.FactorVars(f)
		args, shape = args[:0], shape[:0]
		size, whole := 1, true
		for _, v := range vars {
			args = append(args, int(v))
			shape = append(shape, labels[v])
			size *= labels[v]
			whole = whole && labels[v] == m.NumLabels(int(v))
		}
		var id int
		var err error
		switch {
		case verification && !slices.ContainsFunc(vars, func(v int32) bool { return d.hasMovable(int(v)) }):
			// p is the identity on the factor: g ≡ 0. Every factor is kept, so that
			// the rounds' problems share one graph (warm starts).
			key = key[:0]
			for _, k := range shape {
				key = binary.AppendUvarint(key, uint64(k))
			}
			var ok bool
			if id, ok = zeros[string(key)]; !ok { // string(key) here allocates nothing
				if id, err = b.AddFunction(zero(shape)); err == nil {
					zeros[string(key)] = id
				}
			}
		case !verification && whole:
			id, err = addOnce(b, kept, m.FactorFunc(f), func() model.Function { return *m.FactorFunction(f) })
		case mode == checking && len(vars) == 2 && parametric(m.FactorFunction(f)), mode == solving && differenceFactor(m, d, f):
			id, err = b.AddFunction(*differenceTerm(m.FactorFunction(f), d, maps, int(vars[0]), int(vars[1])))
		default:
			t := cache.table(f)
			if t == nil {
				if t, err = compactTable(m, f, d, size, verification); err == nil && cache != nil {
					cache.tables[f] = t
				}
			}
			if err == nil {
				id, err = b.AddOwnedFunction(model.Function{Kind: model.Explicit, Shape: slices.Clone(shape), Table: t})
			}
		}
		if err != nil {
			return nil, err
		}
		if err := b.AddFactor(id, args...); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// tableCache keeps the explicit tables of a search's last checking model, and
// those of the verification problems built or written into the solver since (an
// explicit factor's table is the same in both): a round changes the map only
// at the variables that gained immovable labels, so a certificate's check
// builds only the tables around them that no one made yet (pdb1qks: 11% of its
// time was these tables). The tables are the models' and the solver's (owned,
// never changed), shared by the successive checking models.
type tableCache struct {
	m      *model.Model
	tables [][]float64 // factor → its table on the recorded domains; nil: none
	labels [][]int     // d.labels, d.fixed and d.y when those tables were made
	fixed  [][]bool
	y      []int
}

func newTableCache(m *model.Model) *tableCache {
	n := m.NumVars()
	return &tableCache{m: m, tables: make([][]float64, m.NumFactors()), labels: make([][]int, n), fixed: make([][]bool, n), y: make([]int, n)}
}

// update drops the tables of the factors of the variables whose alive labels or
// map changed since the last call (all of them at the first) and records d as
// it is now.
func (c *tableCache) update(d *domains) {
	for v := range d.labels {
		if c.labels[v] != nil && slices.Equal(c.labels[v], d.labels[v]) && slices.Equal(c.fixed[v], d.fixed[v]) && c.y[v] == d.y[v] {
			continue
		}
		for _, f := range c.m.VarFactors(v) {
			c.tables[f] = nil
		}
		c.labels[v] = append(c.labels[v][:0], d.labels[v]...)
		c.fixed[v] = append(c.fixed[v][:0], d.fixed[v]...)
		c.y[v] = d.y[v]
	}
}

// table is factor f's kept table, nil when there is none.
func (c *tableCache) table(f int) []float64 {
	if c == nil {
		return nil
	}
	return c.tables[f]
}

// zero is the function 0 of a shape: Potts of weight 0 on two arguments (O(K)
// messages instead of a table's O(K²)), an explicit table otherwise.
func zero(shape []int) model.Function {
	if len(shape) == 2 {
		return model.Function{Kind: model.Potts, Shape: shape}
	}
	size := 1
	for _, k := range shape {
		size *= k
	}
	return model.Function{Kind: model.Explicit, Shape: shape, Table: make([]float64, size)}
}

// addOnce adds the function fn makes under key, or returns the id it got before.
func addOnce[K comparable](b *model.Builder, ids map[K]int, key K, fn func() model.Function) (int, error) {
	if id, ok := ids[key]; ok {
		return id, nil
	}
	id, err := b.AddFunction(fn())
	if err == nil {
		ids[key] = id
	}
	return id, err
}

// compactTable is factor f's table over the alive labels: f_F(x), or for the
// verification problem g_F(x) = f_F(x) − f_F(p(x)), +Inf where f_F(x) is +Inf.
func compactTable(m *model.Model, f int, d *domains, size int, verification bool) ([]float64, error) {
	vars, fn := m.FactorVars(f), m.FactorFunction(f)
	switch {
	case len(vars) == 2:
		return pairTable(fn, d, int(vars[0]), int(vars[1]), verification, f)
	case len(vars) == 1 && fn.Kind == model.Explicit: // every variable's, without the enumeration
		v, labels := int(vars[0]), d.labels[vars[0]]
		t := make([]float64, len(labels))
		for c, l := range labels {
			if t[c] = fn.Table[l]; verification && !math.IsInf(t[c], 1) {
				w := fn.Table[labels[d.image(v, c)]]
				if math.IsInf(w, 1) {
					return nil, movedToForbidden(f)
				}
				t[c] -= w
			}
		}
		return t, nil
	}
	t := make([]float64, 0, size)
	var bad error
	forEachAlive(d, vars, func(_, x, px []int) {
		e := fn.Value(x)
		if !verification || math.IsInf(e, 1) {
			t = append(t, e)
			return
		}
		w := fn.Value(px)
		if math.IsInf(w, 1) && bad == nil {
			bad = movedToForbidden(f)
		}
		t = append(t, e-w)
	})
	return t, bad
}

// movedToForbidden is the error of a map that sends a finite entry of factor f to
// a forbidden one (closeForbidden keeps such maps from being tested).
func movedToForbidden(f int) error {
	return fmt.Errorf("persistency: the map moves factor %d from a finite entry to a forbidden one", f)
}

// pairTable is compactTable of a pairwise factor f on (u, v), the rounds' bulk,
// without the general enumeration.
func pairTable(fn *model.Function, d *domains, u, v int, verification bool, f int) ([]float64, error) {
	lu, lv := d.labels[u], d.labels[v]
	pv := make([]int, len(lv)) // p's image of v's labels
	for b := range lv {
		pv[b] = lv[d.image(v, b)]
	}
	t := make([]float64, len(lu)*len(lv))
	var bufI, bufP []float64 // fn.Row's scratch
	for a, i := range lu {
		row, out := fn.Row(i, &bufI), t[a*len(lv):(a+1)*len(lv)]
		if !verification {
			for b, j := range lv {
				out[b] = row[j]
			}
			continue
		}
		prow := fn.Row(lu[d.image(u, a)], &bufP)
		for b, j := range lv {
			e, w := row[j], prow[pv[b]]
			switch {
			case e == math.Inf(1):
				out[b] = e
			case w == math.Inf(1):
				return nil, movedToForbidden(f)
			default:
				out[b] = e - w
			}
		}
	}
	return t, nil
}

// marginals are the solvers whose reparametrised unaries a search reads.
type marginals interface {
	Marginal(v int, d []float64) []float64
}

// Eliminate runs the IRI search on m and returns the labels it proves eliminable,
// with the certificate of every verification problem checked: no certificate, no
// eliminated label. When the search leaves variables undecided, the test labeling
// is improved on what is left (refine) and, if it gets better, the search runs
// again on the labels still alive with the better labeling — a chain of stages,
// each an improving map on the domains the previous one left (their composition
// is improving), each with its own certificate.
func Eliminate(ctx context.Context, m *model.Model, opt EliminateOptions) (*Elimination, error) {
	res, err := eliminate(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	res.first = nil
	return res, nil
}

// eliminate is Eliminate, its first relaxed solve kept in first where it
// solved m with every label (PruneAfter's Algorithm 1 may start from it).
func eliminate(ctx context.Context, m *model.Model, opt EliminateOptions) (*Elimination, error) {
	start := time.Now()
	res, err := search(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	stages := opt.MaxStages
	if stages == 0 {
		stages = 10
	}
	// A stage that eliminated nothing ends the chain: its relaxation found no
	// improving map around y, and a better y rarely changes that (2,300 random
	// models: 2 labels more on 2 of them; none on the 36 shared models) while
	// minimising for it cost the nothing-provable models up to half their time.
	for len(res.Earlier)+1 < stages && res.Eliminated > 0 {
		y := refine(m, res.Alive, res.Test, opt.Candidates)
		if y == nil || !improves(m.Energy(y), res.Energy) {
			break
		}
		next := opt
		next.Domains, next.Test = res.Alive, y
		more, err := search(ctx, m, next)
		if err != nil {
			return nil, err
		}
		res = chain(res, more)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// search is one stage of Eliminate: the IRI search for one test labeling.
func search(ctx context.Context, m *model.Model, opt EliminateOptions) (*Elimination, error) {
	start := time.Now()
	solver := opt.Solver
	if solver == nil {
		solver = Auto{}
	}
	n := m.NumVars()
	if opt.Candidates != nil && len(opt.Candidates) != n {
		return nil, errors.New("persistency: EliminateOptions.Candidates needs one entry per variable")
	}
	if opt.Domains != nil && len(opt.Domains) != n {
		return nil, errors.New("persistency: EliminateOptions.Domains needs one list per variable")
	}
	d, err := newDomains(m, opt.Domains)
	if err != nil {
		return nil, err
	}
	res := &Elimination{Prior: opt.Domains, LowerBound: math.Inf(-1)}
	timed := &timedSolver{iterations: &res.SolverIterations} // r: set before each solve
	solve := func(p *model.Model, from *Warm) (*Outcome, error) { return timed.solve(ctx, p, from) }
	defer func() { res.Seconds, res.SolverSeconds = time.Since(start).Seconds(), timed.elapsed.Seconds() }()

	// The relaxed solve that gives y also starts the first round: its messages are
	// a dual of the first verification problem, whose factors are f's shifted by
	// constants (everything maps to y), on the same graph and labels.
	var prev, relaxed *Outcome
	var relaxedOn *model.Model // the model prev solved
	y := opt.Test
	decided := y == nil && d.decided()
	if decided {
		// One labeling is left (Algorithm 1 proved every variable first): it is
		// the test labeling, its energy the relaxation's bound (below), and no
		// label is movable; a relaxed solve would only find it again.
		y = d.original(make([]int, n))
	}
	if y == nil {
		restricted := m
		if !d.full(m) {
			if restricted, err = build(m, d, restrictedModel); err != nil {
				return nil, err
			}
		}
		out := opt.relaxed
		if out == nil || !d.full(m) {
			loose, ok := firstStalled(solver, firstIterations, 10, 1e-5)
			var strict func(int) Relaxation
			if ok {
				strict = func(done int) Relaxation {
					if done >= firstIterations {
						return nil
					}
					return firstCapped(solver, firstIterations-done)
				}
			}
			if out, err = stalledSolve(ctx, timed, restricted, loose, strict); err != nil {
				return nil, err
			}
			if d.full(m) {
				res.first = out
			}
		}
		y, res.LowerBound, prev = d.original(out.Labeling), out.LowerBound, out
		relaxed, relaxedOn = out, restricted
		icm(m, d, y, opt.Candidates)
	}
	if err := m.CheckLabeling(y); err != nil {
		return nil, fmt.Errorf("persistency: test labeling: %w", err)
	}
	res.Test, res.Energy = append([]int(nil), y...), m.Energy(y)
	if decided {
		res.LowerBound = res.Energy
	}
	if err := d.setTest(y, opt.Candidates); err != nil {
		return nil, err
	}
	if math.IsInf(res.Energy, 1) {
		// Nothing maps to an infeasible labeling: keep every alive label.
		for v := range d.fixed {
			for c := range d.fixed[v] {
				d.fixed[v][c] = true
			}
		}
		return finish(res, d, nil), nil
	}
	if countMovable(d) == 0 {
		// Nothing can move: the first round would end here, with nothing
		// to close or prune, before anything it builds is used.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res.Rounds = 1
		return finish(res, d, nil), nil
	}
	tol := tolerance(res.Energy)
	rounds := opt.RoundIterations
	if rounds == 0 {
		rounds = 50
	}
	roundSolver := capped(solver, rounds)
	lastBound, nearest := math.Inf(-1), 0
	prune := newPruner(m, d)
	checks := newTableCache(m)
	tables := newRewriter(m, d, checks)
	report := func(round, movable int, bound float64) {
		if opt.Progress != nil {
			opt.Progress(EliminateProgress{Round: round, Movable: movable, Bound: bound})
		}
	}
	for round, restart := 1, 1; ; round, restart = round+1, restart+1 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res.Rounds = round
		// A search that drags on may have a poor test labeling: once, the
		// relaxation's labeling is improved where its duals point (guess), and
		// the search starts again with the better one.
		if relaxed != nil && restart > restartRounds {
			if better := guess(m, d, relaxed, y, opt.Candidates); better != nil {
				y, restart = better, 1
				res.Test, res.Energy = append([]int(nil), y...), m.Energy(y)
				if err := d.setTest(y, opt.Candidates); err != nil {
					return nil, err
				}
				tol, lastBound, nearest = tolerance(res.Energy), math.Inf(-1), 0
				tables.invalidate()
				prune.reset()
			}
			relaxed = nil
		}
		// Again each round, until neither marks: fixing labels changes p.
		for closeForbidden(m, d); prune.run(tol) > 0; closeForbidden(m, d) {
		}
		movable := countMovable(d)
		if movable == 0 {
			return finish(res, d, nil), nil
		}
		timed.r = targeted(roundSolver, -tol, earlyGap*tol)
		// g is built when a round needs it as a model: a round on the solver of
		// the last one rewrites in it only the factors whose map changed.
		var g *model.Model
		var from *Warm
		if tables.offered {
			// The relaxed solve's solver becomes the rounds' (takeOver);
			// what else reads that solve keeps it as it is.
			if res.first == prev {
				res.first = snapshot(prev, relaxedOn)
			}
			if relaxed == prev {
				relaxed = storeMarginals(prev, d)
			}
			tables.takeOver(prev, res.Test)
		}
		if rewritten, err := tables.rewrite(prev, timed.r); err != nil {
			return nil, err
		} else if rewritten {
			from = &Warm{Prev: prev, InPlace: true}
		} else {
			// When every label but y's is movable, g is f shifted by constants:
			// when the relaxed solve already proved y optimal for the relaxation,
			// its dual proves the first map without another solve. (Not in a
			// window: p is the identity on its outer variables, so g asks y to be
			// optimal for every labeling of them.) g is the relaxed solve's model
			// with every factor shifted by its value at y, so its bound is that
			// model's minus E(y): checked there, with no table to build (a
			// 21-label segmentation's time −20%). Verify checks the certificate on
			// g itself.
			if round == 1 && prev != nil && relaxedOn != nil && allToY(d) {
				if prev.LowerBound >= res.Energy-hopeless(res.Energy) {
					if cert, err := prev.Certify(d.y); err == nil {
						if v, err := cert.Check(relaxedOn); err == nil && v.Bound-relaxedOn.Energy(d.y) >= -tol {
							report(round, movable, v.Bound-relaxedOn.Energy(d.y))
							return finish(res, d, cert), nil
						}
					}
				}
				// Otherwise the relaxed solve's dual, stalled or capped, is g's
				// first dual too: the round marks the labels it finds locally
				// minimal, and the next round's solve starts from it.
				if out := asFirstRound(prev, relaxedOn, d.y, res.Energy); out != nil {
					report(round, movable, out.LowerBound)
					if inPlace(roundSolver, prev) && small(prev) {
						tables.offer(d) // the next round that solves goes on in this solve's solver
					}
					fixViolators(m, d, out, tol, 0)
					lastBound = out.LowerBound
					continue
				}
			}
			if g, err = buildReusing(m, d, solving, checks); err != nil {
				return nil, err
			}
			tables.built(d)
		}
		if prev != nil && from == nil {
			from = &Warm{Prev: prev}
		}
		out, err := solve(g, from)
		if err != nil {
			return nil, err
		}
		prev = out
		bound := out.LowerBound
		// The solver's bound is an estimate (TRW-S sums in float32); a certificate
		// costs a few iterations, so it is only made when it may succeed. TRW-S
		// stops early at a gap of earlyGap·tol; when the certificate does not
		// close it, the round marks labels. (Going on in place to the strict gap
		// and certifying again closed it on none of the 36 shared models nor a
		// 512² stereo model by windows: near a bound of 0 the float32 bound is
		// noise, +1.1·10⁻⁵ where the float64 one is −2.7·10⁻⁶ on pdb1qks, and the
		// second attempt cost pdb1qks 11% of its time.)
		if bound >= -hopeless(res.Energy) {
			if g == nil {
				if g, err = buildReusing(m, d, checking, checks); err != nil {
					return nil, err
				}
			}
			cert, err := out.Certify(d.y)
			if err != nil {
				return nil, err
			}
			v, err := cert.Check(g)
			if err != nil {
				return nil, err
			}
			if bound = v.Bound; bound >= -tol {
				report(round, movable, bound)
				return finish(res, d, cert), nil
			}
		}
		report(round, movable, bound)
		// When nothing was fixed and the bound no longer rises, the dual is as
		// good as it gets: the next round fixes the movable labels nearest to
		// their variable's minimum — 1, then twice as many each stuck round — so
		// that the search always ends, in few rounds.
		fixed := fixViolators(m, d, out, tol, nearest)
		switch {
		case fixed > 0 && nearest == 0, bound > lastBound+math.Max(tol, 1e-3*math.Abs(lastBound)):
			nearest = 0
		default:
			nearest = max(1, 2*nearest)
		}
		lastBound = bound
	}
}

// asFirstRound is the relaxed solve out, of the model on, as an outcome of the
// first round's verification problem g when p maps everything to y (energy
// e(y)): g is on's factors each shifted by its value at y, so the same messages
// are a dual of g whose bound and energies are on's minus e, and whose
// reparametrised unaries are on's minus the unary factors' values at y (a
// pairwise factor's constant leaves its normalised messages as they are). nil
// when out has no such dual.
func asFirstRound(out *Outcome, on *model.Model, y []int, e float64) *Outcome {
	mg, ok := out.state.(marginals)
	if !ok {
		return nil
	}
	by := make([]float64, on.NumVars())
	for f := range on.NumFactors() {
		if vars := on.FactorVars(f); len(vars) == 1 {
			by[vars[0]] += on.FactorValue(f, y)
		}
	}
	first := *out
	first.Energy, first.LowerBound = out.Energy-e, out.LowerBound-e
	first.state = shiftedMarginals{mg, by}
	return &first
}

// storedMarginals are an outcome's reparametrised unaries, kept by variable.
type storedMarginals [][]float64

func (s storedMarginals) Marginal(v int, d []float64) []float64 { return append(d[:0], s[v]...) }

// storeMarginals is out with its reparametrised unaries stored (d's alive
// labels a variable), for reading after its solver has gone on (takeOver).
func storeMarginals(out *Outcome, d *domains) *Outcome {
	mg, ok := out.state.(marginals)
	if !ok {
		return nil
	}
	rows := make(storedMarginals, len(d.labels))
	for v, ls := range d.labels {
		rows[v] = mg.Marginal(v, make([]float64, len(ls)))
	}
	cp := *out
	cp.state = rows
	return &cp
}

// shiftedMarginals are reparametrised unaries each lowered by a constant of its
// variable.
type shiftedMarginals struct {
	marginals
	by []float64
}

func (s shiftedMarginals) Marginal(v int, d []float64) []float64 {
	d = s.marginals.Marginal(v, d)
	for l := range d {
		d[l] -= s.by[v]
	}
	return d
}

// allToY says whether p maps every label to the test label: only y's are
// immovable.
func allToY(d *domains) bool {
	for v, fixed := range d.fixed {
		for c, f := range fixed {
			if f != (c == d.y[v]) {
				return false
			}
		}
	}
	return true
}

// fixViolators makes immovable the movable labels that the relaxed solution of the
// verification problem g uses, and returns how many: those of its labeling when it
// is a violator (g < 0), otherwise every movable label within
// trws.ConsistencyTolerance (relative) of its variable's minimum of the
// reparametrised unary (the dual's locally minimal labels). When none is, it fixes
// the nearest movable labels nearest to their variable's minimum, so that a search
// whose dual no longer improves still advances. A solver without such a dual (Exhaustive) is exact:
// its labeling is then a violator, or its consistency labels are used.
func fixViolators(m *model.Model, d *domains, out *Outcome, tol float64, nearest int) int {
	fixed := 0
	fix := func(v, l int) {
		if d.movable(v, l) {
			d.fixed[v][l] = true
			fixed++
		}
	}
	if x := out.Labeling; x != nil && out.Energy < -tol {
		for v, l := range x {
			fix(v, l)
		}
		if fixed > 0 {
			return fixed
		}
	}
	mg, ok := out.state.(marginals)
	if !ok {
		for v, l := range out.Consistent {
			if l >= 0 {
				fix(v, l)
			}
		}
		if fixed == 0 { // nothing to read: keep the rest
			for v := range d.fixed {
				for l := range d.fixed[v] {
					fix(v, l)
				}
			}
		}
		return fixed
	}
	var buf []float64
	type candidate struct {
		gap  float64
		v, l int
	}
	var near []candidate
	for v := range d.labels {
		if !d.hasMovable(v) {
			continue
		}
		buf = mg.Marginal(v, slices.Grow(buf[:0], len(d.labels[v])))
		lo := slices.Min(buf)
		scale := math.Max(1, math.Abs(lo))
		for l, x := range buf {
			gap := (x - lo) / scale
			if gap <= trws.ConsistencyTolerance {
				fix(v, l)
			} else if nearest > 0 && d.movable(v, l) {
				near = append(near, candidate{gap, v, l})
			}
		}
	}
	if fixed == 0 && len(near) > 0 {
		slices.SortFunc(near, func(a, b candidate) int { return cmp.Compare(a.gap, b.gap) })
		for _, c := range near[:min(nearest, len(near))] {
			fix(c.v, c.l)
		}
	}
	return fixed
}

// icm lowers E(y) by moving one candidate variable at a time to its best alive
// label given the others, until no move helps (at most 20 sweeps): the relaxation's
// rounded labeling is often not locally optimal, and every label that beats y_v
// with y around is a violator the search would have to make immovable.
func icm(m *model.Model, d *domains, y []int, candidates []bool) {
	// local[l] is the sum of v's factors at y with v at l, the factors added in
	// VarFactors order for every label (the floats of summing them label by
	// label); an explicit pairwise factor adds its column or row at once.
	var local []float64
	fill := func(v int) {
		local = slices.Grow(local[:0], m.NumLabels(v))[:m.NumLabels(v)]
		clear(local)
		for _, f := range m.VarFactors(v) {
			vars, fn := m.FactorVars(int(f)), m.FactorFunction(int(f))
			if fn.Kind == model.Explicit && len(vars) == 1 {
				for l := range local {
					local[l] += fn.Table[l]
				}
				continue
			}
			if fn.Kind == model.Explicit && len(vars) == 2 {
				if k := fn.Shape[1]; int(vars[0]) == v {
					for l := range local {
						local[l] += fn.Table[l*k+y[vars[1]]]
					}
				} else {
					row := fn.Table[y[vars[0]]*k : (y[vars[0]]+1)*k]
					for l := range local {
						local[l] += row[l]
					}
				}
				continue
			}
			cur := y[v]
			for l := range local {
				y[v] = l
				local[l] += m.FactorValue(int(f), y)
			}
			y[v] = cur
		}
	}
	for sweep, moved := 0, true; moved && sweep < 20; sweep++ {
		moved = false
		for v, ls := range d.labels {
			if candidates != nil && !candidates[v] {
				continue
			}
			fill(v)
			cur := y[v]
			best, bestE := cur, local[cur]
			for _, l := range ls {
				if e := local[l]; e < bestE && (math.IsInf(bestE, 1) || e < bestE-1e-12*math.Max(1, math.Abs(bestE))) {
					best, bestE = l, e
				}
			}
			y[v] = best
			moved = moved || best != cur
		}
	}
}

func countMovable(d *domains) int {
	c := 0
	for _, fx := range d.fixed {
		for _, f := range fx {
			if !f {
				c++
			}
		}
	}
	return c
}

// finish fills res from the final domains: the immovable labels stay alive.
func finish(res *Elimination, d *domains, cert *Certificate) *Elimination {
	n := len(d.labels)
	res.Alive, res.Persistent = make([][]int, n), make([]int, n)
	alive := 0
	for _, fx := range d.fixed {
		for _, f := range fx {
			if f {
				alive++
			}
		}
	}
	res.Eliminated = 0
	all := make([]int, 0, alive) // every variable's alive labels, one after the other
	for v, ls := range d.labels {
		start := len(all)
		for c, l := range ls {
			if d.fixed[v][c] {
				all = append(all, l)
			} else {
				res.Eliminated++
			}
		}
		if len(all) > start {
			res.Alive[v] = all[start:len(all):len(all)]
		}
		res.Persistent[v] = -1
		if len(res.Alive[v]) == 1 {
			res.Persistent[v] = res.Alive[v][0]
		}
	}
	if res.Eliminated > 0 {
		res.Certificate = cert
	}
	return res
}

// VerifyElimination re-checks e from the model alone: for every stage in order it
// rebuilds the verification problem of the stage's test labeling with its alive
// labels immovable among the labels the previous stage left (e.Prior for the
// first), and checks the stage's certificate on it (bound ≥ −tolerance); then that
// e.Persistent and the counts follow from e.Alive. e.Prior's own proof is not
// checked here.
func VerifyElimination(m *model.Model, e *Elimination) (CheckResult, error) {
	n := m.NumVars()
	if err := checkEliminationShape(e, n); err != nil {
		return CheckResult{}, fmt.Errorf("persistency: elimination of a model of %d variables: %w", n, err)
	}
	prior := e.Prior
	var last CheckResult
	for i, st := range append(slices.Clip(e.Earlier), Stage{Test: e.Test, Alive: e.Alive, Certificate: e.Certificate}) {
		v, err := verifyStage(m, st, prior)
		if err != nil {
			if len(e.Earlier) > 0 {
				err = fmt.Errorf("stage %d of %d: %w", i+1, len(e.Earlier)+1, err)
			}
			return v, err
		}
		prior, last = st.Alive, v
	}
	eliminated := 0
	for v := range n {
		k := m.NumLabels(v)
		if e.Prior != nil {
			k = len(e.Prior[v])
		}
		eliminated += k - len(e.Alive[v])
	}
	if eliminated != e.Eliminated {
		return CheckResult{}, fmt.Errorf("persistency: %d labels eliminated, the result says %d", eliminated, e.Eliminated)
	}
	return last, nil
}

// verifyStage checks one stage of an elimination from the domains prior.
func verifyStage(m *model.Model, st Stage, prior [][]int) (CheckResult, error) {
	d, err := verificationDomains(m, st.Test, st.Alive, prior)
	if err != nil {
		return CheckResult{}, err
	}
	eliminated := false
	for v, ls := range st.Alive {
		eliminated = eliminated || (prior == nil && len(ls) < m.NumLabels(v)) || (prior != nil && len(ls) < len(prior[v]))
	}
	if !eliminated {
		// Nothing to prove: the stage's labels are checked, and its problem
		// is not built (seg2.LG after pbp: 0.27 s).
		return CheckResult{Certified: true}, nil
	}
	if st.Certificate == nil {
		return CheckResult{}, errors.New("persistency: labels eliminated without a certificate")
	}
	if !slices.Equal(st.Certificate.Labeling, d.y) {
		return CheckResult{}, errors.New("persistency: the certificate is for another test labeling")
	}
	g, err := build(m, d, checking)
	if err != nil {
		return CheckResult{}, err
	}
	v, err := st.Certificate.Check(g)
	if err != nil {
		return v, err
	}
	energy := m.Energy(st.Test)
	// v.Energy, g(y), is 0 up to the rounding of the builder's normal forms.
	v.Certified = !math.IsInf(energy, 1) && v.Bound >= -tolerance(energy)
	if !v.Certified {
		return v, fmt.Errorf("persistency: the verification problem's bound %v is below −%v: the elimination is not proven", v.Bound, tolerance(energy))
	}
	return v, nil
}

// Image is what e leaves of the labels cur of variable v (ascending) when e's
// maps are applied to them in order: each stage keeps its immovable labels and
// sends every other label to its test label. Windows merge by it.
func (e *Elimination) Image(v int, cur []int) []int {
	for _, st := range e.Earlier {
		cur = image(cur, st.Alive[v], st.Test[v])
	}
	return image(cur, e.Alive[v], e.Test[v])
}

// image is the labels cur after one map: its immovable labels fixed stay, every
// other label goes to the test label y.
func image(cur, fixed []int, y int) []int {
	var out []int
	moved := false
	for _, l := range cur {
		if _, ok := slices.BinarySearch(fixed, l); ok {
			out = append(out, l)
		} else {
			moved = true
		}
	}
	if moved && !slices.Contains(out, y) {
		out = append(out, y)
		slices.Sort(out)
	}
	return out
}
