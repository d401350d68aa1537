package persistency_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// resultFileFixtures returns results of Run to store: a TRW-S result with a dual
// certificate (a Potts grid, both boundary variants), an SRMP one and an exhaustive one
// (higher order) and an empty one (no persistent variable, no certificate).
func resultFileFixtures(t testing.TB) map[string]struct {
	m   *model.Model
	res *persistency.Result
} {
	t.Helper()
	out := map[string]struct {
		m   *model.Model
		res *persistency.Result
	}{}
	add := func(name string, m *model.Model, opt persistency.Options) {
		res, err := persistency.Run(context.Background(), m, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = struct {
			m   *model.Model
			res *persistency.Result
		}{m, res}
	}
	grid := random.PottsGrid(random.New(3), 5, 4, 3)
	add("dual invariant", grid, persistency.Options{})
	add("dual original", grid, persistency.Options{Variant: persistency.Original})
	// A dual in full (what results of version 3 hold, and a warm solver's
	// certificate that its draft would not polish into): the draft polished.
	full := *out["dual invariant"].res
	full.Certificate = polished(t, grid, &full)
	out["dual in full"] = struct {
		m   *model.Model
		res *persistency.Result
	}{grid, &full}
	add("exhaustive", random.HigherOrder(random.New(4), 7, 3, 3, 9), persistency.Options{Solver: persistency.Exhaustive{}})
	add("srmp", random.HigherOrder(random.New(5), 7, 3, 3, 9), persistency.Options{})
	b := model.NewBuilder([]int{2, 2, 2})
	agree := []float64{1, 0, 0, 1} // a frustrated triangle: nothing is persistent
	for _, e := range [][]int{{0, 1}, {1, 2}, {0, 2}} {
		if err := b.AddTable(e, agree); err != nil {
			t.Fatal(err)
		}
	}
	tri, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	add("empty", tri, persistency.Options{})
	// Label elimination after Algorithm 1, and alone (no persistent set before).
	withElimination := func(name, from string, alone bool) {
		fx := out[from]
		res := *fx.res
		opt := persistency.EliminateOptions{Domains: res.Domains(fx.m)}
		if alone {
			res = persistency.Result{Persistent: make([]int, fx.m.NumVars())}
			for v := range res.Persistent {
				res.Persistent[v] = -1
			}
			opt.Domains = nil
		}
		el, err := persistency.Eliminate(context.Background(), fx.m, opt)
		if err != nil {
			t.Fatal(err)
		}
		if el.Eliminated == 0 || el.Certificate == nil {
			t.Fatalf("%s: nothing eliminated", name)
		}
		el.Prior = nil // not stored: Verify rebuilds it from the persistent labels
		res.Elimination = el
		out[name] = struct {
			m   *model.Model
			res *persistency.Result
		}{fx.m, &res}
	}
	// A model where Algorithm 1 proves part and elimination more.
	for seed := uint64(1); ; seed++ {
		m := random.DensePairwise(random.New(seed), 7, 4, 0.5)
		add("partial", m, persistency.Options{})
		r := out["partial"].res
		if len(r.Set) == 0 || len(r.Set) == m.NumVars() {
			continue
		}
		el, err := persistency.Eliminate(context.Background(), m, persistency.EliminateOptions{Domains: r.Domains(m)})
		if err == nil && el.Eliminated > 0 {
			break
		}
		if seed > 500 {
			t.Fatal("no model where Algorithm 1 proves part and elimination more")
		}
	}
	stages := chainedElimination(t)
	out["elimination in stages"] = struct {
		m   *model.Model
		res *persistency.Result
	}{stages.m, &persistency.Result{Persistent: slices.Repeat([]int{-1}, stages.m.NumVars()), Elimination: stages.e}}
	withElimination("elimination after pbp", "partial", false)
	withElimination("elimination alone", "dual invariant", true)
	withElimination("elimination of any order", "srmp", true)
	if r := out["empty"].res; r.Certificate != nil || len(r.Set) != 0 {
		t.Fatalf("the frustrated triangle has %d persistent variables", len(r.Set))
	}
	for _, name := range []string{"dual invariant", "dual original"} {
		if c := out[name].res.Certificate; c == nil || c.Draft == nil || len(c.Draft.Messages) == 0 {
			t.Fatalf("%s: no draft dual certificate", name)
		}
	}
	if c := out["dual in full"].res.Certificate; c == nil || c.Dual == nil || len(c.Dual.Edges) == 0 {
		t.Fatal("no dual certificate with edges")
	}
	if c := out["srmp"].res.Certificate; c == nil || c.Factor == nil || len(c.Factor.Messages) == 0 {
		t.Fatal("srmp: no higher-order dual certificate")
	}
	if c := out["exhaustive"].res.Certificate; c == nil || !c.Exhaustive || len(c.Labeling) == 0 {
		t.Fatal("exhaustive: no exhaustive certificate")
	}
	return out
}

// polished is res's certificate with its draft polished into the dual it
// stands for, on the sub-problem of m it proves.
func polished(t testing.TB, m *model.Model, res *persistency.Result) *persistency.Certificate {
	t.Helper()
	sp, err := persistency.BuildSubproblem(m, res.Set, res.Labeling, res.Variant)
	if err != nil {
		t.Fatal(err)
	}
	c := *res.Certificate
	if c.Dual, err = c.Draft.Certificate(sp.Model); err != nil {
		t.Fatal(err)
	}
	c.Draft = nil
	return &c
}

func encodeResultFile(t testing.TB, r *persistency.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := persistency.WriteResult(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// normalizedResult maps empty slices to nil, which the file does not tell apart.
func normalizedResult(r *persistency.Result) *persistency.Result {
	c := *r
	nilIfEmpty := func(x []int) []int {
		if len(x) == 0 {
			return nil
		}
		return x
	}
	c.Set, c.Persistent, c.Labeling = nilIfEmpty(c.Set), nilIfEmpty(c.Persistent), nilIfEmpty(c.Labeling)
	c.Settled = 0 // a statistic of the run, not stored
	if r.Certificate != nil {
		cert := *r.Certificate
		cert.Labeling = nilIfEmpty(cert.Labeling)
		if d := cert.Dual; d != nil {
			dual := *d
			dual.Labeling = nilIfEmpty(dual.Labeling)
			if len(dual.Edges) == 0 {
				dual.Edges, dual.LaterIsSecond, dual.Share = nil, nil, nil
			}
			if len(dual.Messages) == 0 {
				dual.Messages = nil
			}
			cert.Dual = &dual
		}
		if d := cert.Draft; d != nil {
			draft := *d
			draft.Labeling = cert.Labeling
			if len(draft.Messages) == 0 {
				draft.Messages = nil
			}
			cert.Draft = &draft
		}
		c.Certificate = &cert
	}
	return &c
}

// TestResultFileRoundTrip: ReadResult returns what WriteResult stored, every field,
// and the read result still verifies against its model.
func TestResultFileRoundTrip(t *testing.T) {
	for name, f := range resultFileFixtures(t) {
		t.Run(name, func(t *testing.T) {
			data := encodeResultFile(t, f.res)
			got, err := persistency.ReadResult(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalizedResult(got), normalizedResult(f.res)) {
				t.Errorf("read back\n%+v\nwrote\n%+v", got, f.res)
			}
			if _, err := persistency.Verify(f.m, got); err != nil {
				t.Errorf("the read result does not verify: %v", err)
			}
		})
	}
}

// TestResultFileDamageIsAnErrorNotAPanic truncates a file at every length and flips
// every byte of it: each read must fail cleanly, or return the original result.
func TestResultFileDamageIsAnErrorNotAPanic(t *testing.T) {
	f := resultFileFixtures(t)["dual invariant"]
	data := encodeResultFile(t, f.res)
	for n := range len(data) {
		_, err := persistency.ReadResult(bytes.NewReader(data[:n]))
		if err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(data))
		}
		if n > len("partopt persistency result\n")+2 && !strings.Contains(err.Error(), "truncated") {
			t.Errorf("truncated to %d bytes: %v, want it called truncated", n, err)
		}
	}
	// A change no check covers (gzip's timestamp, extra flags and OS bytes, the padding
	// bits of the last deflate byte) must leave the content as it was.
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x5a
		res, err := persistency.ReadResult(bytes.NewReader(bad))
		if err == nil && !reflect.DeepEqual(normalizedResult(res), normalizedResult(f.res)) {
			t.Errorf("byte %d flipped: read a different result without error", i)
		}
	}
}

