package protocol

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// samples are valid messages of every type, with edge values; the round-trip
// test and the fuzz corpus use them.
func samples() map[string]Message {
	fixedLabels := EncodeLabels(make([]int32, 24*20), 3)
	return map[string]Message{
		"JobSpec/path": JobSpec{
			Job: "seg-01", Model: ModelRef{Path: "/data/models/cat.grid", Name: "cat.grid"},
			Width: 4096, Height: 3072, Labels: 8, Core: 512, Halo: 32, MaxRounds: 3,
			Variant: VariantInvariant,
			TRWS:    TRWSOptions{MaxIterations: 1500, GapTolerance: 1e-9, StallIterations: 100, StallTolerance: 1e-7, CheckEvery: 5},
			// Nanoseconds and a date past 2106 take the 12-byte timestamp.
			CreatedAt: time.Date(2207, 3, 4, 5, 6, 7, 890123456, time.UTC),
		},
		"JobSpec/object": JobSpec{
			Job: "A_b-9", Model: ModelRef{Object: ModelObject("A_b-9"), Size: 1 << 40, CRC32C: 0xdeadbeef, Name: "seg.uai.gz"},
			Width: MaxSide, Height: 1, Labels: MaxLabels, Core: 1, Halo: 0, MaxRounds: 1,
			Variant: VariantOriginal,
		},
		"WindowTask/no-fixed": WindowTask{Job: "j", Round: 0, Window: 0,
			Core: Rect{0, 0, 512, 512}, Nodes: Rect{0, 0, 544, 544}},
		"WindowTask/inline": WindowTask{Job: "j", Round: 2, Window: 1 << 20,
			Core: Rect{2, 2, 16, 16}, Nodes: Rect{1, 1, 20, 18},
			Fixed: &Fixed{Rect: Rect{0, 0, 24, 20}, Width: 1, Data: Payload{Inline: fixedLabels.Data}}},
		"WindowTask/round-object": WindowTask{Job: "j", Round: 1, Window: 3,
			Core: Rect{512, 0, 512, 512}, Nodes: Rect{480, 0, 576, 544},
			Fixed: &Fixed{Rect: Rect{0, 0, 4096, 3072}, Width: 2,
				Data: Payload{Object: RoundFixedObject("j", 1), Size: 4096 * 3072 * 2, CRC32C: 7}}},
		"JobSpec/graph": JobSpec{
			Job: "promedas", Model: ModelRef{Object: ModelObject("promedas"), Size: 123456, CRC32C: 9, Name: "or_chain_10.fg.uai"},
			Layout: LayoutGraph, Width: 1150, Height: 1, Labels: 2, Core: 512, Halo: 2, MaxRounds: 3,
			Variant: VariantInvariant, Evidence: &Payload{Inline: []byte("1 0 1\n")},
		},
		"WindowTask/graph-inline": WindowTask{Job: "j", Round: 1, Window: 4, Graph: &GraphWindow{
			Nodes: NewValues(EncodeLabels([]int32{3, 4, 9, 300}, 1149), "unused", InlineLimit),
			Fixed: &Values{Width: 1, Count: 6, Data: Payload{Inline: []byte{0, 0, 2, 0, 1, 0}}}}},
		"WindowTask/graph-objects": WindowTask{Job: "j", Round: 0, Window: 0, Graph: &GraphWindow{
			Nodes: Values{Width: 4, Count: 1 << 20, Data: Payload{Object: NodesObject("j", 0, 0), Size: 4 << 20, CRC32C: 5}},
			Fixed: &Values{Width: 2, Count: 1 << 21, Data: Payload{Object: FixedObject("j", 0, 0), Size: 4 << 20, CRC32C: 6}}}},
		"JobSpec/iri": JobSpec{
			Job: "stereo", Model: ModelRef{Path: "/data/tsukuba.uai"}, Method: MethodIRI,
			Layout: LayoutGraph, Width: 110592, Height: 1, Labels: 16, Core: 4096, Halo: 8, MaxRounds: 12,
			Variant: VariantInvariant,
		},
		"WindowTask/iri": WindowTask{Job: "j", Round: 3, Window: 2, Graph: &GraphWindow{
			Nodes:   NewValues(EncodeLabels([]int32{3, 4}, 1149), "unused", InlineLimit),
			Domains: &Payload{Inline: EncodeDomains([][]int{{0, 2}, {1}, {0, 1, 2}}, []int{3, 2, 3})}}},
		"JobSpec/raster-iri": JobSpec{
			Job: "giga", Model: ModelRef{Path: "/data/giga.grid"}, Method: MethodIRI,
			Width: 40000, Height: 25000, Labels: 8, Core: 256, Halo: 8, MaxRounds: 12,
			Variant: VariantInvariant,
		},
		"WindowTask/raster-iri": WindowTask{Job: "j", Round: 1, Window: 7,
			Core: Rect{1, 0, 2, 1}, Nodes: Rect{0, 0, 3, 1},
			Domains: &Payload{Inline: EncodeRasterDomains([][]int{{0, 2}, {1}, {0, 1, 2}, {2}}, 3)}},
		"WindowTask/raster-iri-object": WindowTask{Job: "j", Round: 0, Window: 0,
			Core: Rect{0, 0, 512, 512}, Nodes: Rect{0, 0, 544, 544},
			Domains: &Payload{Object: DomainsObject("j", 0, 0), Size: 545 * 545, CRC32C: 3}},
		"WindowResult/iri": WindowResult{Job: "j", Round: 3, Window: 2, Worker: "w", Vars: 3, SolverIterations: 50, Seconds: 0.25,
			Elimination: []byte("partopt persistency result\n\x00\x03...")},
		"WindowResult/empty": WindowResult{Job: "j", Round: 0, Window: 5, Worker: "w1"},
		"WindowResult/labels": WindowResult{Job: "j", Round: 1, Window: 2, Worker: "host-7/3",
			Persistent:        EncodeLabels([]int32{0, 1, 65535, 7}, 65535),
			Relaxed:           EncodeLabels([]int32{70000, 0}, 70000),
			PruningIterations: 12, SolverIterations: 3400, Vars: 331776, Seconds: 12.5},
		"ResultRef": ResultRef{Job: "j", Round: 0, Window: 9, Worker: "w",
			Result: Payload{Object: ResultObject("j", 0, 9), Size: 2 << 20, CRC32C: 1}},
		"Progress":     Progress{Job: "j", Round: 2, Done: 10, Total: 12, InFlight: 2, Failed: 0, Persistent: 1 << 40},
		"Error/window": Error{Job: "j", Round: 0, Window: 4, Worker: "w", Message: "model: tile 3 CRC mismatch", Permanent: true},
		"Error/job":    Error{Job: "j", Round: -1, Window: -1, Message: "ünïcode ✓"},
		"Cancel":       Cancel{Job: "j", Reason: "user"},
	}
}

