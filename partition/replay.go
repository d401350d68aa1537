package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/persistency"
)

// Replaying a window certificates file re-derives a windowed run's result from
// the model alone: round by round, each record's proof is checked on the model
// conditioned on the labels the replay itself fixed before that round (or
// restricted to the domains it left), the records of a round in parallel, and
// what they prove is merged in file order. Whatever the file says, the replayed
// labels are sound (the windows' improving maps compose, the package's
// Soundness); a run's outputs are verified when they claim exactly them.

// ReplayStats counts what a replay checked.
type ReplayStats struct {
	Records, Rounds int
}

// ReplayRaster replays the file's leading raster pbp records over r: persistent
// (label+1, or 0) holds the labels fixed before the first round (evidence) and
// receives the proven ones; scratch, of r's size, holds each round's fixed
// labels. The records of a round are checked on workers goroutines.
func ReplayRaster(ctx context.Context, r Raster, persistent, scratch Store, rd *ProofReader, workers int) (ReplayStats, error) {
	var st ReplayStats
	return st, replayRounds(ctx, rd, ProofRaster, workers, &st,
		func(int) error {
			_, err := CopyStore(scratch, persistent, r.Width, r.Height)
			return err
		},
		func(rec *ProofRecord) ([]int32, error) {
			n := rec.Rect
			if n.W < 1 || n.H < 1 || n.X0+n.W > r.Width || n.Y0+n.H > r.Height {
				return nil, fmt.Errorf("a window %v outside the %d×%d raster", n, r.Width, r.Height)
			}
			if int64(n.W)*int64(n.H) > MaxWindowPixels {
				return nil, fmt.Errorf("a window of %d×%d pixels, larger than any partopt solves (MaxWindowPixels)", n.W, n.H)
			}
			return ProvenRasterWindow(r, RasterWindow{Core: n, Nodes: n}, scratch, rec.Proof)
		},
		func(rec *ProofRecord, proven []int32) error {
			n := rec.Rect
			cur := make([]int32, n.Pixels())
			if err := persistent.ReadRect(n.X0, n.Y0, n.W, n.H, cur); err != nil {
				return err
			}
			mergeProven(cur, proven)
			return persistent.WriteRect(n.X0, n.Y0, n.W, n.H, cur)
		})
}

// ReplayGraph replays the file's leading graph pbp records over m (the model
// the windows were planned on): persistent, an n×1 store, holds the proven
// labels as ReplayRaster's; scratch, of its size, each round's fixed labels.
func ReplayGraph(ctx context.Context, m *model.Model, persistent, scratch Store, rd *ProofReader, workers int) (ReplayStats, error) {
	var st ReplayStats
	n := m.NumVars()
	return st, replayRounds(ctx, rd, ProofGraph, workers, &st,
		func(int) error {
			_, err := CopyStore(scratch, persistent, n, 1)
			return err
		},
		func(rec *ProofRecord) ([]int32, error) {
			if err := nodesOf(m, rec.Nodes); err != nil {
				return nil, err
			}
			ext := WindowExtent(m, rec.Nodes)
			fixed := make([]int32, len(ext))
			if err := ReadVars(scratch, ext, fixed); err != nil {
				return nil, err
			}
			return ProvenGraphWindow(m, rec.Nodes, fixed, rec.Proof)
		},
		func(rec *ProofRecord, proven []int32) error {
			cur := make([]int32, len(rec.Nodes))
			if err := ReadVars(persistent, rec.Nodes, cur); err != nil {
				return err
			}
			mergeProven(cur, proven)
			return WriteVars(persistent, rec.Nodes, cur)
		})
}

