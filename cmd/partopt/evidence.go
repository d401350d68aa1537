package main

import (
	"fmt"
	"io"
	"math"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/uai"
)

// evidence is MODEL.evid, read and checked against the model: the one place the
// commands load evidence, so that they condition on it and note it the same way.
type evidence struct {
	path     string
	observed int   // observations in the file
	fixed    []int // the argument of model.Condition: a label, or −1 for free variables
}

// loadEvidence reads MODEL.evid for m, or returns nil when there is none or noEvid is
// set. Errors name the evidence file.
func loadEvidence(modelPath string, m *model.Model, noEvid bool) (*evidence, error) {
	path, ok := uai.EvidencePathFor(modelPath)
	if !ok || noEvid {
		return nil, nil
	}
	ev, err := uai.ReadEvidenceFile(path)
	if err != nil {
		return nil, err
	}
	fixed, err := ev.Fixed(m.LabelCounts())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &evidence{path: path, observed: ev.Len(), fixed: fixed}, nil
}

// note tells the user on stderr that the evidence was applied and how to ignore it.
func (ev *evidence) note(stderr io.Writer) {
	fmt.Fprintf(stderr, "partopt: applied evidence %s (%d observed variables); --no-evid ignores it\n", ev.path, ev.observed)
}

// condition conditions m on the evidence, as toulbar2 does.
func (ev *evidence) condition(m *model.Model) (*model.Conditioned, error) {
	c, err := m.Condition(ev.fixed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ev.path, err)
	}
	return c, nil
}

// energy is the energy of the labeling x of m with the evidence applied: the energy of
// x on the free variables of the conditioned model, +Inf when x contradicts the
// evidence (a note on stderr names the variable).
func (ev *evidence) energy(m *model.Model, x []int, stderr io.Writer) (float64, error) {
	for v, l := range ev.fixed {
		if l >= 0 && x[v] != l {
			fmt.Fprintf(stderr, "partopt: the labeling gives variable %d label %d, the evidence %d: energy +Inf\n", v, x[v], l)
			return math.Inf(1), nil
		}
	}
	c, err := ev.condition(m)
	if err != nil {
		return 0, err
	}
	return c.Model.Energy(restrict(x, c.Vars)), nil
}

// restrict returns x on the variables vars (a labeling of a conditioned model).
func restrict(x []int, vars []int) []int {
	y := make([]int, len(vars))
	for i, v := range vars {
		y[i] = x[v]
	}
	return y
}

// extend returns the labeling of the parent model that is y on the free variables c.Vars
// and the evidence label on the others.
func (ev *evidence) extend(c *model.Conditioned, y []int) []int {
	x := make([]int, len(ev.fixed))
	copy(x, ev.fixed)
	for i, v := range c.Vars {
		x[v] = y[i]
	}
	return x
}

// problem is a model as solve and verify see it: read, and conditioned on MODEL.evid
// unless --no-evid.
type problem struct {
	path   string
	m      *model.Model       // the model of the file
	ev     *evidence          // nil without evidence
	c      *model.Conditioned // nil without evidence
	solved *model.Model       // c.Model, or m
}

// loadProblem reads the model and its evidence and conditions on it; it writes
// nothing (the evidence note is the caller's, once the run is accepted).
func loadProblem(modelPath string, noEvid bool) (*problem, error) {
	m, err := readModel(modelPath)
	if err != nil {
		return nil, err
	}
	ev, err := loadEvidence(modelPath, m, noEvid)
	if err != nil {
		return nil, err
	}
	p := &problem{path: modelPath, m: m, ev: ev, solved: m}
	if ev != nil {
		if p.c, err = ev.condition(m); err != nil {
			return nil, err
		}
		p.solved = p.c.Model
	}
	return p, nil
}

// extend returns the labeling of the file's model that is y on the solved model's
// variables and the evidence label on the observed ones.
func (p *problem) extend(y []int) []int {
	if p.ev == nil {
		return y
	}
	return p.ev.extend(p.c, y)
}

// restrict returns x (over the file's variables) on the solved model's variables.
func (p *problem) restrict(x []int) []int {
	if p.c == nil {
		return x
	}
	return restrict(x, p.c.Vars)
}

// parentVar is the file's variable of solved-model variable i.
func (p *problem) parentVar(i int) int {
	if p.c == nil {
		return i
	}
	return p.c.Vars[i]
}

// note tells stderr that the evidence was applied, if it was.
func (p *problem) note(stderr io.Writer) {
	if p.ev != nil {
		p.ev.note(stderr)
	}
}
