package persistency_test

import (
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
)

// criterionHolds decides Theorem 1's criterion by enumeration: no −Inf boundary
// entry, and y|_A minimises Ê_{A,y} with a finite value.
func criterionHolds(t *testing.T, m *model.Model, A []int, y []int, v persistency.Variant) bool {
	sp, err := persistency.BuildSubproblem(m, A, y, v)
	must(t, err)
	if len(sp.Hopeless) > 0 {
		return false
	}
	_, spMin := minEnergy(t, sp.Model)
	e := sp.Model.Energy(restrict(y, A))
	return !math.IsInf(e, 1) && testutil.CloseTo(e, spMin, 1e-9)
}

// setOf returns the variables with a persistent label.
func setOf(p []int) []int {
	var A []int
	for v, l := range p {
		if l >= 0 {
			A = append(A, v)
		}
	}
	return A
}

// cloneResult copies the parts of a result that the tests tamper with.
func cloneResult(r *persistency.Result) *persistency.Result {
	c := *r
	c.Persistent = slices.Clone(r.Persistent)
	c.Set = slices.Clone(r.Set)
	if r.Certificate != nil {
		cert := *r.Certificate
		cert.Labeling = slices.Clone(r.Certificate.Labeling)
		if r.Certificate.Dual != nil {
			d := *r.Certificate.Dual
			d.Labeling = slices.Clone(d.Labeling)
			d.Messages = slices.Clone(d.Messages)
			cert.Dual = &d
		}
		if r.Certificate.Draft != nil {
			d := *r.Certificate.Draft
			d.Labeling = cert.Labeling // stored once, as the certificate's
			d.Messages = slices.Clone(d.Messages)
			cert.Draft = &d
		}
		c.Certificate = &cert
	}
	return &c
}

// TestVerifyIsTheCriterion: for hand-made results with an exhaustive certificate —
// random node sets A, test labelings y, both variants — Verify accepts exactly when
// Theorem 1's criterion holds (decided here by enumeration), and then the labels are
// persistent.
func TestVerifyIsTheCriterion(t *testing.T) {
	fewerGCs(t)
	rng := random.New(12)
	accepted, rejected := 0, 0
	for c := range 600 {
		fam := criterionFamilies[c%len(criterionFamilies)]
		m := fam.gen(rng)
		opt, minE := minEnergy(t, m)
		v := variants[c%2]
		A := randomSubset(rng, m.NumVars())
		y := testLabeling(t, rng, m, A, v, opt)
		res := &persistency.Result{Variant: v, Persistent: fixedOn(m.NumVars(), A, y),
			Certificate: &persistency.Certificate{Labeling: restrict(y, A), Exhaustive: true, Limit: bruteLimit}}
		_, err := persistency.Verify(m, res)
		want := criterionHolds(t, m, A, y, v)
		switch {
		case err == nil && !want:
			t.Errorf("case %d (%s) %v: A=%v y=%v: Verify accepts, but the criterion does not hold", c, fam.name, v, A, restrict(y, A))
		case err != nil && want:
			t.Errorf("case %d (%s) %v: A=%v y=%v: the criterion holds, but Verify: %v", c, fam.name, v, A, restrict(y, A), err)
		}
		if err != nil {
			rejected++
			continue
		}
		accepted++
		if ok, e := isPersistent(t, m, res.Persistent, minE); !ok {
			t.Errorf("case %d (%s) %v: Verify accepts A=%v y=%v, but min E with them fixed is %v > %v", c, fam.name, v, A, restrict(y, A), e, minE)
		}
	}
	t.Logf("Verify accepted %d and rejected %d hand-made results", accepted, rejected)
	if accepted < 100 || rejected < 100 {
		t.Errorf("too one-sided: %d accepted, %d rejected", accepted, rejected)
	}
}

