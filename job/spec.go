package job

import (
	"errors"
	"fmt"
	"github.com/partopt/partopt/model/uai"
	"path/filepath"
	"slices"
	"time"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
	"github.com/partopt/partopt/srmp"
	"github.com/partopt/partopt/trws"
)

// Method is what a job computes.
type Method string

// The methods.
const (
	// PBP proves persistent labels: partial optimality by pruning (Swoboda et
	// al.), whole or by windows.
	PBP Method = "pbp"
	// TRWS solves the local polytope relaxation of a pairwise model by TRW-S.
	TRWS Method = "trws"
	// SRMP solves the relaxation of a model of any order by SRMP.
	SRMP Method = "srmp"
	// IRI proves labels non-optimal: label elimination by iterative relaxed
	// inference (Shekhovtsov et al.); a variable left with one label is persistent.
	IRI Method = "iri"
	// PBPIRI runs both, to prove at least what pbp proves: on a whole model
	// label elimination first, then Algorithm 1 on what it leaves undecided
	// (persistency.PruneAfter: its additions proven as one more elimination
	// stage), but Algorithm 1 first on a raster or a binary model; by windows
	// Algorithm 1's windows first, then label elimination's from what they
	// proved.
	PBPIRI Method = "pbp+iri"
)

// NoHalo is Spec.Halo for windows without a halo.
const NoHalo = -1

// Methods are the known methods, the default first.
var Methods = []Method{PBP, TRWS, SRMP, IRI, PBPIRI}

// Defaults of a windowed run.
const (
	DefaultRasterWindow = 512 // core side of a raster window, pixels
	DefaultRasterHalo   = 32  // pixels
	DefaultRegionHalo   = 2   // graph steps
	DefaultRounds       = 3
	// DefaultEliminationRounds is the rounds of windowed label elimination: its
	// rounds stop by themselves once windows as large as the model (see
	// partition.EliminateOptions.Plan's levels) eliminate nothing more.
	DefaultEliminationRounds = 12
	DefaultPNGSide           = 2048
	// UAIOutputLimit is the most variables for which a windowed raster run also
	// writes labels.sol and persistent.evid (text files of ~2–10 bytes per variable).
	UAIOutputLimit = 1 << 22
)

// Spec is one job: what to solve, how, and where the outputs go. Its zero
// values are the defaults, so Spec{Model: m, Output: dir} proves the persistent
// labels of m by pbp+iri, whole (by windows for a .grid file).
type Spec struct {
	// Model is the model file (any format model/modelfile reads); MODEL.evid
	// beside it is applied unless NoEvidence.
	Model string
	// ModelName is the model as the report names it when Model is a copy (a
	// cluster's job: the file as submitted); "": Model.
	ModelName  string
	NoEvidence bool
	Method     Method              // "": PBPIRI (see method)
	Boundary   persistency.Variant // PBP's boundary potentials
	// Solver are the relaxation solver's options (its Progress is ignored: see
	// Options.Progress); MaxIterations 0 is the solver's own cap (1500 for
	// TRW-S, 10000 for SRMP). All zero: trws.DefaultOptions with that cap.
	Solver trws.Options
	// Window > 0 solves by windows: the core side in pixels of a raster, the
	// variables of a region otherwise. 0 solves whole, except a .grid file
	// (DefaultRasterWindow).
	Window int
	// Halo extends the windows: pixels of a raster, graph steps otherwise; 0
	// is the layout's default (DefaultRasterHalo, DefaultRegionHalo), NoHalo none.
	Halo    int
	Rounds  int // at most this many rounds of windows; 0: DefaultRounds (DefaultEliminationRounds for IRI and pbp+iri's elimination)
	Workers int // windows solved at once in this process (fewer windows get their cores); 0: 1
	PNGMax  int // largest side of persistency.png; 0: DefaultPNGSide
	// Complete completes what the proofs leave into a labeling proven
	// optimal where its budget allows (package complete; whole models).
	Complete Completion
	// Output is the output directory, created if missing.
	Output string
}

// method is s.Method with its default: the strongest, pbp+iri, whole or by
// windows (--window, .grid files). Run falls back to pbp alone, with a note,
// where label elimination cannot run: a .grid file past MaxInMemoryPixels
// (pbp solves it out of core), a whole model whose verification tables are
// too large.
func (s Spec) method() Method {
	if s.Method != "" {
		return s.Method
	}
	return PBPIRI
}

