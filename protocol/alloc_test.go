package protocol

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// TestUnmarshalAllocationBounded feeds bodies that declare huge lengths in
// every place msgpack/v5 would trust one (a bin into Labels.Data allocates the
// declared length up front) and checks that Unmarshal allocates at most
// 64·len(data) + 1 MiB. Not parallel: it reads the process-wide MemStats.
func TestUnmarshalAllocationBounded(t *testing.T) {
	const huge32 = "\xff\xff\xff\xff"
	valid, err := Marshal(samples()["WindowResult/labels"])
	if err != nil {
		t.Fatal(err)
	}
	big := make([]int32, 900_000)
	for i := range big {
		big[i] = int32(i % 200)
	}
	large, err := Marshal(WindowResult{Job: "j", Worker: "w", Persistent: EncodeLabels(big, 255)})
	if err != nil {
		t.Fatal(err)
	}
	// An unknown field nested 100 000 deep, to the size limit.
	deep := append([]byte{0x82, 0xa1, 'j', 0xa1, 'j', 0xa1, 'z'}, bytes.Repeat([]byte{0x91}, 100_000)...)
	deep = append(deep, 0)
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"valid", valid, true},
		{"valid 900 kB", large, true},
		{"Labels.Data bin32", frame(Version, TypeWindowResult, []byte("\x82\xa1j\xa1j\xa1p\x81\xa1d\xc6"+huge32)), false},
		{"Inline bin32", frame(Version, TypeWindowTask, []byte("\x81\xa1f\x81\xa1d\x81\xa1b\xc6"+huge32)), false},
		{"job str32", frame(Version, TypeCancel, []byte("\x81\xa1j\xdb"+huge32)), false},
		{"top map32", frame(Version, TypeProgress, []byte("\xdf"+huge32)), false},
		{"unknown array32", frame(Version, TypeError, []byte("\x81\xa1z\xdd"+huge32+"\x00")), false},
		{"unknown bin32", frame(Version, TypeError, []byte("\x81\xa1z\xc6"+huge32)), false},
		{"time ext32", frame(Version, TypeJobSpec, []byte("\x81\xa2at\xc9"+huge32+"\xff")), false},
		{"deep unknown", frame(Version, TypeCancel, deep), false},
		{"over limit", make([]byte, 64<<20), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			msg, err := Unmarshal(tc.data, 0)
			runtime.ReadMemStats(&after)
			if (err == nil) != tc.ok {
				t.Fatalf("Unmarshal = %T, %v; want ok=%v", msg, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Errorf("error %v wraps no sentinel", err)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			bound := 64*uint64(min(len(tc.data), MaxMessageBytes)) + 1<<20
			t.Logf("%d bytes in, %d allocated", len(tc.data), alloc)
			if alloc > bound {
				t.Errorf("allocated %d bytes for a %d-byte message, bound %d", alloc, len(tc.data), bound)
			}
		})
	}
}
