package protocol

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"
)

// Boundary variants (persistency.Variant's String and ParseVariant).
const (
	VariantInvariant = "invariant"
	VariantOriginal  = "original"
)

// Methods (JobSpec.Method): Algorithm 1 with boundary potentials, or label
// elimination by iterative relaxed inference.
const (
	MethodPBP = "pbp"
	MethodIRI = "iri"
	// MethodPBPIRI is pbp's windows, then label elimination from the labels
	// they proved: a job of this method is a pbp job (its spec's layout and
	// windows are pbp's; workers solve its tasks as pbp's) followed by an iri
	// job of its own id, IRIStage(job).
	MethodPBPIRI = "pbp+iri"
)

// iriStageSuffix ends the id of a pbp+iri job's second stage.
const iriStageSuffix = "--iri"

// IRIStage is the job id of the iri stage of pbp+iri job: its own tasks,
// results, consumer and spec; its status is the job's (coordinator.RunOptions
// StatusAs).
func IRIStage(job string) string { return job + iriStageSuffix }

// StageOf is the job a job id is a stage of: job itself, or the pbp+iri job
// whose second stage it is (IRIStage).
func StageOf(job string) string { return strings.TrimSuffix(job, iriStageSuffix) }

// ValidateSubmitted checks a job id given by a user: ValidateJob, and not the
// id of a pbp+iri job's second stage.
func ValidateSubmitted(job string) error {
	if strings.HasSuffix(job, iriStageSuffix) {
		return fmt.Errorf("job id %q: ids ending in %q are the second stages of pbp+iri jobs", job, iriStageSuffix)
	}
	return ValidateJob(job)
}

// MaxSide bounds raster sides and coordinates, so that products of them never
// overflow.
const MaxSide = 1 << 24

// MaxLabels bounds the label count, so that label+1 fits an int32.
const MaxLabels = math.MaxInt32 - 1

// Rect is the rectangle [X0, X0+W) × [Y0, Y0+H) of a raster, as
// partition.Rect: protocol.Rect(r) converts one.
type Rect struct {
	X0 int `msgpack:"x"`
	Y0 int `msgpack:"y"`
	W  int `msgpack:"w"`
	H  int `msgpack:"h"`
}

// Pixels is W·H.
func (r Rect) Pixels() int { return r.W * r.H }

// Contains reports whether s lies inside r.
func (r Rect) Contains(s Rect) bool {
	return s.X0 >= r.X0 && s.Y0 >= r.Y0 && s.X0+s.W <= r.X0+r.W && s.Y0+s.H <= r.Y0+r.H
}

// Validate checks that r is non-empty and inside [0, MaxSide)².
func (r Rect) Validate() error {
	if r.X0 < 0 || r.Y0 < 0 || r.W < 1 || r.H < 1 || r.W > MaxSide-r.X0 || r.H > MaxSide-r.Y0 {
		return fmt.Errorf("rectangle %+v: want x0, y0 ≥ 0, w, h ≥ 1 and x0+w, y0+h ≤ %d", r, MaxSide)
	}
	return nil
}

// ModelRef locates a job's model: a path on a filesystem that every worker
// shares, or an object in ObjectBucket with its size and CRC32C (exactly one).
// Name is the model file's base name, whose extension says its format (.grid, or
// a UAI file, possibly .gz or .xz); it is required for an object.
type ModelRef struct {
	Path   string `msgpack:"p,omitempty"`
	Object string `msgpack:"o,omitempty"`
	Size   int64  `msgpack:"s,omitempty"`
	CRC32C uint32 `msgpack:"c,omitempty"`
	Name   string `msgpack:"n,omitempty"`
}

// FileName is Name, or the base name of Path.
func (m ModelRef) FileName() string {
	if m.Name != "" || m.Path == "" {
		return m.Name
	}
	return filepath.Base(m.Path)
}

// Validate checks that exactly one of Path and Object is set.
func (m ModelRef) Validate() error {
	switch {
	case (m.Path == "") == (m.Object == ""):
		return fmt.Errorf("model: want exactly one of a path (%q) and an object (%q)", m.Path, m.Object)
	case m.Path != "" && (m.Size != 0 || m.CRC32C != 0):
		return fmt.Errorf("model: path %q with an object size %d or CRC32C %08x", m.Path, m.Size, m.CRC32C)
	case m.Object != "" && m.Size < 0:
		return fmt.Errorf("model: object %q of negative size %d", m.Object, m.Size)
	case m.Object != "" && m.Name == "":
		return fmt.Errorf("model: object %q without a file name (its format)", m.Object)
	case strings.ContainsAny(m.Name, "/\\") || m.Name == "." || m.Name == "..":
		return fmt.Errorf("model: file name %q is not a base name", m.Name)
	case m.Object != "":
		return ValidateObject(m.Object)
	}
	return nil
}

