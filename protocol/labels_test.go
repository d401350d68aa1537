package protocol

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestEncodeLabels(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   []int32
		max      int
		width    uint8
		wantData []byte
	}{
		{"empty", nil, 0, 1, []byte{}},
		{"empty wide", []int32{}, 70000, 4, []byte{}},
		{"bytes", []int32{0, 1, 255}, 255, 1, []byte{0, 1, 255}},
		{"256 needs 2", []int32{256}, 256, 2, []byte{0, 1}},
		{"65535 fits 2", []int32{65535, 1}, 65535, 2, []byte{255, 255, 1, 0}},
		{"70000 needs 4", []int32{70000}, 70000, 4, []byte{0x70, 0x11, 0x01, 0}},
		{"max int32", []int32{math.MaxInt32}, math.MaxInt32, 4, []byte{255, 255, 255, 127}},
		{"width from max, not values", []int32{1, 2}, 300, 2, []byte{1, 0, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := EncodeLabels(tc.values, tc.max)
			if l.Width != tc.width || l.Count != len(tc.values) || string(l.Data) != string(tc.wantData) {
				t.Fatalf("EncodeLabels = %+v, want width %d data %v", l, tc.width, tc.wantData)
			}
			got, err := l.DecodeMax(tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.values) || (len(got) > 0 && !reflect.DeepEqual(got, tc.values)) {
				t.Errorf("Decode = %v, want %v", got, tc.values)
			}
		})
	}
}

func TestEncodeLabelsPanicsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		values []int32
		max    int
	}{{[]int32{-1}, 5}, {[]int32{6}, 5}, {nil, -1}, {nil, math.MaxInt32 + 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("EncodeLabels(%v, %d) did not panic", tc.values, tc.max)
				}
			}()
			EncodeLabels(tc.values, tc.max)
		}()
	}
}

func TestLabelsDecodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Labels
		max  int
		want string
	}{
		{"width 3", Labels{Width: 3, Count: 1, Data: []byte{1, 2, 3}}, math.MaxInt32, "width 3"},
		{"width 0 with data", Labels{Width: 0, Count: 0, Data: []byte{1}}, math.MaxInt32, "width 0"},
		{"width 0 with count", Labels{Width: 0, Count: 1}, math.MaxInt32, "width 0"},
		{"short", Labels{Width: 2, Count: 3, Data: make([]byte, 5)}, math.MaxInt32, "need 6 bytes, have 5"},
		{"long", Labels{Width: 1, Count: 3, Data: make([]byte, 4)}, math.MaxInt32, "need 3 bytes, have 4"},
		{"negative count", Labels{Width: 1, Count: -1}, math.MaxInt32, "negative"},
		{"huge count", Labels{Width: 4, Count: math.MaxInt64 / 2, Data: make([]byte, 4)}, math.MaxInt32, "have 4"},
		{"above int32", Labels{Width: 4, Count: 1, Data: []byte{0, 0, 0, 0x80}}, math.MaxInt32, "exceeds"},
		{"above max", Labels{Width: 1, Count: 2, Data: []byte{3, 9}}, 8, "value 9 at 1 exceeds 8"},
		{"above max wide", Labels{Width: 2, Count: 1, Data: []byte{0, 1}}, 255, "value 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.l.DecodeMax(tc.max)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeMax(%d) = %v, %v; want an error containing %q", tc.max, got, err, tc.want)
			}
		})
	}
	if got, err := (Labels{}).Decode(); err != nil || len(got) != 0 {
		t.Errorf("zero Labels: Decode = %v, %v; want empty", got, err)
	}
}