// TestVerifyRejectsTamperedResults tampers with results of Run (TRW-S dual
// certificates and exhaustive ones, both variants) on random models:
//   - a flipped persistent label, an extra variable, a missing certificate, labels out
//     of range or of the wrong length must all make Verify fail;
//   - a flipped label carried into the certificate too (and into the dual's labeling),
//     an extra variable with an extended certificate, perturbed dual messages and a
//     changed variant may pass only if the claim still holds: Verify must never accept
//     labels that are not persistent (checked by enumeration), and with an exhaustive
//     certificate it must accept exactly when the criterion holds.
//
// It also requires a case where switching the variant makes Verify fail: an
// Invariant result that the Original boundary cannot prove.
func TestVerifyRejectsTamperedResults(t *testing.T) {
	fewerGCs(t)
	variantRejected, consistentRejected, consistentAccepted, drafts := 0, 0, 0, 0
	mustFail := func(c int, what string, m *model.Model, r *persistency.Result) {
		t.Helper()
		if _, err := persistency.Verify(m, r); err == nil {
			t.Errorf("case %d: %s: Verify accepts", c, what)
		}
	}
	// mayPass checks a consistent tampering: if Verify accepts, the claim must hold.
	mayPass := func(c int, what string, m *model.Model, r *persistency.Result, minE float64) bool {
		t.Helper()
		_, err := persistency.Verify(m, r)
		if r.Certificate != nil && r.Certificate.Exhaustive {
			A := setOf(r.Persistent)
			if want := criterionHolds(t, m, A, r.Persistent, r.Variant); want != (err == nil) {
				t.Errorf("case %d: %s: Verify error %v, criterion holds: %v", c, what, err, want)
			}
		}
		if err != nil {
			consistentRejected++
			return false
		}
		consistentAccepted++
		if ok, e := isPersistent(t, m, r.Persistent, minE); !ok {
			t.Errorf("case %d: %s: Verify accepts %v, but min E with them fixed is %v > %v", c, what, r.Persistent, e, minE)
		}
		return true
	}
	rng := random.New(13)
	for c := range 400 {
		fam := soundnessFamilies[c%len(soundnessFamilies)]
		m := fam.gen(rng)
		_, minE := minEnergy(t, m)
		solvers := []persistency.Relaxation{newLossy(persistency.Exhaustive{}, uint64(c))}
		if fam.pairwise {
			solvers = append(solvers, persistency.TRWS{})
		}
		for _, solver := range solvers {
			for _, v := range variants {
				res, err := persistency.Run(testCtx, m, persistency.Options{Variant: v, Solver: solver})
				if err != nil {
					continue // reported by TestAlgorithm1IsSound
				}
				if _, err := persistency.Verify(m, res); err != nil {
					t.Errorf("case %d: Verify of an untampered result: %v", c, err)
					continue
				}
				if len(res.Set) == 0 {
					if res.Certificate != nil {
						t.Errorf("case %d: empty set with a certificate", c)
					}
					continue
				}
				n := m.NumVars()
				i := rng.IntN(len(res.Set))
				u := res.Set[i]

				// Structural tampering: always rejected.
				r := cloneResult(res)
				r.Certificate = nil
				mustFail(c, "certificate dropped", m, r)
				r = cloneResult(res)
				r.Persistent = r.Persistent[:n-1]
				mustFail(c, "one label short", m, r)
				r = cloneResult(res)
				r.Persistent[u] = m.NumLabels(u)
				mustFail(c, "label out of range", m, r)
				r = cloneResult(res)
				r.Persistent[u] = -2
				mustFail(c, "label −2", m, r)
				if m.NumLabels(u) > 1 {
					r = cloneResult(res)
					r.Persistent[u] = (r.Persistent[u] + 1 + rng.IntN(m.NumLabels(u)-1)) % m.NumLabels(u)
					mustFail(c, "persistent label flipped, certificate unchanged", m, r)

					// The same flip carried into every labeling of the certificate.
					r.Certificate.Labeling[i] = r.Persistent[u]
					if d := r.Certificate.Dual; d != nil {
						d.Labeling[i] = r.Persistent[u]
					}
					mayPass(c, "persistent label flipped in the certificate too", m, r, minE)
				}
				if len(res.Set) < n {
					out := -1
					for w := range n {
						if res.Persistent[w] < 0 {
							out = w
							break
						}
					}
					r = cloneResult(res)
					r.Persistent[out] = rng.IntN(m.NumLabels(out))
					mustFail(c, "variable added, certificate unchanged", m, r)
					if r.Certificate.Exhaustive {
						r.Certificate.Labeling = restrict(r.Persistent, setOf(r.Persistent))
						mayPass(c, "variable added to the certificate too", m, r, minE)
					}
				}
				if d := res.Certificate.Dual; d != nil && len(d.Messages) > 0 {
					r = cloneResult(res)
					r.Certificate.Dual.Messages[rng.IntN(len(d.Messages))] += 1 + rng.Float64()
					mayPass(c, "dual message perturbed", m, r, minE)
				}
				if d := res.Certificate.Draft; d != nil && len(d.Messages) > 0 {
					r = cloneResult(res)
					r.Certificate.Draft.Messages[rng.IntN(len(d.Messages))] += float32(1 + rng.Float64())
					mayPass(c, "draft message perturbed", m, r, minE)
					drafts++
				}
				r = cloneResult(res)
				r.Variant = persistency.Original
				if v == persistency.Original {
					r.Variant = persistency.Invariant
				}
				if !mayPass(c, "variant switched", m, r, minE) {
					variantRejected++
				}
			}
		}
	}
	t.Logf("consistent tamperings: %d rejected, %d accepted (and then persistent); a switched variant failed %d times",
		consistentRejected, consistentAccepted, variantRejected)
	if variantRejected == 0 {
		t.Error("no result failed Verify with the other variant: the test checks too little")
	}
	if drafts == 0 {
		t.Error("no result proved by a draft certificate: the test checks too little")
	}
	if consistentRejected < 100 {
		t.Errorf("only %d consistent tamperings rejected", consistentRejected)
	}
}

