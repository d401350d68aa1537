package partition_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// readAll reads every record of a window certificates file.
func readAll(t *testing.T, data []byte, maxVars int64) ([]*partition.ProofRecord, error) {
	t.Helper()
	rd, err := partition.NewProofReader("certs", bytes.NewReader(data), int64(len(data)), maxVars)
	if err != nil {
		return nil, err
	}
	var out []*partition.ProofRecord
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// TestWindowCertificatesRoundTrip: records of every kind read back as written,
// their proofs decoding to the results recorded (timings dropped).
func TestWindowCertificatesRoundTrip(t *testing.T) {
	m := random.PottsGrid(random.New(1), 6, 5, 3)
	res, err := persistency.Run(context.Background(), m, persistency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := partition.NewProofWriter(&buf)
	if err := w.Raster(0, partition.Rect{X0: 1, Y0: 2, W: 3, H: 4}, res); err != nil {
		t.Fatal(err)
	}
	if err := w.Graph(1, []int{0, 3, 4, 29}, res); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Graph(2, []int{1}, res); err == nil {
		t.Error("a write after Close succeeded")
	}
	recs, err := readAll(t, buf.Bytes(), int64(m.NumVars()))
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if r := recs[0]; r.Kind != partition.ProofRaster || r.Round != 0 || r.Rect != (partition.Rect{X0: 1, Y0: 2, W: 3, H: 4}) {
		t.Errorf("record 1: %+v", r)
	}
	if r := recs[1]; r.Kind != partition.ProofGraph || r.Round != 1 || !slices.Equal(r.Nodes, []int{0, 3, 4, 29}) {
		t.Errorf("record 2: %+v", r)
	}
	for _, r := range recs {
		got, err := r.Proof(m)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Persistent, res.Persistent) || got.Seconds != 0 || got.Certificate == nil {
			t.Errorf("proof read back: %d persistent, seconds %v", persistency.Count(got.Persistent), got.Seconds)
		}
	}
}

// TestDamagedWindowCertificatesAreRefused: a file that is not one, truncated,
// with trailing bytes, an unknown kind, node lists beyond the model or not
// ascending, or a proof running past its end, gives an error naming the file,
// before any large allocation.
func TestDamagedWindowCertificatesAreRefused(t *testing.T) {
	var good bytes.Buffer
	w := partition.NewProofWriter(&good)
	w.Graph(0, []int{2, 5}, []byte("proof"))
	w.Close()
	g := good.Bytes()
	magic := len("partopt window certificates v1\n")
	record := func(kind byte, fields ...uint64) []byte {
		b := append([]byte(nil), g[:magic]...)
		b = append(b, kind)
		for _, f := range fields {
			b = binary.AppendUvarint(b, f)
		}
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a window certificates file"},
		{"other file", []byte("partopt persistency result\x00\x03....................."), "not a window certificates file"},
		{"no end", g[:len(g)-2], "truncated"},
		{"cut in a proof", g[:len(g)-4], "proof length"},
		{"wrong count", append(slices.Clone(g[:len(g)-1]), 7), "count of 7"},
		{"trailing bytes", append(slices.Clone(g), 0), "bytes before its end"},
		{"unknown kind", record(9, 0), "kind 9"},
		{"too many nodes", record(2, 0, 1<<40), "node count"},
		{"nodes not ascending", record(2, 0, 2, 3, 0), "not ascending"},
		{"node beyond the model", record(2, 0, 1, 100), "node gap"},
		{"proof past the end", append(record(2, 0, 1, 1), binary.AppendUvarint(nil, 1<<20)...), "proof length"},
	}
	for _, c := range cases {
		_, err := readAll(t, c.data, 10)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "certs") {
			t.Errorf("%s: %v, want an error naming the file and saying %q", c.name, err, c.want)
		}
	}
}

