package coordinator

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/protocol"
)

// An iri job (protocol.MethodIRI) keeps its domains in a partition.Merger, in
// memory: a window's task carries its undecided nodes and the domains of their
// extent, its result the window's elimination with its certificate. A worker's
// proof is not believed: the runner re-checks it on the model
// (partition.CheckWindow) before it stores the result, and a window whose proof
// fails is lost (it eliminates nothing; the reason is in the status). So the
// merged domains are those of partition.Eliminate with the same plans.
//
// A raster iri job (protocol.JobSpec.RasterIRI: a .grid eliminated out of
// core) keeps them in a partition.RasterMerger over alive planes on disk
// (RunOptions.Alive, Prior): a task carries the window's rectangles and the
// labels alive over its nodes grown by one pixel, read from the round's
// scratch planes; the worker's elimination is re-checked on the model of the
// window's extent (partition.ProvenRasterElimination) and merged in plan
// order, so the planes end as partition.EliminateRaster leaves them. The
// coordinator holds windows and bands, never the raster.

// decoded is a result ready to merge: a pbp window's labels, or an iri window's
// counters with its checked elimination (elim, its certificates dropped).
type decoded struct {
	*partition.WindowResult
	elim *persistency.Elimination
	// proof is the window's proof as it came (the result file format), kept
	// for RunOptions.Proofs.
	proof []byte
	// worker is the worker that sent it.
	worker string
	// A raster iri window's checked elimination (its certificates dropped)
	// and its work (without its domains: what Merge needs).
	relim *partition.RasterElimination
	rwork partition.RasterWork
}

// size is what a decoded result holds in the cache, roughly, in bytes.
func (d decoded) size() int64 {
	n := 4*(len(d.Persistent)+len(d.Labeling)) + len(d.proof) + 8*len(d.rwork.Nodes)
	e := d.elim
	if d.relim != nil {
		e = d.relim.Result
		n += 8 * len(d.relim.Vars)
	}
	if e != nil {
		for _, st := range append([]persistency.Stage{{Test: e.Test, Alive: e.Alive}}, e.Earlier...) {
			n += 8 * len(st.Test)
			for _, ls := range st.Alive {
				n += 32 + 8*len(ls)
			}
		}
	}
	return int64(n)
}

// decoder returns the check of a result message against window id's task
// and its decoding, to run on any goroutine: what it needs of the runner's
// maps is read here.
func (r *Runner) decoder(id WindowID) func(protocol.WindowResult) (decoded, error) {
	var decode func(protocol.WindowResult) (decoded, error)
	switch {
	case r.merger != nil:
		w := r.work(id.Window)
		decode = func(msg protocol.WindowResult) (decoded, error) { return r.decodeElimination(id, w, msg) }
	case r.rmerger != nil:
		// The work (the window's domains) is read once the decoding runs, so
		// that waiting checks hold no domains: the scratch planes it reads
		// change only when the next round starts, after every check has
		// ended (PrepareRound waits for them).
		win := r.job.Windows[id.Window]
		decode = func(msg protocol.WindowResult) (decoded, error) {
			w, err := r.rmerger.Window(win)
			if err != nil {
				return decoded{}, err
			}
			return r.decodeRasterElimination(id, w, msg)
		}
	default:
		task, check := r.task(id), r.proofCheck(id)
		decode = func(msg protocol.WindowResult) (decoded, error) { return r.decodeProven(task, msg, check) }
	}
	return func(msg protocol.WindowResult) (decoded, error) {
		dec, err := decode(msg)
		dec.worker = msg.Worker
		return dec, err
	}
}

// proofCheck is the check of pbp window id's claimed persistent labels against
// its proof (partition.CheckRasterWindow, CheckGraphWindow) on the job's model
// and the round's fixed labels (Stores.Scratch, unchanged while the round's
// results are checked).
func (r *Runner) proofCheck(id WindowID) func(claimed []int32, proof partition.ProofSource) error {
	if r.graph == nil {
		win := r.job.Windows[id.Window]
		return func(claimed []int32, proof partition.ProofSource) error {
			return partition.CheckRasterWindow(r.opt.Raster, win, r.stores.Scratch, claimed, proof)
		}
	}
	nodes := r.job.Regions[id.Window].Nodes
	return func(claimed []int32, proof partition.ProofSource) error {
		ext := partition.WindowExtent(r.graph, nodes)
		fixed := make([]int32, len(ext))
		if err := partition.ReadVars(r.stores.Scratch, ext, fixed); err != nil {
			return err
		}
		return partition.CheckGraphWindow(r.graph, nodes, fixed, claimed, proof)
	}
}