// TestVerifyEmptyResultNeedsNoCertificate: a result that claims nothing is proven.
func TestVerifyEmptyResultNeedsNoCertificate(t *testing.T) {
	m := random.DensePairwise(random.New(14), 5, 3, 0.5)
	p := []int{-1, -1, -1, -1, -1}
	if _, err := persistency.Verify(m, &persistency.Result{Persistent: p}); err != nil {
		t.Errorf("Verify of an empty result: %v", err)
	}
}

// TestExhaustiveCheckIsBoundedByTheChecker: an exhaustive certificate names
// its own limit, but a certificate is input: over a sub-problem of 3^19 ≈ 2^30
// labelings Verify refuses at once, whatever the limit says, instead of
// enumerating for minutes; a file or message naming a limit beyond
// MaxCheckEnumeration is refused as it is written and read.
func TestExhaustiveCheckIsBoundedByTheChecker(t *testing.T) {
	n := 19
	b := model.NewBuilder(slices.Repeat([]int{3}, n))
	for v := range n {
		if err := b.AddTable([]int{v}, []float64{0, 1, 2}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, n)
	for v := range all {
		all[v] = v
	}
	for _, limit := range []int{persistency.MaxCheckEnumeration, math.MaxInt} {
		res := &persistency.Result{Persistent: make([]int, n),
			Certificate: &persistency.Certificate{Labeling: make([]int, n), Exhaustive: true, Limit: limit}}
		_, err := persistency.Verify(m, res)
		if err == nil || !strings.Contains(err.Error(), "a check enumerates at most 4194304 labelings") {
			t.Errorf("limit %d: Verify of 3^19 labelings: %v, want a refusal", limit, err)
		}
		err = persistency.WriteResult(io.Discard, res)
		if ok := limit <= persistency.MaxCheckEnumeration; (err == nil) != ok {
			t.Errorf("limit %d: WriteResult: %v", limit, err)
		}
	}
	// Within the bound the certificate is checked as before.
	res := &persistency.Result{Persistent: fixedOn(n, all[:12], make([]int, 12)),
		Certificate: &persistency.Certificate{Labeling: make([]int, 12), Exhaustive: true, Limit: 1}}
	if _, err := persistency.Verify(m, res); err != nil {
		t.Errorf("3^12 labelings, the optimum: %v", err)
	}
}

// TestKeepDualKeepsThePolishedDual: a proof written once (KeepDual) keeps the
// solver's float64 dual; by default the certificate is the float32 draft that
// polishes back into it. Both prove the same labels and both check.
func TestKeepDualKeepsThePolishedDual(t *testing.T) {
	drafts := 0
	for seed := range uint64(20) {
		m := random.PottsDenoising(random.New(900+seed), 16, 16, 3, 0.8, 4, 1.2)
		kept, err := persistency.Run(testCtx, m, persistency.Options{KeepDual: true})
		must(t, err)
		def, err := persistency.Run(testCtx, m, persistency.Options{})
		must(t, err)
		if !slices.Equal(kept.Persistent, def.Persistent) {
			t.Fatalf("seed %d: KeepDual proves other labels", seed)
		}
		if len(kept.Set) == 0 {
			continue
		}
		if c := kept.Certificate; c.Dual == nil || c.Draft != nil {
			t.Errorf("seed %d: KeepDual: dual %v, draft %v; want the dual alone", seed, c.Dual != nil, c.Draft != nil)
		}
		if def.Certificate.Draft != nil {
			drafts++
		}
		for _, r := range []*persistency.Result{kept, def} {
			if _, err := persistency.Verify(m, r); err != nil {
				t.Errorf("seed %d: %v", seed, err)
			}
		}
	}
	if drafts == 0 {
		t.Error("no default certificate was a draft: the comparison tested nothing")
	}
}

// TestAStageThatEliminatesNothingIsCheckedWithoutItsProblem: a stage that
// keeps every label alive (Algorithm 1 proved everything first) proves
// nothing and needs no certificate, and its verification problem is not built;
// its labels are still checked as the problem's builder checks them — a test
// label outside the domains, an alive label outside them, the test label not
// among the alive ones — and a stage that eliminates a label without a
// certificate is still refused.
func TestAStageThatEliminatesNothingIsCheckedWithoutItsProblem(t *testing.T) {
	m := random.DensePairwise(random.New(15), 6, 3, 0.6)
	n := m.NumVars()
	prior := make([][]int, n) // every variable keeps its labels but the last
	y := make([]int, n)
	for v := range n {
		for l := range m.NumLabels(v) - 1 {
			prior[v] = append(prior[v], l)
		}
		if len(prior[v]) == 0 {
			prior[v] = []int{0}
		}
		y[v] = prior[v][len(prior[v])-1]
	}
	stage := func() *persistency.Elimination {
		el := &persistency.Elimination{Test: slices.Clone(y), Prior: prior, Alive: make([][]int, n), Persistent: make([]int, n)}
		for v := range n {
			el.Alive[v] = slices.Clone(prior[v])
			el.Persistent[v] = -1
			if len(prior[v]) == 1 {
				el.Persistent[v] = prior[v][0]
			}
		}
		return el
	}
	if _, err := persistency.VerifyElimination(m, stage()); err != nil {
		t.Fatalf("a stage that eliminates nothing: %v", err)
	}
	v := slices.IndexFunc(prior, func(ls []int) bool { return len(ls) > 1 })
	if v < 0 {
		t.Fatal("no variable with two labels alive")
	}
	k := m.NumLabels(v)
	for _, c := range []struct {
		what   string
		tamper func(el *persistency.Elimination)
		want   string
	}{
		{"a test label outside the domains", func(el *persistency.Elimination) { el.Test[v] = k - 1 }, "not alive"},
		{"an alive label outside the domains", func(el *persistency.Elimination) {
			el.Alive[v] = append(slices.Clone(prior[v][1:]), k-1)
		}, "not alive"},
		{"the test label not alive", func(el *persistency.Elimination) {
			el.Alive[v], el.Persistent[v] = prior[v][:1], prior[v][0]
		}, "not immovable"},
		{"a label eliminated", func(el *persistency.Elimination) {
			el.Alive[v], el.Persistent[v] = []int{y[v]}, y[v]
		}, "without a certificate"},
	} {
		el := stage()
		c.tamper(el)
		if _, err := persistency.VerifyElimination(m, el); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.what, err, c.want)
		}
	}
}