// certificates runs write with a ProofWriter and returns the file's reader.
func certificates(t *testing.T, maxVars int, write func(*partition.ProofWriter)) *partition.ProofReader {
	t.Helper()
	var buf bytes.Buffer
	w := partition.NewProofWriter(&buf)
	write(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := partition.NewProofReader("certs", bytes.NewReader(buf.Bytes()), int64(buf.Len()), int64(maxVars))
	if err != nil {
		t.Fatal(err)
	}
	return rd
}

// TestReplayRederivesTheWindowedResult: replaying the window certificates of a
// windowed run from the model alone gives exactly the run's persistent labels
// (domains for an elimination) — raster windows over rounds with evidence
// fixed, graph windows of Solve, and eliminations of Eliminate — whatever the
// worker count.
func TestReplayRederivesTheWindowedResult(t *testing.T) {
	ctx := context.Background()
	t.Run("raster", func(t *testing.T) {
		m := random.PottsDenoising(random.New(7), 36, 30, 4, 0.8, 4, 1.2)
		r := rasterOf(t, m, 36, 30)
		fixed := make([]int, 36*30)
		for v := range fixed {
			fixed[v] = -1
		}
		fixed[40], fixed[500] = 2, 1
		var want []int
		rd := certificates(t, m.NumVars(), func(w *partition.ProofWriter) {
			want, _, _ = solveRaster(t, r, partition.RasterOptions{Core: 10, Halo: 3, MaxRounds: 3, Workers: 2, Proofs: w}, fixed)
		})
		pers := partition.NewMemStore(36, 30)
		pers.Values[40], pers.Values[500] = 3, 2
		st, err := partition.ReplayRaster(ctx, r, pers, partition.NewMemStore(36, 30), rd, 3)
		if err != nil {
			t.Fatal(err)
		}
		if got := storeLabels(pers.Values); !slices.Equal(got, want) || st.Records == 0 || st.Rounds < 2 {
			t.Errorf("replay proves %d labels in %+v, the run %d", proven(got), st, proven(want))
		}
	})
	t.Run("graph", func(t *testing.T) {
		m := random.DensePairwise(random.New(2), 40, 3, 0.1)
		res, err := partition.Solve(ctx, m, partition.Options{MaxRounds: 3, Workers: 2, Plan: func(round int) partition.Plan {
			return partition.RegionPlan(m, 8, 1, partition.RegionShift(round, 8))
		}})
		if err != nil {
			t.Fatal(err)
		}
		rd := certificates(t, m.NumVars(), func(w *partition.ProofWriter) {
			for _, q := range res.Proofs {
				if len(q.Vars) > 0 {
					w.Graph(q.Round, q.Nodes, q.Result)
				}
			}
		})
		pers := partition.NewMemStore(40, 1)
		if _, err := partition.ReplayGraph(ctx, m, pers, partition.NewMemStore(40, 1), rd, 1); err != nil {
			t.Fatal(err)
		}
		if got := storeLabels(pers.Values); !slices.Equal(got, res.Persistent) {
			t.Errorf("replay proves %d labels, the run %d", proven(got), proven(res.Persistent))
		}
	})
	t.Run("elimination", func(t *testing.T) {
		m := random.PottsGrid(random.New(5), 12, 10, 4)
		res, err := partition.Eliminate(ctx, m, partition.EliminateOptions{MaxRounds: 3, Workers: 2, Plan: func(round, level int) partition.Plan {
			return partition.GridPlan(12, 10, 5<<level, 1, round*2)
		}, MaxLevel: 1})
		if err != nil {
			t.Fatal(err)
		}
		rd := certificates(t, m.NumVars(), func(w *partition.ProofWriter) {
			for _, pr := range res.Proofs {
				if pr.Result != nil {
					w.Elimination(pr.Round, pr.Nodes, pr.Result)
				}
			}
		})
		el, st, err := partition.ReplayElimination(ctx, m, nil, rd, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(el.Alive, res.Alive, slices.Equal) || st.Records == 0 {
			t.Errorf("replayed domains differ from the run's (%d records)", st.Records)
		}
	})
}

func storeLabels(vals []int32) []int {
	out := make([]int, len(vals))
	for i, x := range vals {
		out[i] = int(x) - 1
	}
	return out
}

// TestReplayRefusesForgedCertificates: a window proof that does not hold for
// the labels the replay fixed before its round — another window's proof, a
// proof claiming every node, a window outside the raster — or rounds out of
// order stop the replay with an error.
func TestReplayRefusesForgedCertificates(t *testing.T) {
	ctx := context.Background()
	m := random.PottsDenoising(random.New(8), 30, 24, 3, 0.6, 4, 1.0)
	r := rasterOf(t, m, 30, 24)
	type rec struct {
		round int
		nodes partition.Rect
		proof *persistency.Result
	}
	var recs []rec
	var buf bytes.Buffer
	w := partition.NewProofWriter(&buf)
	solveRaster(t, r, partition.RasterOptions{Core: 10, Halo: 2, MaxRounds: 2, Proofs: w}, nil)
	w.Close()
	all, err := readAll(t, buf.Bytes(), int64(m.NumVars()))
	if err != nil || len(all) < 4 {
		t.Fatalf("%d records, %v", len(all), err)
	}
	for _, a := range all {
		p, err := a.Proof(m)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec{a.Round, a.Rect, p})
	}
	replay := func(rs []rec) error {
		rd := certificates(t, m.NumVars(), func(w *partition.ProofWriter) {
			for _, x := range rs {
				w.Raster(x.round, x.nodes, x.proof)
			}
		})
		_, err := partition.ReplayRaster(ctx, r, partition.NewMemStore(30, 24), partition.NewMemStore(30, 24), rd, 2)
		return err
	}
	if err := replay(recs); err != nil {
		t.Fatalf("the run's own certificates: %v", err)
	}
	swapped := slices.Clone(recs)
	swapped[0].proof, swapped[1].proof = recs[1].proof, recs[0].proof
	claimAll := slices.Clone(recs)
	forged := *recs[0].proof // every node label 0, without a certificate
	forged.Persistent, forged.Certificate = slices.Clone(forged.Persistent), nil
	for i := range forged.Persistent {
		forged.Persistent[i] = 0
	}
	claimAll[0].proof = &forged
	reordered := slices.Clone(recs)
	reordered[0].round = 5 // the next records, of round 0, come after round 5
	outside := slices.Clone(recs)
	outside[0].nodes = partition.Rect{X0: 25, Y0: 20, W: 10, H: 10}
	for name, rs := range map[string][]rec{"swapped proofs": swapped, "every node claimed": claimAll, "rounds out of order": reordered, "window outside": outside} {
		if err := replay(rs); err == nil {
			t.Errorf("%s: replayed", name)
		}
	}
	// Graph and elimination records naming variables beyond the model (a file
	// of a larger one) are refused, not indexed.
	small := random.DensePairwise(random.New(2), 10, 3, 0.3)
	rd := certificates(t, 30, func(w *partition.ProofWriter) { w.Graph(0, []int{3, 20}, recs[0].proof) })
	if _, err := partition.ReplayGraph(ctx, small, partition.NewMemStore(10, 1), partition.NewMemStore(10, 1), rd, 1); err == nil || !strings.Contains(err.Error(), "variable 20") {
		t.Errorf("a graph window beyond the model: %v", err)
	}
	rd = certificates(t, 30, func(w *partition.ProofWriter) { w.Elimination(0, []int{25}, recs[0].proof) })
	if _, _, err := partition.ReplayElimination(ctx, small, nil, rd, 1); err == nil || !strings.Contains(err.Error(), "variable 25") {
		t.Errorf("an elimination window beyond the model: %v", err)
	}
}