// ReplayElimination replays the file's leading elimination records over m from
// domains (nil: every label), and returns the domains they leave (Alive,
// Persistent; Labeling is not replayed).
func ReplayElimination(ctx context.Context, m *model.Model, domains [][]int, rd *ProofReader, workers int) (*Elimination, ReplayStats, error) {
	var st ReplayStats
	g, err := NewMergerFrom(m, domains)
	if err != nil {
		return nil, st, err
	}
	type checked struct {
		w WindowWork
		e *persistency.Elimination
	}
	err = replayRounds(ctx, rd, ProofElimination, workers, &st,
		func(round int) error {
			g.StartRound(round)
			return nil
		},
		func(rec *ProofRecord) (checked, error) {
			if err := nodesOf(m, rec.Nodes); err != nil {
				return checked{}, err
			}
			w := g.Window(Window{Nodes: rec.Nodes})
			if len(w.Nodes) == 0 {
				return checked{}, errors.New("an elimination over variables decided before its round")
			}
			e, err := ProvenWindowElimination(m, w, rec.Proof)
			return checked{w, e}, err
		},
		func(rec *ProofRecord, c checked) error {
			g.Merge(Window{Nodes: rec.Nodes}, c.w, c.e)
			return nil
		})
	if err != nil {
		return nil, st, err
	}
	return g.Result(), st, nil
}

// nodesOf checks that a record's nodes (ascending, as read) are variables of m:
// the file may be of a model with more.
func nodesOf(m *model.Model, nodes []int) error {
	if len(nodes) > 0 && nodes[len(nodes)-1] >= m.NumVars() {
		return fmt.Errorf("a window with variable %d, of a model of %d", nodes[len(nodes)-1], m.NumVars())
	}
	return nil
}

// mergeProven sets cur to the proven labels (nonzero) of proven.
func mergeProven(cur, proven []int32) {
	for i, p := range proven {
		if p > 0 {
			cur[i] = p
		}
	}
}

// replayRounds reads the records of kind at the head of rd round by round:
// start(round) before a round's first check, then check on workers goroutines
// (at most a few records per worker read ahead, so memory holds that many
// windows), and merge on the caller's goroutine in file order; a round's checks
// all see what the rounds before it merged. Rounds must not decrease.
func replayRounds[T any](ctx context.Context, rd *ProofReader, kind ProofKind, workers int, st *ReplayStats,
	start func(round int) error, check func(*ProofRecord) (T, error), merge func(*ProofRecord, T) error) error {
	workers = max(workers, 1)
	round := -1
	for {
		rec, err := rd.Peek()
		if err == io.EOF || (err == nil && rec.Kind != kind) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.Round < round {
			return fmt.Errorf("%s: record %d is of round %d, after round %d", rd.name, rd.Records(), rec.Round, round)
		}
		round = rec.Round
		if err := start(round); err != nil {
			return err
		}
		st.Rounds++
		if err := replayRound(ctx, rd, kind, round, workers, st, check, merge); err != nil {
			return err
		}
	}
}

// replayRound is replayRounds for the records of one round.
func replayRound[T any](ctx context.Context, rd *ProofReader, kind ProofKind, round, workers int, st *ReplayStats,
	check func(*ProofRecord) (T, error), merge func(*ProofRecord, T) error) error {
	type item struct {
		i   int64
		rec *ProofRecord
		out T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lookahead := 2 * workers
	jobs, results := make(chan *item, lookahead), make(chan *item, lookahead)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for it := range jobs {
				if it.err = ctx.Err(); it.err == nil {
					it.out, it.err = check(it.rec)
				}
				results <- it
			}
		})
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	pending := map[int64]*item{}
	var sent, merged int64
	more := true
	for more || merged < sent {
		for more && sent-merged < int64(lookahead) {
			rec, err := rd.Peek()
			if err == io.EOF || (err == nil && (rec.Kind != kind || rec.Round != round)) {
				more = false
				break
			}
			if err != nil {
				return err
			}
			rd.Next()
			jobs <- &item{i: sent, rec: rec}
			sent++
		}
		if merged == sent {
			break
		}
		it := <-results
		pending[it.i] = it
		for it := pending[merged]; it != nil; it = pending[merged] {
			delete(pending, merged)
			if it.err != nil {
				return fmt.Errorf("%s: round %d, record %d (%s window): %w", rd.name, round, st.Records+1, kind, it.err)
			}
			if err := merge(it.rec, it.out); err != nil {
				return err
			}
			st.Records++
			merged++
		}
	}
	return ctx.Err()
}