func TestRoundTrip(t *testing.T) {
	for name, msg := range samples() {
		t.Run(name, func(t *testing.T) {
			data, err := Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Unmarshal(data, MaxMessageBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalizeEmpty(got), normalizeEmpty(msg)) {
				t.Errorf("round trip:\n got %#v\nwant %#v", got, msg)
			}
			// A pointer marshals the same.
			p := reflect.New(reflect.TypeOf(msg))
			p.Elem().Set(reflect.ValueOf(msg))
			data2, err := Marshal(p.Interface().(Message))
			if err != nil || string(data2) != string(data) {
				t.Errorf("Marshal(&msg) = %x, %v; want %x", data2, err, data)
			}
		})
	}
}

// normalizeEmpty maps empty byte slices to nil: the wire does not tell them apart.
func normalizeEmpty(m any) any {
	v := reflect.New(reflect.TypeOf(m)).Elem()
	v.Set(reflect.ValueOf(m))
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			if v.Len() == 0 && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
		}
	}
	walk(v)
	return v.Interface()
}

func TestJobSpecCreatedAtIsUTC(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))
	spec := samples()["JobSpec/path"].(JobSpec)
	spec.CreatedAt = at
	data, err := Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[JobSpec](data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(at) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want %v in UTC", got.CreatedAt, at)
	}
}