// TRWSOptions are trws.Options without the callback.
type TRWSOptions struct {
	MaxIterations   int     `msgpack:"i"`
	GapTolerance    float64 `msgpack:"g"`
	StallIterations int     `msgpack:"si"`
	StallTolerance  float64 `msgpack:"st"`
	CheckEvery      int     `msgpack:"ce"`
}

// Validate checks that every option is non-negative and finite.
func (o TRWSOptions) Validate() error {
	if o.MaxIterations < 0 || o.StallIterations < 0 || o.CheckEvery < 0 || !finiteNonNeg(o.GapTolerance) || !finiteNonNeg(o.StallTolerance) {
		return fmt.Errorf("trws options %+v: want non-negative finite values", o)
	}
	return nil
}

func finiteNonNeg(f float64) bool { return f >= 0 && !math.IsInf(f, 1) }

// Layouts of a job's model (JobSpec.Layout).
const (
	// LayoutRaster (or empty): a W×H raster solved by rectangles (partition.SolveRaster).
	LayoutRaster = "raster"
	// LayoutGraph: a model of any structure solved by the BFS regions of
	// partition.RegionPlan (partition.Solve).
	LayoutGraph = "graph"
)

// JobSpec is a job as submitted: a model solved by windows, a raster by rectangles
// (see partition.SolveRaster, whose options these are) or a graph by regions (see
// partition.Solve with partition.RegionPlan). It is stored in JobBucket, where
// workers read it for the model and the solver options of a task.
type JobSpec struct {
	Job   string   `msgpack:"j"`
	Model ModelRef `msgpack:"m"`
	// Layout is LayoutRaster (or empty, as before layouts existed) or LayoutGraph.
	Layout string `msgpack:"ly,omitempty"`
	// Width, Height and Labels (the largest label count, K) describe the raster.
	// A graph job has Width variables (of the model conditioned on the evidence,
	// the one its windows are planned on) and Height 1: its labels live in
	// Width×1 rasters.
	Width  int `msgpack:"w"`
	Height int `msgpack:"h"`
	Labels int `msgpack:"k"`
	// Core and Halo size the windows: in pixels for a raster; in variables per
	// region and graph steps for a graph.
	Core      int `msgpack:"c"`
	Halo      int `msgpack:"hl"`
	MaxRounds int `msgpack:"r"`
	// Variant is VariantInvariant or VariantOriginal.
	Variant   string      `msgpack:"v"`
	TRWS      TRWSOptions `msgpack:"t"`
	CreatedAt time.Time   `msgpack:"at"`
	// Evidence, when set, is a UAI evidence file (inline, or EvidenceObject):
	// the observed pixels, fixed before round 0.
	Evidence *Payload `msgpack:"e,omitempty"`
	// Method is MethodPBP (or empty), MethodIRI or MethodPBPIRI. An iri job's
	// results are eliminations (WindowResult.Elimination); a graph iri job's
	// windows are node lists (GraphWindow with Domains), a raster iri job's
	// (a .grid file, out of core) rectangles with the labels alive around them
	// (WindowTask.Domains).
	Method string `msgpack:"mt,omitempty"`
	// EliminationRounds are a pbp+iri job's rounds of its iri stage
	// (MaxRounds are its pbp stage's).
	EliminationRounds int `msgpack:"er,omitempty"`
	// Completion, when set, completes what the job's proofs leave (package
	// complete) within its budget; nil: no completion (a job submitted
	// before the completion existed).
	Completion *Completion `msgpack:"cp,omitempty"`
}

// Completion is a job's completion budget: States labelings enumerated, Table
// entries of dynamic programming (0: the defaults), EngineSeconds of toulbar2
// a component (0: the default, negative: none).
type Completion struct {
	States        float64 `msgpack:"s,omitempty"`
	Table         float64 `msgpack:"t,omitempty"`
	EngineSeconds float64 `msgpack:"e,omitempty"`
}

// The largest completion budget a job may ask for (job.ParseCompletion's).
const (
	MaxCompletionStates  = 1 << 40
	MaxCompletionTable   = 1 << 32
	MaxCompletionSeconds = 24 * 3600
)