// TestDomainsAreThePersistentLabelOrEveryLabel: the domains a partial result
// leaves are its persistent label alone, every label elsewhere, each list of
// its own (an append to one leaves its neighbour as it was), and nil when
// nothing is persistent.
func TestDomainsAreThePersistentLabelOrEveryLabel(t *testing.T) {
	m := random.DensePairwise(random.New(16), 7, 4, 0.5)
	persistent := []int{-1, 2, -1, 0, 1, -1, -1}
	for v, l := range persistent {
		if l >= m.NumLabels(v) {
			persistent[v] = -1
		}
	}
	d := (&persistency.Result{Persistent: persistent}).Domains(m)
	for v, l := range persistent {
		want := []int{l}
		if l < 0 {
			want = nil
			for c := range m.NumLabels(v) {
				want = append(want, c)
			}
		}
		if !slices.Equal(d[v], want) {
			t.Errorf("variable %d: domain %v, want %v", v, d[v], want)
		}
	}
	d[0] = append(d[0], 99)
	if d[1][0] != persistent[1] && persistent[1] >= 0 || slices.Contains(d[1], 99) {
		t.Errorf("an append to variable 0's domain reached variable 1's: %v", d[1])
	}
	if none := (&persistency.Result{Persistent: []int{-1, -1, -1, -1, -1, -1, -1}}).Domains(m); none != nil {
		t.Errorf("nothing persistent: domains %v, want nil", none)
	}
}