func TestResultFileRejectsOtherFiles(t *testing.T) {
	fixtures := resultFileFixtures(t)
	good := encodeResultFile(t, fixtures["exhaustive"].res)
	header := len("partopt persistency result\n")
	version := bytes.Clone(good)
	version[header+1] = 9
	// Version 2's eliminations were proven on verification problems over every
	// label; their certificates mean nothing to version 3's.
	older := encodeResultFile(t, fixtures["elimination alone"].res)
	older[header+1] = 2
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a result file"},
		{"text", []byte("MPE\n3 0 1 2\n"), "not a result file"},
		{"gob", []byte("\x0d\xff\x81\x03\x01\x01\x06Result\x01\xff\x82\x00"), "not a result file"},
		{"version", version, "version 9"},
		{"version 2 elimination", older, "version 2 label elimination"},
		{"header only", good[:header+2], "truncated"},
		{"not gzip", append(bytes.Clone(good[:header+2]), "hello, world"...), "damaged"},
		{"two members", append(bytes.Clone(good), good[header+2:]...), "data after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := persistency.ReadResult(bytes.NewReader(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// craftResultFile is a file with the given body, compressed as WriteResult does.
func craftResultFile(body []byte) []byte {
	var buf bytes.Buffer
	buf.WriteString("partopt persistency result\n")
	buf.Write([]byte{0, 1})
	zw, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression) // cheap, for fuzzing
	zw.Write(body)
	zw.Close()
	return buf.Bytes()
}

// TestResultFileHugeCountsDoNotAllocate: a small file that claims 2^31−1 persistent
// labels, or 2^48 messages, fails without allocating for them.
func TestResultFileHugeCountsDoNotAllocate(t *testing.T) {
	head := func() []byte {
		b := binary.AppendUvarint(nil, 0)      // variant
		b = binary.AppendVarint(b, 1)          // pruning iterations
		b = binary.AppendVarint(b, 1)          // solver iterations
		return append(b, make([]byte, 7*8)...) // the float64 fields
	}
	huge := binary.AppendUvarint(head(), math.MaxInt32)
	huge = append(huge, 1, 1, 1)
	tooMany := binary.AppendUvarint(head(), math.MaxInt32+1)
	messages := binary.AppendUvarint(head(), 1)
	messages = binary.AppendVarint(messages, 0) // persistent: variable 0 at label 0
	messages = binary.AppendUvarint(messages, 1)
	messages = binary.AppendVarint(messages, 0) // labeling
	messages = append(messages, 1)              // dual certificate
	for range 2 {
		messages = binary.AppendUvarint(messages, 1)
		messages = binary.AppendVarint(messages, 0) // labels
	}
	messages = binary.AppendUvarint(messages, 0)     // no edges
	messages = binary.AppendUvarint(messages, 1<<48) // messages
	messages = append(messages, make([]byte, 64)...)
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{"2^31-1 labels", huge, "truncated"},
		{"2^31 labels", tooMany, "at most"},
		{"2^48 messages", messages, "truncated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := craftResultFile(c.body)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := persistency.ReadResult(bytes.NewReader(data))
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("reading %d bytes allocated %d bytes", len(data), alloc)
			}
		})
	}
}