// Windowed says whether the job is solved by windows.
func (s Spec) Windowed() bool {
	switch s.method() {
	case PBP, PBPIRI, IRI:
		return s.Window > 0 || IsGridFile(s.Model)
	}
	return false
}

// roundsFor is the rounds of windows of method m (pbp or iri): s.Rounds, or
// the method's default.
func (s Spec) roundsFor(m Method) int {
	switch {
	case s.Rounds > 0:
		return s.Rounds
	case m == IRI:
		return DefaultEliminationRounds
	}
	return DefaultRounds
}

// stage is s for one method of a pbp+iri run: method m with its rounds.
func (s Spec) stage(m Method) Spec {
	s.Method, s.Rounds = m, s.roundsFor(m)
	return s
}

// MaxInMemoryPixels bounds the .grid files that methods other than pbp read into
// memory (pbp solves them out of core, of any size).
const MaxInMemoryPixels = 1 << 24

var maxInMemoryPixels int64 = MaxInMemoryPixels // a variable for the tests

var uaiOutputLimit int64 = UAIOutputLimit // a variable for the tests

// errTooLarge is checkInMemory's refusal.
var errTooLarge = errors.New("too large to read into memory")

// checkInMemory refuses a .grid file too large to read into memory (errTooLarge).
func (s Spec) checkInMemory() error {
	if !IsGridFile(s.Model) {
		return nil
	}
	h, err := gridHeader(s.Model)
	if err != nil {
		return err
	}
	if n := int64(h.Width) * int64(h.Height); n > maxInMemoryPixels {
		return fmt.Errorf("%s: %d×%d pixels: method %s reads the model into memory, up to %d pixels (pbp solves any size out of core): %w",
			s.Model, h.Width, h.Height, s.method(), maxInMemoryPixels, errTooLarge)
	}
	return nil
}

// Validate checks the spec's values; errors name the field.
func (s Spec) Validate() error {
	switch m := s.method(); {
	case !slices.Contains(Methods, m):
		return fmt.Errorf("method %q: want one of %v", m, Methods)
	case m != PBP && m != PBPIRI && s.Boundary != persistency.Invariant:
		return fmt.Errorf("boundary %s: only methods pbp and pbp+iri have boundary potentials", s.Boundary)
	case s.Model == "":
		return errors.New("no model file")
	case s.Output == "":
		return errors.New("output: empty directory name")
	case s.Solver.MaxIterations < 0 || s.Solver.StallIterations < 0 || s.Solver.CheckEvery < 0:
		return fmt.Errorf("solver options: max iterations %d, stall iterations %d, check every %d: want ≥ 0",
			s.Solver.MaxIterations, s.Solver.StallIterations, s.Solver.CheckEvery)
	case !(s.Solver.GapTolerance >= 0):
		return fmt.Errorf("gap tolerance %v: want a number ≥ 0", s.Solver.GapTolerance)
	case s.Window < 0 || s.Halo < NoHalo || s.Rounds < 0 || s.Workers < 0 || s.PNGMax < 0:
		return fmt.Errorf("window %d, halo %d, rounds %d, workers %d, png side %d: want ≥ 0 (halo: or NoHalo)", s.Window, s.Halo, s.Rounds, s.Workers, s.PNGMax)
	case s.Window > 0 && m != PBP && m != IRI && m != PBPIRI:
		return fmt.Errorf("window: method %s does not solve by windows (pbp, iri and pbp+iri do)", m)
	}
	return nil
}

// withDefaults resolves the zero values that stand for defaults (but not the
// halo, which depends on the layout).
func (s Spec) withDefaults() Spec {
	s.Method = s.method()
	if o := s.Solver; o.MaxIterations == 0 && o.GapTolerance == 0 && o.StallIterations == 0 && o.StallTolerance == 0 && o.CheckEvery == 0 {
		s.Solver = trws.DefaultOptions()
		s.Solver.MaxIterations = 0
	}
	if s.Solver.CheckEvery == 0 {
		s.Solver.CheckEvery = trws.DefaultOptions().CheckEvery
	}
	if s.Method != PBPIRI { // pbp+iri: each stage its own (stage)
		s.Rounds = s.roundsFor(s.Method)
	}
	s.Workers = max(s.Workers, 1)
	if s.PNGMax == 0 {
		s.PNGMax = DefaultPNGSide
	}
	if s.Window == 0 && s.Windowed() { // a .grid file: Windowed says which methods
		s.Window = DefaultRasterWindow
	}
	return s
}

