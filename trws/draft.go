package trws

import (
	"fmt"
	"math"
	"slices"

	"github.com/partopt/partopt/model"
)

// A Draft is a certificate before its polish: the labeling and the solver's
// float32 messages, in the layout of Certificate.Messages (edge by edge in
// factor order, into the first variable, then into the second). It holds half
// the bytes of its Certificate and no edges or shares, which is what a
// windowed run stores and sends for every window (a 10⁸-pixel stereo job's
// proofs are tens of gigabytes). Check rebuilds the solver on the model,
// polishes the messages as Solver.Certificate does and checks the polished
// dual: nothing in a draft is believed, only the bound Check computes counts.
type Draft struct {
	Labeling []int
	Messages []float32
}

// Draft returns the draft of the certificate of labeling x of the solver's
// current problem: Check(s.Model()) certifies it where Solver.Certificate's
// certifies, unless the solver was built otherwise than New(s.Model()) builds
// it (a warm start keeps another node order, whose polish may differ): whoever
// stores a draft checks it first, and falls back to the certificate.
func (s *Solver) Draft(x []int) *Draft {
	return &Draft{Labeling: append([]int(nil), x...), Messages: s.messages()}
}

// messages are the solver's messages laid out as Certificate.Messages: edge by
// edge, into the factor's first variable, then into its second.
func (s *Solver) messages() []float32 {
	k, before := s.edgeRanges()
	msg := make([]float32, before[k])
	spreadParts(len(s.tail), k, func(p, lo, hi int) {
		out := msg[before[p]:before[p]] // appends in place, up to range p+1's start
		for e := lo; e < hi; e++ {
			out = s.appendMessages(out, e)
		}
	})
	return msg
}

// edgeRanges cuts the edges into k ranges as spreadParts does, and returns
// where each range's messages start in a certificate's layout (edge by edge,
// both messages of each), the end last.
func (s *Solver) edgeRanges() (k int, before []int32) {
	ne := len(s.tail)
	k = parts(ne)
	return k, starts(ne, k, func(_, lo, hi int) (size int32) {
		for e := lo; e < hi; e++ {
			size += s.labels[s.head[e]] + s.labels[s.tail[e]]
		}
		return size
	})
}

// appendMessages appends edge e's two messages to msg, into the factor's first
// variable, then into its second.
func (s *Solver) appendMessages(msg []float32, e int) []float32 {
	toHead := s.msg[s.mhead[e] : s.mhead[e]+s.labels[s.head[e]]]
	toTail := s.msg[s.mtail[e] : s.mtail[e]+s.labels[s.tail[e]]]
	if s.swap[e] {
		return append(append(msg, toHead...), toTail...)
	}
	return append(append(msg, toTail...), toHead...)
}

// Draft is Draft(x) of the Local's solver on its surviving nodes (Solver's
// Restrict to them): x gives their labels in increasing node order. It copies
// only the messages of the edges among them, not the solver.
func (l *Local) Draft(x []int) *Draft {
	s := l.s
	msg := make([]float32, 0, len(s.msg))
	for e := range s.tail {
		if !l.dead[s.tail[e]] && !l.dead[s.head[e]] {
			msg = s.appendMessages(msg, e)
		}
	}
	return &Draft{Labeling: append([]int(nil), x...), Messages: msg}
}

// Certificate polishes the draft on m: a solver built on m polishes the draft's
// messages as Solver.Certificate polishes its own (newPolisher builds only what
// the polish reads of New(m): the same graph, unary terms and penalty). It
// costs the graph and two float64 passes.
func (d *Draft) Certificate(m *model.Model) (*Certificate, error) { return d.certificate(m, 1) }

// certificate is Certificate with the polish on threads strips, on a grid.
func (d *Draft) certificate(m *model.Model, threads int) (*Certificate, error) {
	if err := m.CheckLabeling(d.Labeling); err != nil {
		return nil, fmt.Errorf("trws: draft certificate: %w", err)
	}
	s, err := newPolisher(m, threads)
	if err != nil {
		return nil, err
	}
	size := 0 // Σ_e K_head + K_tail, both layouts'
	for e, t := range s.tail {
		size += int(s.labels[t] + s.labels[s.head[e]])
	}
	if len(d.Messages) != size {
		return nil, fmt.Errorf("trws: draft certificate has %d message entries, the model %d", len(d.Messages), size)
	}
	return s.certificate(d.Labeling, d.Messages), nil
}

// Check polishes the draft on m and checks the certificate it gives
// (Certificate.Check), from m alone.
func (d *Draft) Check(m *model.Model) (Verdict, error) { return d.check(m, 1) }

// check is Check with the polish on threads strips, on a grid.
func (d *Draft) check(m *model.Model, threads int) (Verdict, error) {
	c, err := d.certificate(m, threads)
	if err != nil {
		return Verdict{}, err
	}
	return c.Check(m)
}

// CheckDraft is d.Check(m) for a draft of the solver's: the verdict it
// already has where it certified d on m in a solve (Proved), else the check
// with the polish on as many cores as its last Solve had (Options.Threads; a
// window given the spare ones of its round). The same verdict either way.
func (s *Solver) CheckDraft(d *Draft, m *model.Model) (Verdict, error) {
	if v, ok := s.Proved(d, m); ok {
		return v, nil
	}
	return d.check(m, s.threads)
}

// Equal says whether c and o are the same certificate, bit for bit.
func (c *Certificate) Equal(o *Certificate) bool {
	return slices.Equal(c.Labeling, o.Labeling) && slices.Equal(c.Edges, o.Edges) && slices.Equal(c.LaterIsSecond, o.LaterIsSecond) &&
		sameBits(c.Share, o.Share) && sameBits(c.Messages, o.Messages)
}

// sameBits says whether a and b hold the same float64 values bit for bit (NaNs
// and signed zeros included).
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// provedDraft is a draft a solver certified on the model it was built from.
type provedDraft struct {
	draft   *Draft
	model   *model.Model
	verdict Verdict
}

// Proved returns the verdict of d.Check(m) without polishing d again where the
// solver has already certified d on m in a solve (Drive's CertifyBest, when the
// gap closed without agreement): d's labeling and messages equal bit for bit
// the draft it certified, and the solver is still as New(m) built it, so
// Check's polish of d is the one the solver made. ok is false otherwise.
func (s *Solver) Proved(d *Draft, m *model.Model) (v Verdict, ok bool) {
	p := s.proved
	if p == nil || m == nil || p.model != m || s.src != m ||
		!slices.Equal(p.draft.Labeling, d.Labeling) || !sameBits32(p.draft.Messages, d.Messages) {
		return Verdict{}, false
	}
	return p.verdict, true
}

// sameBits32 says whether a and b hold the same float32 values bit for bit.
func sameBits32(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