// decodeProven decodes a pbp window's result (its task given) and has check
// accept its proof, which is decoded within what a proof of the window's
// problem can hold (partition.ProofBytes). Like decodeElimination it may run on
// other goroutines than Run's.
func (r *Runner) decodeProven(task protocol.WindowTask, msg protocol.WindowResult, check func([]int32, partition.ProofSource) error) (decoded, error) {
	res, err := protocol.DecodeResult(r.spec, task, msg)
	if err != nil {
		return decoded{}, err
	}
	if err := check(res.Persistent, partition.ProofBytes(msg.Proof)); err != nil {
		return decoded{}, fmt.Errorf("its proof does not hold: %w", err)
	}
	dec := decoded{WindowResult: res}
	if r.opt.Proofs != nil && res.Vars > 0 {
		dec.proof = msg.Proof
	}
	return dec, nil
}

// decodeElimination decodes the result of iri window id, whose work is w, and
// checks its proof. It reads only what does not change during a run (the model,
// the spec) and w, so checks may run on other goroutines than Run's.
func (r *Runner) decodeElimination(id WindowID, w partition.WindowWork, msg protocol.WindowResult) (decoded, error) {
	if err := r.checkElimination(id, len(w.Nodes), msg); err != nil {
		return decoded{}, err
	}
	if msg.Vars != len(w.Vars) {
		return decoded{}, fmt.Errorf("a result over %d variables for a window of %d", msg.Vars, len(w.Vars))
	}
	e, err := partition.ProvenWindowElimination(r.graph, w, partition.ProofBytes(msg.Elimination))
	if err != nil {
		return decoded{}, fmt.Errorf("its proof does not hold: %w", err)
	}
	dec := r.decodedElimination(msg, e)
	dec.elim = e
	return dec, nil
}

// checkElimination checks what an iri result must say of window id, which
// has nodes nodes to eliminate, before its proof is checked.
func (r *Runner) checkElimination(id WindowID, nodes int, msg protocol.WindowResult) error {
	switch {
	case msg.Job != r.spec.Job || msg.Round != id.Round || msg.Window != id.Window:
		return fmt.Errorf("result %s/%d/%d for window %d/%d", msg.Job, msg.Round, msg.Window, id.Round, id.Window)
	case nodes == 0:
		return fmt.Errorf("a result for window %d/%d, which has nothing to eliminate", id.Round, id.Window)
	case len(msg.Elimination) == 0:
		return fmt.Errorf("a result without its elimination")
	}
	return nil
}

// decodedElimination is the decoded result of msg, whose proof e holds:
// merging needs e's maps only, so its certificates go.
func (r *Runner) decodedElimination(msg protocol.WindowResult, e *persistency.Elimination) decoded {
	e.Certificate = nil
	for i := range e.Earlier {
		e.Earlier[i].Certificate = nil
	}
	dec := decoded{WindowResult: &partition.WindowResult{Vars: msg.Vars, SolverIterations: msg.SolverIterations, Seconds: msg.Seconds}}
	if r.opt.Proofs != nil {
		dec.proof = msg.Elimination
	}
	return dec
}

// decodeRasterElimination decodes the result of raster iri window id, whose
// work is w, and checks its proof on the model of the window's extent
// (partition.ProvenRasterElimination). It reads only the raster model, the
// spec and w, so checks may run on other goroutines than Run's.
func (r *Runner) decodeRasterElimination(id WindowID, w partition.RasterWork, msg protocol.WindowResult) (decoded, error) {
	if err := r.checkElimination(id, len(w.Nodes), msg); err != nil {
		return decoded{}, err
	}
	e, err := partition.ProvenRasterElimination(r.opt.Raster, w, partition.ProofBytes(msg.Elimination))
	if err != nil {
		return decoded{}, fmt.Errorf("its proof does not hold: %w", err)
	}
	if msg.Vars != len(e.Vars) {
		return decoded{}, fmt.Errorf("a result over %d variables for a window of %d", msg.Vars, len(e.Vars))
	}
	dec := r.decodedElimination(msg, e.Result)
	w.Domains = nil // merging needs the work's rectangles and nodes
	dec.relim, dec.rwork = e, w
	return dec, nil
}

// rasterEliminationTask is prepare for a raster iri window: its rectangles
// and the labels alive over its nodes grown by one pixel (the round's scratch
// planes), inline while within half the server's message limit, else in the
// object store. A window without an undecided pixel is not sent.
func (r *Runner) rasterEliminationTask(id WindowID) (protocol.WindowTask, []object, bool, error) {
	win := r.job.Windows[id.Window]
	w, err := r.rmerger.Window(win)
	if err != nil || len(w.Nodes) == 0 {
		return protocol.WindowTask{}, nil, false, err
	}
	domains := protocol.EncodeRasterDomains(w.Domains, r.spec.Labels)
	job := r.spec.Job
	d := protocol.NewPayloadWithin(domains, protocol.DomainsObject(job, id.Round, id.Window), int(r.res.Conn.MaxPayload()/2))
	var objects []object
	if d.Object != "" {
		objects = append(objects, object{d.Object, domains})
	}
	return protocol.WindowTask{Job: job, Round: id.Round, Window: id.Window, Core: protocol.Rect(win.Core), Nodes: protocol.Rect(win.Nodes), Domains: &d}, objects, true, nil
}