// halo is the spec's halo, def when it is the default.
func (s Spec) halo(def int) int {
	switch {
	case s.Halo == 0:
		return def
	case s.Halo < 0:
		return 0
	}
	return s.Halo
}

// solverFor returns the solver options with MaxIterations 0 resolved to the cap
// of the named solver ("trws" or "srmp").
func (s Spec) solverFor(solver string) trws.Options {
	opt := s.Solver
	opt.Progress = nil
	if opt.MaxIterations == 0 {
		opt.MaxIterations = trws.DefaultOptions().MaxIterations
		if solver == string(SRMP) {
			opt.MaxIterations = srmp.DefaultMaxIterations
		}
	}
	return opt
}

// persistency is PBP's options: the boundary, and Auto over the solver options
// (MaxIterations 0 left to each solver).
func (s Spec) persistency() persistency.Options {
	opt := s.Solver
	opt.Progress = nil
	return persistency.Options{Variant: s.Boundary, Solver: persistency.Auto{Options: opt}}
}

// wire is the cluster's description of a windowed job over the model: a raster of
// w×h pixels and k labels, or (graph) the n = w variables of the model
// conditioned on its evidence. The model is referred to by its absolute path
// until a runtime uploads it.
func (s Spec) wire(graph bool, w, h, k int) (protocol.JobSpec, error) {
	abs, err := filepath.Abs(s.Model)
	if err != nil {
		return protocol.JobSpec{}, err
	}
	t := s.Solver
	spec := protocol.JobSpec{Job: NewID(), Model: protocol.ModelRef{Path: abs},
		Width: w, Height: h, Labels: k, Core: s.Window, Halo: s.halo(DefaultRasterHalo), MaxRounds: s.Rounds,
		Variant: s.Boundary.String(),
		TRWS: protocol.TRWSOptions{MaxIterations: t.MaxIterations, GapTolerance: t.GapTolerance,
			StallIterations: t.StallIterations, StallTolerance: t.StallTolerance, CheckEvery: t.CheckEvery},
		CreatedAt: time.Now(), Completion: s.Complete.wire()}
	if graph {
		spec.Layout, spec.Halo = protocol.LayoutGraph, s.halo(DefaultRegionHalo)
	}
	return spec, spec.Validate()
}

// Wire is the cluster's description of the windowed job s (Method "" as
// pbp+iri, as everywhere; Window and Halo as given, Rounds 0 as the method's
// default): a raster for a .grid file or a model on a 4-connected grid,
// otherwise a graph of the variables left free by the evidence; an iri job a
// raster for a .grid eliminated by windows of the file (rasterElimination:
// without evidence, or past memory), a graph otherwise, and a pbp+iri job its
// pbp stage's (the layout of its elimination's plans). The model is referred
// to by its absolute path; a fresh id is drawn.
func Wire(s Spec) (protocol.JobSpec, error) {
	s = s.withDefaults()
	switch {
	case s.Method == PBPIRI && s.Windowed():
		return wirePBPIRI(s)
	case (s.Method != PBP && s.Method != IRI) || !s.Windowed():
		return protocol.JobSpec{}, fmt.Errorf("a cluster runs methods pbp and iri by windows only, not %s with window %d", s.Method, s.Window)
	}
	if s.Method == IRI && rasterElimination(s, true) {
		// A raster iri job: the .grid read by windows, never into memory.
		h, err := gridHeader(s.Model)
		if err != nil {
			return protocol.JobSpec{}, err
		}
		spec, err := s.wire(false, h.Width, h.Height, h.Labels)
		if err != nil {
			return spec, err
		}
		spec.Method, spec.Halo = protocol.MethodIRI, rasterEliminationPlans(s, h.Width, h.Height).halo
		return spec, spec.Validate()
	}
	if s.Method == IRI {
		p, err := LoadProblem(s.Model, s.NoEvidence)
		if err != nil {
			return protocol.JobSpec{}, err
		}
		if p.Solved.NumVars() == 0 {
			return protocol.JobSpec{}, fmt.Errorf("%s: every variable is observed: nothing to solve", s.Model)
		}
		spec, err := s.wire(true, p.Solved.NumVars(), 1, maxLabels(p.Solved))
		spec.Method, spec.Halo = protocol.MethodIRI, planElimination(s, p).halo
		return spec, err
	}
	if IsGridFile(s.Model) {
		h, err := gridHeader(s.Model)
		if err != nil {
			return protocol.JobSpec{}, err
		}
		return s.wire(false, h.Width, h.Height, h.Labels)
	}
	p, err := LoadProblem(s.Model, s.NoEvidence)
	if err != nil {
		return protocol.JobSpec{}, err
	}
	if w, h, ok := rasterDims(p.Model); ok {
		return s.wire(false, w, h, maxLabels(p.Model))
	}
	if p.Solved.NumVars() == 0 {
		return protocol.JobSpec{}, fmt.Errorf("%s: every variable is observed: nothing to solve", s.Model)
	}
	return s.wire(true, p.Solved.NumVars(), 1, maxLabels(p.Solved))
}