// TestResultFileRejectsBadShapes: values no Run produces are refused on both sides.
func TestResultFileRejectsBadShapes(t *testing.T) {
	f := resultFileFixtures(t)["dual in full"]
	cases := []struct {
		name string
		edit func(r *persistency.Result)
		want string
	}{
		{"variant", func(r *persistency.Result) { r.Variant = 7 }, "variant"},
		{"label below -1", func(r *persistency.Result) { r.Persistent[0] = -2 }, "out of range"},
		{"labeling length", func(r *persistency.Result) { r.Labeling = r.Labeling[1:] }, "labeling of"},
		{"certificate length", func(r *persistency.Result) { r.Certificate.Labeling = r.Certificate.Labeling[1:] }, "certificate labels"},
		{"dual lengths", func(r *persistency.Result) { r.Certificate.Dual.Share = nil }, "shares"},
		{"edge", func(r *persistency.Result) { r.Certificate.Dual.Edges[0][1] = len(r.Set) }, "outside"},
		{"empty certificate", func(r *persistency.Result) { r.Certificate.Dual = nil }, "empty certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cloneResultForEdit(f.res)
			c.edit(r)
			err := persistency.WriteResult(new(bytes.Buffer), r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("WriteResult: %v, want an error containing %q", err, c.want)
			}
		})
	}
	// A draft stores its labeling as the certificate's: another is refused.
	r := *resultFileFixtures(t)["dual invariant"].res
	cert := *r.Certificate
	draft := *cert.Draft
	draft.Labeling = slices.Clone(draft.Labeling)
	draft.Labeling[0] = 1 - draft.Labeling[0]
	cert.Draft, r.Certificate = &draft, &cert
	if err := persistency.WriteResult(new(bytes.Buffer), &r); err == nil || !strings.Contains(err.Error(), "another labeling") {
		t.Errorf("WriteResult of a draft of another labeling: %v", err)
	}
}

