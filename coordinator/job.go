// Package coordinator runs jobs: it plans a job's windows, dispatches them to
// workers, collects their results, merges them in plan order and moves to the next
// round, until the job is finished, cancelled or failed.
//
// The job lifecycle is a pure, deterministic state machine (Job), in the style of
// etcd's raft package: Apply takes an Event and returns the Actions the caller must
// perform — publish tasks, merge a stored result into the label files, copy the
// proven labels before a round, write the outputs — and reports their completion
// back as Events. Job does no I/O, starts no goroutine and reads no clock, so the
// same events give the same state and actions on every replica (the raft FSM of the
// fault-tolerance work) and in tests, without NATS:
//
//	job, actions := coordinator.NewJob(spec, proven) // proven: pixels fixed before round 0
//	for {
//		for _, a := range actions {
//			ev := perform(a) // I/O: publish, merge, copy, write; nil when no answer is due
//			...
//		}
//		actions = job.Apply(nextEvent())
//	}
//
// Merge order is the plan order of the round whatever the order results arrive in,
// so the merged labels are those of partition.SolveRaster with the same options.
package coordinator

import (
	"encoding/json"
	"fmt"

	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// Phase is where a job is in its lifecycle.
type Phase uint8

const (
	// Running: windows of the current round are out or being merged.
	Running Phase = iota
	// Finishing: every round is merged; the outputs are being written.
	Finishing
	// Done: the outputs are written.
	Done
	// Canceled by a user; nothing more is dispatched or merged.
	Canceled
	// Failed: an I/O error the job cannot recover from (Job.Err says which).
	Failed
)

var phaseNames = [...]string{"running", "finishing", "done", "canceled", "failed"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", p)
}

// Terminal says whether no event can change the job any more.
func (p Phase) Terminal() bool { return p == Done || p == Canceled || p == Failed }

// WindowState is the state of one window of the current round.
type WindowState uint8

const (
	// Queued: dispatched, no result yet.
	Queued WindowState = iota
	// Stored: its result is stored, waiting for the windows before it to merge.
	Stored
	// Merging: a Merge action is out for it.
	Merging
	// Merged into the label files.
	Merged
	// Lost: it exhausted its deliveries; it is merged as a window that proved
	// nothing (sound: an empty result changes no label) and listed in Job.Lost.
	Lost
	// LostMerging: the empty Merge action of a lost window is out.
	LostMerging
)

// Job is the state of one job. Its fields are exported so that replicas can
// snapshot and restore it; change it only through Apply.
type Job struct {
	Spec  protocol.JobSpec
	Phase Phase
	Err   string // why the job failed
	// Round is the current round; Windows its plan (partition.RasterWindows with
	// shift Round·Core/2) and State the state of each window, in plan order. A
	// graph job's plan is Regions instead (partition.RegionPlan with shift
	// partition.RegionShift), and Windows is nil.
	Round   int
	Windows []partition.RasterWindow
	Regions []partition.Window
	State   []WindowState
	// Dispatched says whether the round's tasks were dispatched.
	Dispatched bool
	// Next is the first window of the round not yet merged (the merge cursor).
	Next int
	// Pixels is Width·Height; Proven the pixels proven so far (fixed ones
	// included), RoundStart its value when the round began.
	Pixels, Proven, RoundStart int64
	// Lost lists the windows that exhausted their deliveries, over all rounds.
	Lost []WindowID
	// Duplicates counts results that arrived for a window already stored (a
	// redelivery, a second worker) or for another round; they are ignored.
	Duplicates int
	// Rounds is the number of rounds merged completely; WindowsTotal the windows
	// dispatched over all rounds.
	Rounds, WindowsTotal int
	// Label elimination (spec.Method iri): the plan's Level, raised after a
	// round that eliminated nothing or little (partition.Grows), up to MaxLevel;
	// the labels Eliminated so far and in this round.
	Level, MaxLevel             int
	Eliminated, RoundEliminated int64

	// plan returns a graph or iri job's plan of a round at a level (nil for a
	// raster job); rasterPlan a raster iri job's windows of a round at a level.
	plan       func(round, level int) partition.Plan
	rasterPlan func(round, level int) []partition.RasterWindow
}

// WindowID names a window of a job.
type WindowID struct{ Round, Window int }

// windowJSON is a WindowID in JSON: its round counted from 1, as users see
// rounds, its window an index from 0.
type windowJSON struct {
	Round  int `json:"round"`
	Window int `json:"window"`
}

// MarshalJSON writes {"round": Round+1, "window": Window}.
func (w WindowID) MarshalJSON() ([]byte, error) {
	return json.Marshal(windowJSON{w.Round + 1, w.Window})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (w *WindowID) UnmarshalJSON(data []byte) error {
	var v windowJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*w = WindowID{max(v.Round-1, 0), v.Window}
	return nil
}

// Event is something that happened to a job: a result arrived, an action completed.
type Event interface{ event() }

// ResultStored: a worker's result for (Round, Window) is stored where a Merge action
// can read it. Results of other rounds and repeated results are ignored.
type ResultStored WindowID

// DeliveriesExhausted: JetStream gave up on the task (Round, Window).
type DeliveriesExhausted WindowID

// Requeue: the stored result of (Round, Window) turned out unusable when its
// merge came (it was replaced in the results stream, or does not decode): the
// window waits for a new result, and the merges issued after it are withdrawn,
// to be issued again in plan order. The caller drops their queued actions.
type Requeue WindowID

// MergeDone: the Merge action of (Round, Window) completed; Added pixels became
// proven that were not before; an iri window Eliminated labels.
type MergeDone struct {
	WindowID
	Added, Eliminated int64
}

// RoundPrepared: the PrepareRound action completed (the proven labels are copied to
// where the round's windows condition on them).
type RoundPrepared struct{ Round int }

// OutputsWritten: the Finish action completed.
type OutputsWritten struct{}

// Cancel: a user cancelled the job.
type Cancel struct{ Reason string }

// Fail: an action failed in a way the job cannot recover from.
type Fail struct{ Reason string }

func (ResultStored) event()        {}
func (DeliveriesExhausted) event() {}
func (Requeue) event()             {}
func (MergeDone) event()           {}
func (RoundPrepared) event()       {}
func (OutputsWritten) event()      {}
func (Cancel) event()              {}
func (Fail) event()                {}

// Action is I/O the caller must perform for a job.
type Action interface{ action() }

// PrepareRound: make the proven labels the ones Round's windows condition on (copy
// the persistent map to the round's fixed labels), then report RoundPrepared.
type PrepareRound struct{ Round int }

// Dispatch: publish the tasks of these windows of Round (in this order).
type Dispatch struct {
	Round   int
	Windows []int
}

// Merge: merge the stored result of (Round, Window) into the label files, then
// report MergeDone. Merges come in plan order; perform them in the order given.
// Empty means the window has no result (it was lost): merge nothing, report
// MergeDone with Added 0.
type Merge struct {
	WindowID
	Empty bool
}

// Finish: write the outputs (the labels are final), then report OutputsWritten.
type Finish struct{}

// Purge: the job is cancelled or failed; remove its queued tasks.
type Purge struct{}

func (PrepareRound) action() {}
func (Dispatch) action()     {}
func (Merge) action()        {}
func (Finish) action()       {}
func (Purge) action()        {}

// NewJob starts a job: proven is the number of pixels fixed before round 0 (the
// evidence). The first actions prepare round 0.
func NewJob(spec protocol.JobSpec, proven int64) (*Job, []Action) {
	j := &Job{Spec: spec, Pixels: int64(spec.Width) * int64(spec.Height), Proven: proven}
	return j, j.startRound(0)
}

// NewGraphJob starts a graph job (spec.Layout protocol.LayoutGraph) whose round
// plans plan returns, partition.RegionPlan of the job's model in a run (it must
// be a deterministic function of the round: replicas and resumed jobs plan
// again). Its merges are in plan order, so the labels are those of
// partition.Solve with the same plans.
func NewGraphJob(spec protocol.JobSpec, proven int64, plan func(round int) partition.Plan) (*Job, []Action) {
	j := &Job{Spec: spec, Pixels: int64(spec.Width) * int64(spec.Height), Proven: proven,
		plan: func(round, _ int) partition.Plan { return plan(round) }}
	return j, j.startRound(0)
}

// NewEliminationJob starts an iri job (spec.Method protocol.MethodIRI) whose
// plans plan returns by round and level (deterministic, as NewGraphJob's):
// proven counts the variables with one label before round 0. Its rounds are
// partition.Eliminate's: a round that eliminates nothing or little raises the
// level (partition.Grows), and the rounds end at MaxRounds, when every variable is
// decided, or after a round at maxLevel that eliminated nothing or little.
func NewEliminationJob(spec protocol.JobSpec, proven int64, maxLevel int, plan func(round, level int) partition.Plan) (*Job, []Action) {
	j := &Job{Spec: spec, Pixels: int64(spec.Width) * int64(spec.Height), Proven: proven, MaxLevel: maxLevel, plan: plan}
	return j, j.startRound(0)
}

// NewRasterEliminationJob starts a raster iri job (spec.Method
// protocol.MethodIRI, layout raster: a .grid eliminated out of core) whose
// windows plan returns by round and level (deterministic, as NewGraphJob's):
// proven counts the pixels with one label before round 0. Its rounds are
// NewEliminationJob's; its plan is Windows, rectangles, as a raster job's.
func NewRasterEliminationJob(spec protocol.JobSpec, proven int64, maxLevel int, plan func(round, level int) []partition.RasterWindow) (*Job, []Action) {
	j := &Job{Spec: spec, Pixels: int64(spec.Width) * int64(spec.Height), Proven: proven, MaxLevel: maxLevel, rasterPlan: plan}
	return j, j.startRound(0)
}

// startRound plans round r and asks for its preparation.
func (j *Job) startRound(r int) []Action {
	j.Round, j.Next, j.RoundStart, j.Dispatched, j.RoundEliminated = r, 0, j.Proven, false, 0
	s := j.Spec
	switch {
	case j.plan != nil:
		j.Regions = j.plan(r, j.Level).Windows
	case j.rasterPlan != nil:
		j.Windows = j.rasterPlan(r, j.Level)
	default:
		j.Windows = partition.RasterWindows(s.Width, s.Height, s.Core, s.Halo, r*max(s.Core, 1)/2)
	}
	j.State = make([]WindowState, j.count())
	return []Action{PrepareRound{Round: r}}
}

// count is the number of windows of the current round.
func (j *Job) count() int {
	if j.plan != nil {
		return len(j.Regions)
	}
	return len(j.Windows)
}

// Apply applies an event and returns the actions it calls for. Events that do not
// fit the job's state (late, repeated, for another round, after the end) change
// nothing but counters, so the caller may deliver at-least-once.
func (j *Job) Apply(ev Event) []Action {
	if j.Phase.Terminal() {
		return nil
	}
	switch e := ev.(type) {
	case Cancel:
		j.Phase, j.Err = Canceled, e.Reason
		return []Action{Purge{}}
	case Fail:
		j.Phase, j.Err = Failed, e.Reason
		return []Action{Purge{}}
	case OutputsWritten:
		if j.Phase == Finishing {
			j.Phase = Done
		}
		return nil
	}
	if j.Phase != Running {
		return nil
	}
	switch e := ev.(type) {
	case RoundPrepared:
		if e.Round != j.Round || j.Dispatched {
			return nil
		}
		all := make([]int, j.count())
		for i := range all {
			all[i] = i
		}
		j.Dispatched = true
		j.WindowsTotal += len(all)
		return []Action{Dispatch{Round: j.Round, Windows: all}}
	case ResultStored:
		if !j.current(WindowID(e)) || j.State[e.Window] != Queued {
			j.Duplicates++
			return nil
		}
		j.State[e.Window] = Stored
		return j.merges()
	case DeliveriesExhausted:
		if !j.current(WindowID(e)) || j.State[e.Window] != Queued {
			return nil
		}
		j.State[e.Window] = Lost
		j.Lost = append(j.Lost, WindowID(e))
		return j.merges()
	case Requeue:
		if !j.current(WindowID(e)) || e.Window != j.Next || j.State[e.Window] != Merging {
			return nil
		}
		j.State[e.Window] = Queued
		for k := e.Window + 1; k < j.count(); k++ {
			switch j.State[k] {
			case Merging:
				j.State[k] = Stored
			case LostMerging:
				j.State[k] = Lost
			}
		}
		return nil
	case MergeDone:
		if !j.current(e.WindowID) || e.Window != j.Next || (j.State[e.Window] != Merging && j.State[e.Window] != LostMerging) {
			return nil
		}
		j.State[e.Window] = Merged
		j.Proven += e.Added
		j.Eliminated += e.Eliminated
		j.RoundEliminated += e.Eliminated
		j.Next++
		if j.Next < j.count() {
			return nil
		}
		return j.endRound()
	}
	return nil
}

func (j *Job) current(w WindowID) bool {
	return w.Round == j.Round && w.Window >= 0 && w.Window < j.count()
}

// merges returns the Merge actions that became possible: the windows from the
// cursor on whose results are stored (or lost), up to the first still queued. A
// window whose merge is out is not asked again.
func (j *Job) merges() []Action {
	var out []Action
	for i := j.Next; i < j.count(); i++ {
		switch j.State[i] {
		case Stored:
			j.State[i] = Merging
			out = append(out, Merge{WindowID: WindowID{j.Round, i}})
		case Lost:
			j.State[i] = LostMerging
			out = append(out, Merge{WindowID: WindowID{j.Round, i}, Empty: true})
		case Queued: // later windows wait for it
			return out
		}
	}
	return out
}

// endRound decides, after the last merge of a round, whether to run another.
func (j *Job) endRound() []Action {
	j.Rounds++
	stalled := j.Proven == j.RoundStart
	grow := j.Spec.IRI() && partition.Grows(j.RoundEliminated, j.Eliminated-j.RoundEliminated)
	if j.Spec.IRI() {
		stalled = j.Level >= j.MaxLevel && grow
	}
	if stalled || j.Rounds >= max(j.Spec.MaxRounds, 1) || j.Proven >= j.Pixels {
		j.Phase = Finishing
		return []Action{Finish{}}
	}
	if grow { // below MaxLevel: a growing round at MaxLevel finished the job
		j.Level++
	}
	return j.startRound(j.Round + 1)
}

// Status is a job's progress, for status pages and `partopt status`.
type Status struct {
	Job          string `json:"job"`
	Layout       string `json:"layout,omitempty"` // the spec's: a graph job's Pixels are its variables
	Phase        string `json:"phase"`
	Method       string `json:"method,omitempty"` // what the windows run: pbp, or iri (also a pbp+iri job's second stage)
	Err          string `json:"error,omitempty"`
	Round        int    `json:"round"`         // from 0 here, from 1 in JSON (Summary) and the status line
	Rounds       int    `json:"rounds_done"`   // rounds finished
	Windows      int    `json:"windows"`       // of the current round
	WindowsTotal int    `json:"windows_total"` // of all rounds so far
	Merged       int    `json:"merged"`        // windows of the current round by state
	Stored       int    `json:"stored"`
	Queued       int    `json:"queued"`
	Lost         int    `json:"lost"` // windows lost over all rounds
	Duplicates   int    `json:"duplicates"`
	Proven       int64  `json:"persistent"` // variables proven persistent
	Pixels       int64  `json:"variables"`  // the pixels of a raster, the variables of a graph
	// Label elimination: the labels eliminated so far, the plan's level.
	Eliminated int64 `json:"labels_eliminated,omitempty"`
	Level      int   `json:"level,omitempty"`
}

// Unit names what Pixels counts: "variables" for a graph job, else "pixels".
func (s Status) Unit() string {
	if s.Layout == protocol.LayoutGraph {
		return "variables"
	}
	return "pixels"
}

// windowsMethod is what spec's windows run: a pbp+iri job's own spec runs
// pbp's (its iri stage is a job of method iri).
func windowsMethod(spec protocol.JobSpec) string {
	if spec.IRI() {
		return protocol.MethodIRI
	}
	return protocol.MethodPBP
}

// Status summarises the job.
func (j *Job) Status() Status {
	st := Status{Job: j.Spec.Job, Layout: j.Spec.Layout, Phase: j.Phase.String(), Method: windowsMethod(j.Spec), Err: j.Err, Round: j.Round, Rounds: j.Rounds,
		Windows: j.count(), WindowsTotal: j.WindowsTotal, Lost: len(j.Lost), Duplicates: j.Duplicates, Proven: j.Proven, Pixels: j.Pixels,
		Eliminated: j.Eliminated, Level: j.Level}
	for _, s := range j.State {
		switch s {
		case Queued:
			st.Queued++
		case Merged:
			st.Merged++
		default:
			st.Stored++
		}
	}
	return st
}