// wirePBPIRI is Wire of a pbp+iri job: its pbp stage's spec (the layout and
// halo that pbpWindows gives it), of method pbp+iri, with both stages' rounds.
func wirePBPIRI(s Spec) (protocol.JobSpec, error) {
	pbp := s.stage(PBP)
	var spec protocol.JobSpec
	var err error
	if h, herr := gridHeader(s.Model); herr == nil && rasterElimination(s, true) {
		spec, err = pbp.wire(false, h.Width, h.Height, h.Labels)
	} else {
		p, err := LoadProblem(s.Model, s.NoEvidence)
		if err != nil {
			return protocol.JobSpec{}, err
		}
		n := p.Solved.NumVars()
		if n == 0 {
			return protocol.JobSpec{}, fmt.Errorf("%s: every variable is observed: nothing to solve", s.Model)
		}
		if plans := planElimination(s, p); plans.raster {
			spec, err = pbp.wire(false, plans.width, plans.height, maxLabels(p.Solved))
		} else {
			spec, err = pbp.wire(true, n, 1, maxLabels(p.Solved))
		}
	}
	spec.Method, spec.EliminationRounds = protocol.MethodPBPIRI, s.roundsFor(IRI)
	if err == nil {
		err = spec.Validate()
	}
	return spec, err
}

// hasEvidence says whether s is solved with MODEL.evid.
func hasEvidence(s Spec) bool {
	_, ok := uai.EvidencePathFor(s.Model)
	return ok && !s.NoEvidence
}

// FromWire is the job of a submitted spec, its model at modelPath (with
// MODEL.evid beside it when the job has evidence) and its outputs in dir; its
// reports name the model as submitted.
func FromWire(spec protocol.JobSpec, modelPath, dir string) Spec {
	p := spec.Persistency()
	method, rounds := PBP, spec.MaxRounds
	switch {
	case spec.IRI():
		method = IRI
	case spec.PBPIRI():
		method = PBPIRI
		if spec.MaxRounds != spec.EliminationRounds {
			rounds = 0 // each stage its default (a given count is both stages')
		}
	}
	name := spec.Model.Path // as submitted: a shared path, or an upload's file name
	if name == "" {
		name = spec.Model.Name
	}
	s := Spec{Model: modelPath, ModelName: name, NoEvidence: spec.Evidence == nil, Method: method, Boundary: p.Variant,
		Window: spec.Core, Halo: spec.Halo, Rounds: rounds, Workers: 1, Output: dir, Complete: completionFromWire(spec.Completion)}
	if spec.Halo == 0 {
		s.Halo = NoHalo
	}
	if a, ok := p.Solver.(persistency.Auto); ok {
		s.Solver = a.Options
	}
	return s
}

// maxLabels is the largest label count of m (at least 1): K of its label files.
func maxLabels(m *model.Model) int {
	k := 1
	for _, l := range m.LabelCounts() {
		k = max(k, int(l))
	}
	return k
}
