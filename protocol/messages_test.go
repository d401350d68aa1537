package protocol

import (
	"math"
	"reflect"
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
	for _, tc := range []struct {
		name string
		msg  Message
		want string
	}{
		{"bad job", Cancel{Job: "a.b"}, "job id"},
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