// cloneResultForEdit copies r deeply enough for TestResultFileRejectsBadShapes to edit.
func cloneResultForEdit(r *persistency.Result) *persistency.Result {
	c := *r
	c.Persistent = append([]int(nil), r.Persistent...)
	c.Labeling = append([]int(nil), r.Labeling...)
	cert := *r.Certificate
	cert.Labeling = append([]int(nil), cert.Labeling...)
	dual := *cert.Dual
	dual.Edges = append([][2]int(nil), dual.Edges...)
	cert.Dual = &dual
	c.Certificate = &cert
	return &c
}

// TestResultFileRandomBytes feeds random data after a valid header (and random gzip
// streams) to ReadResult: errors only, no panic.
func TestResultFileRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		body := make([]byte, rng.IntN(200))
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		if _, err := persistency.ReadResult(bytes.NewReader(craftResultFile(body))); err == nil && len(body) > 0 {
			// Random bodies can be valid files; they must then write back.
			res, _ := persistency.ReadResult(bytes.NewReader(craftResultFile(body)))
			if err := persistency.WriteResult(new(bytes.Buffer), res); err != nil {
				t.Errorf("a read result does not write back: %v", err)
			}
		}
		raw := append([]byte("partopt persistency result\n\x00\x01"), body...)
		if _, err := persistency.ReadResult(bytes.NewReader(raw)); err == nil {
			t.Errorf("random bytes %x read as a result", body)
		}
	}
}