// Validate checks the budget against the largest.
func (c Completion) Validate() error {
	switch {
	case !(c.States >= 0 && c.States <= MaxCompletionStates):
		return fmt.Errorf("completion states %g: want 0 to %d", c.States, int64(MaxCompletionStates))
	case !(c.Table >= 0 && c.Table <= MaxCompletionTable):
		return fmt.Errorf("completion table %g: want 0 to %d", c.Table, int64(MaxCompletionTable))
	case !(c.EngineSeconds <= MaxCompletionSeconds) || math.IsNaN(c.EngineSeconds):
		return fmt.Errorf("completion engine seconds %g: want at most %d", c.EngineSeconds, MaxCompletionSeconds)
	}
	return nil
}

// IRI says whether the job eliminates labels (Method MethodIRI).
func (s JobSpec) IRI() bool { return s.Method == MethodIRI }

// PBPIRI says whether the job is pbp's windows followed by an elimination
// (Method MethodPBPIRI).
func (s JobSpec) PBPIRI() bool { return s.Method == MethodPBPIRI }

// MethodName is the job's method, MethodPBP when unset.
func (s JobSpec) MethodName() string {
	if s.Method == "" {
		return MethodPBP
	}
	return s.Method
}

// Validate checks every field.
func (s JobSpec) Validate() error {
	if err := ValidateJob(s.Job); err != nil {
		return err
	}
	if err := s.Model.Validate(); err != nil {
		return err
	}
	switch s.Layout {
	case "", LayoutRaster:
		if err := (Rect{W: s.Width, H: s.Height}).Validate(); err != nil {
			return fmt.Errorf("raster %d×%d: want sides in [1, %d]", s.Width, s.Height, MaxSide)
		}
	case LayoutGraph:
		if s.Width < 1 || s.Width > MaxSide || s.Height != 1 {
			return fmt.Errorf("graph of %d×%d variables: want 1 to %d variables and height 1", s.Width, s.Height, MaxSide)
		}
	default:
		return fmt.Errorf("layout %.40q: want %q or %q", s.Layout, LayoutRaster, LayoutGraph)
	}
	switch {
	case s.Labels < 1 || s.Labels > MaxLabels:
		return fmt.Errorf("label count %d: want 1 to %d", s.Labels, MaxLabels)
	case s.Core < 1 || s.Core > MaxSide || s.Halo < 0 || s.Halo > MaxSide:
		return fmt.Errorf("window core %d, halo %d: want core in [1, %d], halo in [0, %d]", s.Core, s.Halo, MaxSide, MaxSide)
	case s.MaxRounds < 1:
		return fmt.Errorf("max rounds %d: want ≥ 1", s.MaxRounds)
	case s.Variant != VariantInvariant && s.Variant != VariantOriginal:
		return fmt.Errorf("variant %q: want %q or %q", s.Variant, VariantInvariant, VariantOriginal)
	case s.Method != "" && s.Method != MethodPBP && s.Method != MethodIRI && s.Method != MethodPBPIRI:
		return fmt.Errorf("method %.40q: want %q, %q or %q", s.Method, MethodPBP, MethodIRI, MethodPBPIRI)
	case s.PBPIRI() && len(s.Job) > MaxJobLen-len(iriStageSuffix):
		return fmt.Errorf("job id %q of a %s job: at most %d characters (its second stage's id is %d longer)", s.Job, MethodPBPIRI, MaxJobLen-len(iriStageSuffix), len(iriStageSuffix))
	}
	if s.Evidence != nil {
		if err := s.Evidence.Validate(); err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
	}
	if s.Completion != nil {
		if err := s.Completion.Validate(); err != nil {
			return err
		}
	}
	return s.TRWS.Validate()
}

// normalize puts CreatedAt in UTC: msgpack carries no zone, and the decoder's
// choice (Local) would make the decoded value depend on the machine.
func (s *JobSpec) normalize() { s.CreatedAt = s.CreatedAt.UTC() }

// Fixed is the labels a window conditions on: label+1 for a pixel fixed before
// the round, 0 for a free one, row-major over Rect, as the Data of a Labels of
// Width bytes per value. Data is inline, or an object: the window's own
// (FixedObject), or the round's over the whole raster (RoundFixedObject),
// shared by every window of the round.
type Fixed struct {
	Rect  Rect    `msgpack:"r"`
	Width uint8   `msgpack:"w"`
	Data  Payload `msgpack:"d"`
}

// NewFixed returns the Fixed of labels over rect, inline when it fits
// InlineLimit and otherwise as object, which the caller must put in
// ObjectBucket.
func NewFixed(rect Rect, labels Labels, object string) Fixed {
	return NewFixedWithin(rect, labels, object, InlineLimit)
}

