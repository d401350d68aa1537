package job

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// Options are how a job runs; the zero value solves in this process, quietly.
type Options struct {
	// Runtime, when set, solves the windows of a windowed job (package service:
	// over NATS); nil solves them in this process.
	Runtime Runtime
	// Note, when set, receives messages for the user (evidence applied, an
	// interrupted solve); the CLI prints them on stderr.
	Note func(string)
	// Progress, when set, is called as the job advances.
	Progress func(Progress)
}

// Progress is a running job's state: Solve (methods trws and srmp: the solver's
// progress), Pruning and Solve (a whole pbp run: the last pruning iteration, nil
// before the first, and the relaxation solve under way, nil between solves), or
// Windows (a windowed run).
type Progress struct {
	Method Method
	// Variables is the number of variables solved (free ones; a raster's pixels).
	Variables int
	// MaxIterations is the relaxation solver's cap.
	MaxIterations int
	Solve         *trws.Progress
	Pruning       *persistency.Progress
	Eliminate     *persistency.EliminateProgress
	Windows       *partition.RasterProgress
}

// Result is what a finished job wrote.
type Result struct {
	// Report is the content of report.json: *LPReport, *PBPReport or *WindowsReport.
	Report any
	// Summary is the one-line summary of the run (the CLI's last line of stdout).
	Summary string
	// Canceled says that a trws or srmp solve stopped on the context; the
	// outputs of the work done were written.
	Canceled bool
}

// InternalError marks a failure that is not the input's fault: a solver or I/O
// failure, an interrupted proof, a result that failed its own check. Errors that
// are not InternalError are bad input (a malformed file, bad options).
type InternalError struct{ Err error }

func (e InternalError) Error() string { return e.Err.Error() }
func (e InternalError) Unwrap() error { return e.Err }

// Internal wraps err as an InternalError.
func Internal(err error) error { return InternalError{err} }

// Run runs the job s and writes its outputs in s.Output: whole or by windows
// (with a window, or a .grid file: methods pbp, iri and pbp+iri), in this
// process or through opt.Runtime. A pbp run writes nothing unless its proof was checked;
// an interrupted pbp run writes nothing and returns an InternalError; an
// interrupted trws or srmp solve writes the outputs of the work done.
func Run(ctx context.Context, s Spec, opt Options) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	r := &runner{spec: s.withDefaults(), opt: opt, digest: digestFile(s.Model)}
	if r.spec.Method != PBP && !r.outOfCoreElimination() {
		err := r.spec.checkInMemory()
		if errors.Is(err, errTooLarge) && s.Method == "" {
			// The default's label elimination reads the model into memory.
			r.note(err.Error() + ": proving by pbp alone, out of core")
			r.spec = s.stage(PBP).withDefaults()
			err = nil
		}
		if err != nil {
			return nil, err
		}
	}
	if r.spec.Windowed() {
		if r.spec.Method == PBP {
			return r.solveWindowed(ctx)
		}
		return r.eliminateWindows(ctx)
	}
	p, err := LoadProblem(s.Model, s.NoEvidence)
	if err != nil {
		return nil, err
	}
	if s.Method == "" && r.spec.Method == PBPIRI {
		if n := persistency.VerificationSize(p.Solved); n > maxDefaultEliminationEntries {
			r.note(fmt.Sprintf("label elimination would build verification tables of %d entries (more than %d): proving by pbp alone (--method pbp+iri runs both anyway)", n, maxDefaultEliminationEntries))
			r.spec.Method = PBP
		}
	}
	switch r.spec.Method {
	case PBP:
		return r.solvePBP(ctx, p)
	case IRI, PBPIRI:
		return r.solveIRI(ctx, p)
	}
	return r.solveLP(ctx, p)
}

// maxDefaultEliminationEntries bounds the verification problems of the default
// method: label elimination builds explicit tables (8 bytes an entry, and a
// float32 copy in the solver; persistency.VerificationSize), so a model past
// this bound gets pbp alone unless asked for more.
var maxDefaultEliminationEntries int64 = 1 << 27 // a variable for the tests

// runner is one run of a job.
type runner struct {
	spec   Spec
	opt    Options
	digest *fileDigest // the model file's, for the report's Provenance
}

func (r *runner) note(msg string) {
	if r.opt.Note != nil {
		r.opt.Note(msg)
	}
}

func (r *runner) noteEvidence(ev *Evidence) {
	if ev != nil {
		r.note(ev.Note())
	}
}

// NewID is a fresh job id: the time and a random suffix.
func NewID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