// FuzzResultFile: ReadResult never panics, and what it accepts writes back to a file
// that reads back the same.
func FuzzResultFile(f *testing.F) {
	for _, fx := range resultFileFixtures(f) {
		data := encodeResultFile(f, fx.res)
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add(craftResultFile(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := persistency.ReadResult(bytes.NewReader(data))
		if err != nil {
			return
		}
		again, err := persistency.ReadResult(bytes.NewReader(encodeResultFile(t, res)))
		if err != nil {
			t.Fatalf("a result read from a file does not round-trip: %v", err)
		}
		if !reflect.DeepEqual(normalizedResult(again), normalizedResult(res)) && !resultHasNaN(res) {
			t.Fatalf("round trip changed the result")
		}
	})
}

// FuzzResultFileBody fuzzes the decoder behind the gzip layer (whose checksum stops
// almost every mutation of whole files): the input is the decompressed body.
func FuzzResultFileBody(f *testing.F) {
	for _, fx := range resultFileFixtures(f) {
		data := encodeResultFile(f, fx.res)
		zr, err := gzip.NewReader(bytes.NewReader(data[len("partopt persistency result\n")+2:]))
		if err != nil {
			f.Fatal(err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := persistency.ReadResult(bytes.NewReader(craftResultFile(body)))
		if err != nil {
			return
		}
		if _, err := persistency.ReadResult(bytes.NewReader(encodeResultFile(t, res))); err != nil {
			t.Fatalf("a result read from a file does not round-trip: %v", err)
		}
	})
}

func resultHasNaN(r *persistency.Result) bool {
	for _, f := range []float64{r.Energy, r.LowerBound, r.CertificateGap, r.Score, r.Fraction, r.Seconds, r.SolverSeconds} {
		if math.IsNaN(f) {
			return true
		}
	}
	if c := r.Certificate; c != nil && c.Dual != nil {
		for _, x := range append(append([]float64(nil), c.Dual.Messages...), c.Dual.Share...) {
			if math.IsNaN(x) {
				return true
			}
		}
	}
	return false
}

// TestResultFileBombIsRefusedWithinTheModelsBudget: gzip expands a thousandfold, so
// a small file can hold real data far beyond any result of its model — here 64 MB
// of zero messages in 70 KB. ReadResult reads it all; ReadResultFor refuses it
// before allocating, against ResultBudget of the model, and reads the genuine
// results of its fixtures.
func TestResultFileBombIsRefusedWithinTheModelsBudget(t *testing.T) {
	const messages = 8 << 20
	data := testutil.ResultFileBomb(messages)
	b := model.NewBuilder([]int{2})
	if err := b.AddTable([]int{0}, []float64{0, 1}); err != nil {
		t.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if budget := persistency.ResultBudget(m); budget >= messages {
		t.Fatalf("budget %d for a one-variable model", budget)
	}
	alloc := func(read func() error) (uint64, error) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := read()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, err
	}
	n, err := alloc(func() error { _, err := persistency.ReadResultFor(bytes.NewReader(data), m); return err })
	if err == nil || !strings.Contains(err.Error(), "more than a result of this model can") || n > 8<<20 {
		t.Errorf("a %d-byte bomb read within the budget: %v, %d bytes allocated", len(data), err, n)
	}
	if n, err := alloc(func() error { _, err := persistency.ReadResult(bytes.NewReader(data)); return err }); err != nil || n < 8*messages {
		t.Errorf("the bomb read without a budget: %v, %d bytes allocated (the test shows nothing)", err, n)
	}
	for name, f := range resultFileFixtures(t) {
		var buf bytes.Buffer
		if err := persistency.WriteResult(&buf, f.res); err != nil {
			t.Fatal(err)
		}
		if _, err := persistency.ReadResultFor(&buf, f.m); err != nil {
			t.Errorf("%s: a genuine result refused within its model's budget: %v", name, err)
		}
	}
}

// TestALargeProofReadsBack: a proof whose certificate is large enough to be
// compressed in blocks on all cores (pgzip) is still one standard gzip stream
// that ReadResult reads back exactly, on one core and on several.
func TestALargeProofReadsBack(t *testing.T) {
	n := 64
	rng := random.New(9)
	msgs := make([]float32, persistency.ParallelProof/4+12345)
	for i := range msgs {
		msgs[i] = float32(rng.NormFloat64())
		if i%7 == 0 {
			msgs[i] = 0 // some repetition, as real messages have
		}
	}
	r := &persistency.Result{Persistent: make([]int, n), Labeling: make([]int, n), Set: make([]int, n)}
	for v := range n {
		r.Set[v], r.Persistent[v], r.Labeling[v] = v, v%3, v%3
	}
	r.Certificate = &persistency.Certificate{Labeling: r.Labeling, Draft: &trws.Draft{Labeling: r.Labeling, Messages: msgs}}
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		data := encodeResultFile(t, r)
		runtime.GOMAXPROCS(old)
		got, err := persistency.ReadResult(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("GOMAXPROCS %d: %v", procs, err)
		}
		if !reflect.DeepEqual(normalizedResult(got), normalizedResult(r)) {
			t.Fatalf("GOMAXPROCS %d: the large proof read back differs", procs)
		}
	}
}