// NewFixedWithin is NewFixed with a lower inline limit (NewPayloadWithin).
func NewFixedWithin(rect Rect, labels Labels, object string, limit int) Fixed {
	return Fixed{Rect: rect, Width: labels.Width, Data: NewPayloadWithin(labels.Data, object, limit)}
}

// Labels returns the labels given the content of Data (Data.Inline, or the
// object's bytes after Data.Verify).
func (f Fixed) Labels(content []byte) Labels {
	return Labels{Width: f.Width, Count: f.Rect.Pixels(), Data: content}
}

// Validate checks the rectangle, the width, the payload and its size.
func (f Fixed) Validate() error {
	if err := f.Rect.Validate(); err != nil {
		return fmt.Errorf("fixed labels: %w", err)
	}
	if f.Width != 1 && f.Width != 2 && f.Width != 4 {
		return fmt.Errorf("fixed labels: width %d, want 1, 2 or 4", f.Width)
	}
	if err := f.Data.Validate(); err != nil {
		return fmt.Errorf("fixed labels: %w", err)
	}
	size, have := int64(f.Rect.Pixels())*int64(f.Width), int64(len(f.Data.Inline))
	if f.Data.Object != "" {
		have = f.Data.Size
	}
	if have != size {
		return fmt.Errorf("fixed labels: %+v at %d bytes per value need %d bytes, have %d", f.Rect, f.Width, size, have)
	}
	return nil
}

// WindowTask asks a worker to solve a window of a job's round (JobSpec has the
// model and the options). Delivery attempts are not in the message: JetStream
// metadata has them. A raster job's task has Core, Nodes and Fixed; a graph
// job's has Graph only.
type WindowTask struct {
	Job    string `msgpack:"j"`
	Round  int    `msgpack:"r"`
	Window int    `msgpack:"i"`
	// Core tiles the raster; Nodes is the core plus the halo, clipped.
	Core  Rect `msgpack:"c"`
	Nodes Rect `msgpack:"n"`
	// Fixed, if set, covers Nodes grown by 2 pixels, clipped to the raster (what
	// the worker conditions on; Validate checks that it covers Nodes, the worker,
	// which knows the raster, the rest); nil when no label is fixed there.
	Fixed *Fixed `msgpack:"f,omitempty"`
	// Graph is the window of a graph job.
	Graph *GraphWindow `msgpack:"g,omitempty"`
	// Domains is a raster iri job's window's labels alive before the round
	// over RasterExtent(Nodes) (the nodes grown by one pixel, clipped), as
	// EncodeDomains packs them with the job's Labels bits a pixel, row-major;
	// inline or DomainsObject. The window's nodes — the variables its map may
	// move — are the pixels of Nodes with more than one label alive there
	// (RasterWindowNodes). Fixed is nil then.
	Domains *Payload `msgpack:"a,omitempty"`
}

// Validate checks the ids, that Core lies in Nodes, and that Fixed covers Nodes;
// for a graph window, the shapes of its lists (GraphWindow.Validate).
func (t WindowTask) Validate() error {
	if err := validateWindow(t.Job, t.Round, t.Window); err != nil {
		return err
	}
	if t.Graph != nil {
		if t.Core != (Rect{}) || t.Nodes != (Rect{}) || t.Fixed != nil || t.Domains != nil {
			return errors.New("a graph window with raster rectangles, fixed labels or raster domains")
		}
		return t.Graph.Validate()
	}
	if err := t.Core.Validate(); err != nil {
		return fmt.Errorf("core: %w", err)
	}
	if err := t.Nodes.Validate(); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if !t.Nodes.Contains(t.Core) {
		return fmt.Errorf("core %+v not inside nodes %+v", t.Core, t.Nodes)
	}
	if t.Fixed != nil {
		if t.Domains != nil {
			return errors.New("a raster window with both fixed labels and domains")
		}
		if err := t.Fixed.Validate(); err != nil {
			return err
		}
		if !t.Fixed.Rect.Contains(t.Nodes) {
			return fmt.Errorf("fixed labels over %+v do not cover nodes %+v", t.Fixed.Rect, t.Nodes)
		}
	}
	if t.Domains != nil {
		if err := t.Domains.Validate(); err != nil {
			return fmt.Errorf("raster window domains: %w", err)
		}
	}
	return nil
}

func validateWindow(job string, round, window int) error {
	if err := ValidateJob(job); err != nil {
		return err
	}
	if round < 0 || window < 0 {
		return fmt.Errorf("round %d, window %d: want ≥ 0", round, window)
	}
	return nil
}