func TestValidateRejects(t *testing.T) {
	s := samples()
	spec := s["JobSpec/path"].(JobSpec)
	task := s["WindowTask/inline"].(WindowTask)
	with := func(f func(*JobSpec)) JobSpec { c := spec; f(&c); return c }
	withTask := func(f func(*WindowTask)) WindowTask {
		c := task
		fx := *c.Fixed
		c.Fixed = &fx
		f(&c)
		return c
	}
	graph := s["WindowTask/graph-inline"].(WindowTask)
	withGraph := func(f func(*WindowTask)) WindowTask {
		c := graph
		g := *c.Graph
		fx := *g.Fixed
		g.Fixed, c.Graph = &fx, &g
		f(&c)
		return c
	}
	graphSpec := s["JobSpec/graph"].(JobSpec)
	withGraphSpec := func(f func(*JobSpec)) JobSpec { c := graphSpec; f(&c); return c }
	for _, tc := range []struct {
		name string
		msg  Message
		want string
	}{
		{"bad job", Cancel{Job: "a.b"}, "job id"},
		{"unknown layout", with(func(s *JobSpec) { s.Layout = "mesh" }), "layout"},
		{"graph of height 2", withGraphSpec(func(s *JobSpec) { s.Height = 2 }), "height 1"},
		{"empty graph", withGraphSpec(func(s *JobSpec) { s.Width = 0 }), "graph of 0"},
		{"huge graph", withGraphSpec(func(s *JobSpec) { s.Width = MaxSide + 1 }), "graph of"},
		{"graph without core", withGraphSpec(func(s *JobSpec) { s.Core = 0 }), "core"},
		{"graph window with rectangles", withGraph(func(t *WindowTask) { t.Core = Rect{0, 0, 1, 1} }), "raster rectangles"},
		{"graph window with raster fixed labels", withGraph(func(t *WindowTask) { t.Fixed = task.Fixed }), "raster rectangles"},
		{"graph window without nodes", withGraph(func(t *WindowTask) { t.Graph.Nodes = Values{} }), "0 values"},
		{"graph nodes too long", withGraph(func(t *WindowTask) {
			t.Graph.Nodes = Values{Width: 4, Count: MaxSide + 1, Data: Payload{Object: "x", Size: 4 * (MaxSide + 1)}}
		}), "want 1 to"},
		{"graph nodes short", withGraph(func(t *WindowTask) { t.Graph.Nodes.Count = 5 }), "need 10 bytes, have 8"},
		{"graph nodes width", withGraph(func(t *WindowTask) { t.Graph.Nodes.Width = 3 }), "width 3"},
		{"graph nodes object size", withGraph(func(t *WindowTask) { t.Graph.Nodes.Data = Payload{Object: "x", Size: 7} }), "have 7"},
		{"graph fixed short", withGraph(func(t *WindowTask) {
			t.Graph.Fixed = &Values{Width: 1, Count: 2, Data: Payload{Inline: []byte{0, 1}}}
		}), "cannot cover"},
		{"graph fixed size", withGraph(func(t *WindowTask) { t.Graph.Fixed.Count = 7 }), "need 7 bytes, have 6"},
		{"unknown method", with(func(s *JobSpec) { s.Method = "IRI" }), "method"},
		{"raster window with fixed labels and domains", withTask(func(t *WindowTask) { t.Domains = &Payload{} }), "both fixed labels and domains"},
		{"raster domains object name", withTask(func(t *WindowTask) { t.Fixed, t.Domains = nil, &Payload{Object: "a b", Size: 1} }), "object name"},
		{"graph window with raster domains", withGraph(func(t *WindowTask) { t.Graph.Fixed, t.Domains = nil, &Payload{} }), "raster domains"},
		{"graph window with fixed labels and domains", withGraph(func(t *WindowTask) { t.Graph.Domains = &Payload{} }), "both fixed labels and domains"},
		{"graph domains object name", withGraph(func(t *WindowTask) {
			t.Graph.Fixed, t.Graph.Domains = nil, &Payload{Object: "a b", Size: 1}
		}), "object name"},
		{"no model", with(func(s *JobSpec) { s.Model = ModelRef{} }), "exactly one"},
		{"two models", with(func(s *JobSpec) { s.Model.Object = "x" }), "exactly one"},
		{"path with size", with(func(s *JobSpec) { s.Model.Size = 3 }), "object size"},
		{"bad object name", with(func(s *JobSpec) { s.Model = ModelRef{Object: "a b", Name: "m.grid"} }), "object name"},
		{"object without a name", with(func(s *JobSpec) { s.Model = ModelRef{Object: "o", Name: ""} }), "without a file name"},
		{"name with a directory", with(func(s *JobSpec) { s.Model.Name = "../x.grid" }), "base name"},
		{"empty raster", with(func(s *JobSpec) { s.Width = 0 }), "raster"},
		{"huge raster", with(func(s *JobSpec) { s.Height = MaxSide + 1 }), "raster"},
		{"no labels", with(func(s *JobSpec) { s.Labels = 0 }), "label count"},
		{"no core", with(func(s *JobSpec) { s.Core = 0 }), "core"},
		{"negative halo", with(func(s *JobSpec) { s.Halo = -1 }), "halo"},
		{"no rounds", with(func(s *JobSpec) { s.MaxRounds = 0 }), "rounds"},
		{"variant", with(func(s *JobSpec) { s.Variant = "Invariant" }), "variant"},
		{"NaN tolerance", with(func(s *JobSpec) { s.TRWS.GapTolerance = math.NaN() }), "trws"},
		{"negative round", withTask(func(t *WindowTask) { t.Round = -1 }), "round -1"},
		{"core outside nodes", withTask(func(t *WindowTask) { t.Core.X0 = 0 }), "not inside"},
		{"empty core", withTask(func(t *WindowTask) { t.Core.W = 0 }), "core"},
		{"fixed short", withTask(func(t *WindowTask) { t.Fixed.Rect.W = 25 }), "need 500 bytes, have 480"},
		{"fixed not covering", withTask(func(t *WindowTask) { t.Fixed.Rect = Rect{2, 0, 24, 20} }), "do not cover"},
		{"fixed width", withTask(func(t *WindowTask) { t.Fixed.Width = 3 }), "width 3"},
		{"fixed both", withTask(func(t *WindowTask) { t.Fixed.Data.Object = "x" }), "both"},
		{"fixed object size", withTask(func(t *WindowTask) {
			t.Fixed.Data = Payload{Object: "x", Size: 479}
		}), "have 479"},
		{"result labels", WindowResult{Job: "j", Persistent: Labels{Width: 2, Count: 2, Data: []byte{1, 2, 3}}}, "persistent labels"},
		{"result seconds", WindowResult{Job: "j", Seconds: math.Inf(1)}, "non-finite"},
		{"ref inline", ResultRef{Job: "j", Result: Payload{Inline: []byte{1}}}, "without an object"},
		{"progress", Progress{Job: "j", Failed: -1}, "negative"},
		{"error window", Error{Job: "j", Window: -2}, "window -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.msg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if _, err := Marshal(tc.msg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Marshal = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestPayload(t *testing.T) {
	small := []byte("abc")
	big := make([]byte, InlineLimit+1)
	big[7] = 1
	if p := NewPayload(small, "o"); p.Object != "" || string(p.Inline) != "abc" || p.Validate() != nil {
		t.Errorf("NewPayload(small) = %+v", p)
	}
	p := NewPayload(big, "j/x")
	if p.Inline != nil || p.Object != "j/x" || p.Size != int64(len(big)) || p.Validate() != nil {
		t.Fatalf("NewPayload(big) = %+v", p)
	}
	if err := p.Verify(big); err != nil {
		t.Errorf("Verify(content) = %v", err)
	}
	bad := append([]byte(nil), big...)
	bad[7] = 2
	if err := p.Verify(bad); err == nil || !strings.Contains(err.Error(), "CRC32C") {
		t.Errorf("Verify(corrupt) = %v, want a CRC32C error", err)
	}
	if err := p.Verify(big[1:]); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("Verify(short) = %v, want a size error", err)
	}
	for _, tc := range []struct {
		name string
		p    Payload
		want string
	}{
		{"too big inline", Payload{Inline: big}, "object store"},
		{"inline with crc", Payload{Inline: small, CRC32C: 1}, "CRC32C"},
		{"both", Payload{Inline: small, Object: "x"}, "both"},
		{"negative size", Payload{Object: "x", Size: -1}, "negative"},
		{"object name", Payload{Object: "x\n"}, "object name"},
	} {
		if err := tc.p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := CRC32C([]byte("123456789")); got != 0xe3069283 {
		t.Errorf("CRC32C(check string) = %08x, want e3069283", got)
	}
}

func TestFixedLabels(t *testing.T) {
	values := []int32{0, 1, 2, 0, 0, 3}
	r := Rect{1, 1, 3, 2}
	f := NewFixed(r, EncodeLabels(values, 3), "unused")
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := f.Labels(f.Data.Inline).Decode()
	if err != nil || !reflect.DeepEqual(got, values) {
		t.Errorf("Fixed labels = %v, %v; want %v", got, err, values)
	}
}

// TestGraphNodes: a graph window's node list decodes only when its count fits the
// model (checked before anything is read) and its nodes are strictly ascending
// variables of the model; an object's content is checked against its checksum.
func TestGraphNodes(t *testing.T) {
	spec := samples()["JobSpec/graph"].(JobSpec) // 1150 variables
	window := func(nodes ...int32) GraphWindow {
		return GraphWindow{Nodes: NewValues(EncodeLabels(nodes, 1<<16), "unused", InlineLimit)}
	}
	for _, tc := range []struct {
		name  string
		nodes []int32
		want  string
	}{
		{"out of range", []int32{1, 2, 1150}, "outside the model's 1150 variables"},
		{"unsorted", []int32{1, 5, 3}, "not strictly ascending: 3 after 5"},
		{"repeated", []int32{1, 5, 5}, "not strictly ascending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeNodes(spec, window(tc.nodes...), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeNodes = %v, want %q", err, tc.want)
			}
		})
	}
	long := make([]int32, spec.Width+1)
	for i := range long {
		long[i] = int32(i)
	}
	if _, err := DecodeNodes(spec, window(long...), nil); err == nil || !strings.Contains(err.Error(), "1151 nodes in a model of 1150") {
		t.Errorf("too long: %v", err)
	}
	nodes, err := DecodeNodes(spec, window(0, 7, 1149), nil)
	if err != nil || !reflect.DeepEqual(nodes, []int{0, 7, 1149}) {
		t.Errorf("DecodeNodes = %v, %v", nodes, err)
	}
	labels := EncodeLabels([]int32{2, 3, 4}, 1149)
	obj := GraphWindow{Nodes: NewValues(labels, NodesObject("j", 0, 1), 1)}
	if obj.Nodes.Data.Object == "" {
		t.Fatal("a limit of 1 byte kept the nodes inline")
	}
	if nodes, err := DecodeNodes(spec, obj, labels.Data); err != nil || !reflect.DeepEqual(nodes, []int{2, 3, 4}) {
		t.Errorf("DecodeNodes(object) = %v, %v", nodes, err)
	}
	bad := append([]byte(nil), labels.Data...)
	bad[0] = 3
	if _, err := DecodeNodes(spec, obj, bad); err == nil || !strings.Contains(err.Error(), "CRC32C") {
		t.Errorf("a corrupt object: %v", err)
	}
}