// RasterElimination is a raster iri job's summary once Run has returned done
// (nil for other jobs): the stores and planes hold what
// partition.EliminateRaster leaves with the same plans — the labels alive, the
// labeling within them, the persistent map — and the counts are the job's.
func (r *Runner) RasterElimination() *partition.RasterEliminationResult {
	if r.rres == nil {
		return nil
	}
	res := *r.rres
	s := r.Summary()
	res.Rounds, res.Windows, res.Level = r.job.Rounds, r.job.WindowsTotal, r.job.Level
	res.Solved, res.MaxWindowVars, res.SolverIterations, res.WindowSeconds = s.Solved, s.MaxWindowVars, s.SolverIterations, s.WindowSeconds
	return &res
}

// checked is the outcome of a result's proof check, run off Run's goroutine
// (Runner.check) and handed back to it.
type checked struct {
	m      jetstream.Msg
	id     WindowID
	worker string
	dec    decoded
	err    error
}

// check reads (load) and checks a result on a goroutine of its own, at most
// GOMAXPROCS at once, so that the coordinator checks as fast as its cores
// allow while it goes on receiving; Run merges the outcome (onChecked). A
// check waiting for its turn when ctx ends (a cancel, a shutdown, a lost
// leadership) is dropped; one under way ends within what its task allows:
// every check is bounded by the window's problem, never by what the message
// asks (persistency.MaxCheckEnumeration).
func (r *Runner) check(ctx context.Context, m jetstream.Msg, id WindowID, worker string, load func() (protocol.WindowResult, error)) {
	r.checking[id] = true
	decode := r.decoder(id)
	go func() {
		select {
		case r.checkSlots <- struct{}{}:
		case <-ctx.Done():
			return // Run returns: the message is redelivered to a successor
		}
		msg, err := load()
		var dec decoded
		if err == nil {
			dec, err = decode(msg)
		}
		<-r.checkSlots
		select {
		case r.checks <- checked{m: m, id: id, worker: worker, dec: dec, err: err}:
		case <-r.done: // Run returned: the message is redelivered to a successor
		}
	}()
}

// onChecked stores a checked iri result, or sends its window again if the
// proof failed (Runner.retry).
func (r *Runner) onChecked(c checked) {
	delete(r.checking, c.id)
	if !r.job.current(c.id) || r.job.State[c.id.Window] != Queued {
		c.m.Ack()
		r.m.Duplicates.Inc()
		r.apply(ResultStored(c.id)) // counted as a duplicate
		return
	}
	if c.err != nil {
		r.reject(c.m, "", c.err)
		r.retry(c.id, fmt.Sprintf("window %d/%d: unusable result from %s: %v", c.id.Round, c.id.Window, c.worker, c.err))
		return
	}
	r.stored(c.m, c.id, c.worker, c.dec)
}

// work is the work of window i of the current round of an iri job.
func (r *Runner) work(i int) partition.WindowWork {
	w, ok := r.works[i]
	if !ok {
		w = r.merger.Window(r.job.Regions[i])
		r.works[i] = w
	}
	return w
}

// eliminationTask is prepare for an iri window: its undecided nodes and the
// domains over their extent, both inline while the task stays within half the
// server's message limit, else both in the object store.
func (r *Runner) eliminationTask(id WindowID) (protocol.WindowTask, []object, bool, error) {
	w := r.work(id.Window)
	if len(w.Nodes) == 0 {
		return protocol.WindowTask{}, nil, false, nil
	}
	nodes := encodeNodes(w.Nodes, r.spec.Width)
	domains := protocol.EncodeDomains(w.Domains, w.LabelCounts(r.graph))
	limit := int(r.res.Conn.MaxPayload() / 2)
	if len(nodes.Data)+len(domains) > limit {
		limit = 0 // both to the object store
	}
	job := r.spec.Job
	g := &protocol.GraphWindow{Nodes: protocol.NewValues(nodes, protocol.NodesObject(job, id.Round, id.Window), limit)}
	d := protocol.NewPayloadWithin(domains, protocol.DomainsObject(job, id.Round, id.Window), limit)
	g.Domains = &d
	var objects []object
	if g.Nodes.Data.Object != "" {
		objects = append(objects, object{g.Nodes.Data.Object, nodes.Data})
	}
	if d.Object != "" {
		objects = append(objects, object{d.Object, domains})
	}
	return protocol.WindowTask{Job: job, Round: id.Round, Window: id.Window, Graph: g}, objects, true, nil
}

// Elimination is an iri job's merged elimination once Run has returned done
// (nil for other jobs): the domains and labeling partition.Eliminate gives with
// the same plans, with the job's rounds, windows and level. Its Proofs are
// empty: every window was checked before its merge.
func (r *Runner) Elimination() *partition.Elimination {
	if r.merger == nil {
		return nil
	}
	res := r.merger.Result()
	res.Rounds, res.Windows, res.Level = r.job.Rounds, r.job.WindowsTotal, r.job.Level
	return res
}