// WindowResult is a solved window. A window without a free pixel has empty
// labels and Vars 0.
type WindowResult struct {
	Job    string `msgpack:"j"`
	Round  int    `msgpack:"r"`
	Window int    `msgpack:"i"`
	Worker string `msgpack:"wk"`
	// Persistent is over the task's Nodes: label+1 where proven, else 0.
	Persistent Labels `msgpack:"p"`
	// Relaxed is over the task's Core (a graph window's: over its nodes, the
	// coordinator keeps its core): label+1 of the relaxed labeling of a free
	// pixel, 0 for a fixed one.
	Relaxed           Labels  `msgpack:"l"`
	PruningIterations int     `msgpack:"pi"`
	SolverIterations  int     `msgpack:"si"`
	Vars              int     `msgpack:"v"`
	Seconds           float64 `msgpack:"s"`
	// Elimination is an iri window's proof: its persistency.Elimination over the
	// window's extent (partition.EliminationExtent of the task's nodes), in the
	// result file format (persistency.WriteResult), certificate included; empty
	// when nothing was eliminated. Persistent and Relaxed are empty then.
	Elimination []byte `msgpack:"e,omitempty"`
	// Proof is a raster pbp window's proof (partition.WindowResult.Proof, in the
	// result file format, persistency.EncodeResult): its Algorithm 1 result over
	// the window's extent, certificate included, which the coordinator re-checks
	// (partition.CheckRasterWindow) before merging Persistent. Empty when the
	// window had no free node.
	Proof []byte `msgpack:"pf,omitempty"`
}

// Validate checks the ids, the shapes of the labels and the counters.
func (r WindowResult) Validate() error {
	if err := validateWindow(r.Job, r.Round, r.Window); err != nil {
		return err
	}
	if err := r.Persistent.Validate(); err != nil {
		return fmt.Errorf("persistent %w", err)
	}
	if err := r.Relaxed.Validate(); err != nil {
		return fmt.Errorf("relaxed %w", err)
	}
	if r.PruningIterations < 0 || r.SolverIterations < 0 || r.Vars < 0 || !finiteNonNeg(r.Seconds) {
		return errors.New("result: negative or non-finite counters")
	}
	return nil
}

// ResultRef announces a WindowResult too large to publish: its Marshal output
// is the object Result (ResultObject), to be unmarshalled with a limit of
// Result.Size after Result.Verify.
type ResultRef struct {
	Job    string  `msgpack:"j"`
	Round  int     `msgpack:"r"`
	Window int     `msgpack:"i"`
	Worker string  `msgpack:"wk"`
	Result Payload `msgpack:"o"`
}

// Validate checks the ids and that Result is an object.
func (r ResultRef) Validate() error {
	if err := validateWindow(r.Job, r.Round, r.Window); err != nil {
		return err
	}
	if r.Result.Object == "" {
		return errors.New("result reference without an object")
	}
	return r.Result.Validate()
}

// Progress reports a job's current round.
type Progress struct {
	Job      string `msgpack:"j"`
	Round    int    `msgpack:"r"`
	Done     int    `msgpack:"d"`
	Total    int    `msgpack:"t"`
	InFlight int    `msgpack:"f"`
	Failed   int    `msgpack:"x"`
	// Persistent is the number of pixels proven so far.
	Persistent int64 `msgpack:"p"`
}

// Validate checks the job and that the counts are non-negative.
func (p Progress) Validate() error {
	if err := ValidateJob(p.Job); err != nil {
		return err
	}
	if p.Round < 0 || p.Done < 0 || p.Total < 0 || p.InFlight < 0 || p.Failed < 0 || p.Persistent < 0 {
		return fmt.Errorf("progress %+v: negative count", p)
	}
	return nil
}

// Error reports a failure. Round and Window are −1 when it is not a window's.
// A permanent error fails the same way on every attempt (a bad model, a
// malformed task); others may succeed on redelivery.
type Error struct {
	Job       string `msgpack:"j"`
	Round     int    `msgpack:"r"`
	Window    int    `msgpack:"i"`
	Worker    string `msgpack:"wk"`
	Message   string `msgpack:"m"`
	Permanent bool   `msgpack:"p"`
}

// Validate checks the job and that Round and Window are ≥ −1.
func (e Error) Validate() error {
	if err := ValidateJob(e.Job); err != nil {
		return err
	}
	if e.Round < -1 || e.Window < -1 {
		return fmt.Errorf("error of round %d, window %d: want ≥ -1", e.Round, e.Window)
	}
	return nil
}

// Cancel asks the coordinator to stop a job (on CancelSubject).
type Cancel struct {
	Job    string `msgpack:"j"`
	Reason string `msgpack:"m,omitempty"`
}

// Validate checks the job.
func (c Cancel) Validate() error { return ValidateJob(c.Job) }