// TestDomainsRoundTrip: any domains of any label counts decode to themselves from
// DomainsSize(counts) bytes.
func TestDomainsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(20)
		counts, domains := make([]int, n), make([][]int, n)
		for i := range n {
			counts[i] = 1 + r.IntN(40)
			for l := range counts[i] {
				if r.IntN(3) == 0 {
					domains[i] = append(domains[i], l)
				}
			}
			if len(domains[i]) == 0 {
				domains[i] = []int{r.IntN(counts[i])}
			}
		}
		data := EncodeDomains(domains, counts)
		if int64(len(data)) != DomainsSize(counts) {
			t.Fatalf("%d bytes, want %d", len(data), DomainsSize(counts))
		}
		got, err := DecodeDomains(data, counts)
		if err != nil || !reflect.DeepEqual(got, domains) {
			t.Fatalf("DecodeDomains(EncodeDomains(%v)) = %v, %v", domains, got, err)
		}
	}
}

func TestDecodeDomainsRejects(t *testing.T) {
	counts := []int{3, 2}                                // 5 bits: one byte
	valid := EncodeDomains([][]int{{0, 2}, {1}}, counts) // 0b10101
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"short", nil, "domains of 0 bytes for 2 variables, want 1"},
		{"long", append(slices.Clone(valid), 0), "want 1"},
		{"empty domain", []byte{0b00111}, "variable 1 of the extent has no alive label"},
		{"padding", []byte{valid[0] | 0x80}, "padding bits set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeDomains(tc.data, counts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeDomains = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRasterDomains: a raster iri window's domains cover its nodes grown by
// one pixel, clipped; they decode only from exactly the extent's size at the
// job's labels a pixel (checked before anything is decoded), from an object
// whose checksum holds, inside the raster; its nodes are the pixels of Nodes
// with more than one label alive.
func TestRasterDomains(t *testing.T) {
	spec := JobSpec{Job: "j", Method: MethodIRI, Width: 5, Height: 4, Labels: 3}
	nodes := Rect{3, 0, 2, 2}
	ext := RasterExtent(spec, nodes)
	if ext != (Rect{2, 0, 3, 3}) {
		t.Fatalf("extent %+v, want {2 0 3 3}", ext)
	}
	doms := make([][]int, ext.Pixels())
	for i := range doms {
		doms[i] = []int{i % 3}
	}
	doms[1], doms[5] = []int{0, 2}, []int{0, 1, 2} // (3,0) and (4,1)
	data := EncodeRasterDomains(doms, spec.Labels)
	if int64(len(data)) != RasterDomainsSize(ext, spec.Labels) {
		t.Fatalf("%d bytes, want %d", len(data), RasterDomainsSize(ext, spec.Labels))
	}
	task := WindowTask{Job: "j", Core: nodes, Nodes: nodes, Domains: &Payload{Inline: data}}
	got, e, err := DecodeRasterDomains(spec, task, nil)
	if err != nil || e != ext || !reflect.DeepEqual(got, doms) {
		t.Fatalf("DecodeRasterDomains = %v, %+v, %v", got, e, err)
	}
	if n := RasterWindowNodes(spec.Width, nodes, ext, got); !reflect.DeepEqual(n, []int{3, 9}) {
		t.Errorf("nodes %v, want [3 9]", n)
	}
	obj := task
	obj.Domains = &Payload{Object: DomainsObject("j", 0, 0), Size: int64(len(data)), CRC32C: CRC32C(data)}
	if _, _, err := DecodeRasterDomains(spec, obj, data); err != nil {
		t.Errorf("from an object: %v", err)
	}
	bad := slices.Clone(data)
	bad[0] ^= 1
	for _, tc := range []struct {
		name    string
		spec    JobSpec
		task    WindowTask
		content []byte
		want    string
	}{
		{"not iri", JobSpec{Job: "j", Width: 5, Height: 4, Labels: 3}, task, nil, "not a window of a raster iri job"},
		{"graph iri", JobSpec{Job: "j", Method: MethodIRI, Layout: LayoutGraph, Width: 5, Height: 1, Labels: 3}, task, nil, "not a window of a raster iri job"},
		{"outside", spec, WindowTask{Job: "j", Nodes: Rect{4, 0, 2, 1}, Domains: task.Domains}, nil, "outside the 5×4 raster"},
		{"short", spec, WindowTask{Job: "j", Nodes: nodes, Domains: &Payload{Inline: data[:len(data)-1]}}, nil, "want 4"},
		{"more labels", JobSpec{Job: "j", Method: MethodIRI, Width: 5, Height: 4, Labels: 4}, task, nil, "want 5"},
		{"corrupt object", spec, obj, bad, "CRC32C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := DecodeRasterDomains(tc.spec, tc.task, tc.content); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeRasterDomains = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestStageOf: a pbp+iri job's second stage is a stage of the job; any other
// id is its own.
func TestStageOf(t *testing.T) {
	for job, want := range map[string]string{"j": "j", IRIStage("j"): "j", "j-iri": "j-iri", IRIStage(IRIStage("j")): IRIStage("j")} {
		if got := StageOf(job); got != want {
			t.Errorf("StageOf(%q) = %q, want %q", job, got, want)
		}
	}
}
