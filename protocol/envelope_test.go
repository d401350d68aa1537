package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// frame builds a message from its parts, valid or not.
func frame(version uint16, t Type, body []byte) []byte {
	b := append([]byte(Magic), 0, 0, byte(t))
	binary.BigEndian.PutUint16(b[len(Magic):], version)
	return append(b, body...)
}

// body is the msgpack encoding of v.
func body(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHeaderLayout(t *testing.T) {
	data, err := Marshal(Cancel{Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{'p', 'o', 'p', 't', 0, 4, byte(TypeCancel)}
	if !bytes.HasPrefix(data, want) {
		t.Errorf("header % x, want % x", data[:HeaderSize], want)
	}
	// The body is a msgpack map of short keys: {"j": "j"}.
	if got := data[HeaderSize:]; !bytes.Equal(got, []byte{0x81, 0xa1, 'j', 0xa1, 'j'}) {
		t.Errorf("body % x", got)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	task := body(t, samples()["WindowTask/no-fixed"])
	valid := frame(Version, TypeWindowTask, task)
	deep := append(bytes.Repeat([]byte{0x91}, maxDepth+1), 0)
	for _, tc := range []struct {
		name  string
		data  []byte
		limit int
		want  error
		text  string
	}{
		{"over limit", valid, len(valid) - 1, ErrTooLarge, "limit"},
		{"over default limit", make([]byte, MaxMessageBytes+1), 0, ErrTooLarge, "1048577 bytes"},
		{"size before magic", bytes.Repeat([]byte("x"), 100), 10, ErrTooLarge, ""},
		{"empty", nil, 0, ErrMalformed, "not a partopt message"},
		{"header only part", []byte("popt\x00"), 0, ErrMalformed, "not a partopt message"},
		{"bad magic", append([]byte("POPT"), valid[4:]...), 0, ErrMalformed, "not a partopt message"},
		{"newer version", frame(5, TypeWindowTask, task), 0, ErrVersion, "message version 5, this build speaks version 4"},
		{"version 1, before label elimination", frame(1, TypeWindowTask, task), 0, ErrVersion, "message version 1, this build speaks version 4"},
		{"version 2, before window proofs", frame(2, TypeWindowTask, task), 0, ErrVersion, "message version 2, this build speaks version 4"},
		{"version 3, before draft certificates", frame(3, TypeWindowTask, task), 0, ErrVersion, "message version 3, this build speaks version 4"},
		{"older version", frame(0, TypeWindowTask, task), 0, ErrVersion, "version 0"},
		{"type 0", frame(Version, 0, task), 0, ErrMalformed, "unknown message type 0"},
		{"type 200", frame(Version, 200, task), 0, ErrMalformed, "unknown message type 200"},
		{"no body", frame(Version, TypeWindowTask, nil), 0, ErrMalformed, "truncated"},
		{"trailing bytes", append(valid, 0xc0), 0, ErrMalformed, "1 bytes after the body"},
		{"truncated body", valid[:len(valid)-1], 0, ErrMalformed, ""},
		{"reserved code", frame(Version, TypeCancel, []byte{0xc1}), 0, ErrMalformed, "invalid msgpack code 0xc1"},
		{"declared bin", frame(Version, TypeCancel, []byte{0xc6, 0xff, 0xff, 0xff, 0xff}), 0, ErrMalformed, "declares 4294967295 bytes"},
		{"declared array", frame(Version, TypeCancel, []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 1}), 0, ErrMalformed, "declares 4294967295 entries"},
		{"too deep", frame(Version, TypeCancel, deep), 0, ErrMalformed, "nested deeper"},
		{"not a map", frame(Version, TypeCancel, body(t, "j")), 0, ErrMalformed, ""},
		{"wrong field type", frame(Version, TypeCancel, body(t, map[string]any{"j": 5})), 0, ErrMalformed, ""},
		{"invalid content", frame(Version, TypeCancel, body(t, map[string]any{"j": "a b"})), 0, ErrMalformed, "job id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := Unmarshal(tc.data, tc.limit)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Unmarshal = %v, %v; want %v containing %q", msg, err, tc.want, tc.text)
			}
			if msg != nil {
				t.Errorf("Unmarshal returned %#v with its error", msg)
			}
			for _, s := range []error{ErrTooLarge, ErrVersion, ErrMalformed} {
				if s != tc.want && errors.Is(err, s) {
					t.Errorf("error %v also wraps %v", err, s)
				}
			}
		})
	}
}

func TestDecode(t *testing.T) {
	want := samples()["Progress"].(Progress)
	data, err := Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[Progress](data, MaxMessageBytes)
	if err != nil || got != want {
		t.Errorf("Decode[Progress] = %+v, %v; want %+v", got, err, want)
	}
	if _, err := Decode[Cancel](data, MaxMessageBytes); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "got a Progress message, want Cancel") {
		t.Errorf("Decode[Cancel](progress) = %v, want ErrMalformed", err)
	}
	if _, err := Decode[*Progress](data, MaxMessageBytes); err == nil || !strings.Contains(err.Error(), "not a message type") {
		t.Errorf("Decode[*Progress] = %v, want an error", err)
	}
	if _, err := Decode[Progress](data[:3], 0); !errors.Is(err, ErrMalformed) {
		t.Errorf("Decode[Progress](short) = %v, want ErrMalformed", err)
	}
}

func TestMarshalRejectsNonMessages(t *testing.T) {
	var nilTask *WindowTask
	for _, m := range []Message{nil, nilTask} {
		if _, err := Marshal(m); err == nil {
			t.Errorf("Marshal(%#v) succeeded", m)
		}
	}
}

// TestUnknownFieldsIgnored: a newer sender of the same version may add fields,
// of any msgpack kind; a receiver skips them.
func TestUnknownFieldsIgnored(t *testing.T) {
	for name, msg := range samples() {
		t.Run(name, func(t *testing.T) {
			data, err := Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := msgpack.Unmarshal(data[HeaderSize:], &fields); err != nil {
				t.Fatal(err)
			}
			fields["zz_map"] = map[string]any{"a": []any{1, "x", nil, 2.5, map[string]any{"b": []byte{1, 2}}}}
			fields["zz_bin"] = make([]byte, 300)
			fields["zz_str"] = strings.Repeat("s", 70000)
			fields["zz_time"] = time.Unix(1, 2)
			fields["zz_neg"] = -1 << 40
			data = frame(Version, typeOf(msg), body(t, fields))
			got, err := Unmarshal(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalizeEmpty(got), normalizeEmpty(msg)) {
				t.Errorf("with unknown fields:\n got %#v\nwant %#v", got, msg)
			}
		})
	}
}

func TestTypeString(t *testing.T) {
	if TypeWindowResult.String() != "WindowResult" || Type(0).String() != "Type(0)" || Type(99).String() != "Type(99)" {
		t.Errorf("Type names: %v %v %v", TypeWindowResult, Type(0), Type(99))
	}
	for name, msg := range samples() {
		if got := typeOf(msg).String(); !strings.HasPrefix(name, got) {
			t.Errorf("sample %s has type %s", name, got)
		}
	}
}
