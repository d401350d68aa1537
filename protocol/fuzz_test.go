package protocol

import (
	"bytes"
	"testing"
)

// FuzzUnmarshal: Unmarshal never panics, and what it accepts re-encodes to a
// fixed point (Marshal ∘ Unmarshal is the identity on Marshal's output).
// Allocation bounds are checked by TestUnmarshalAllocationBounded.
func FuzzUnmarshal(f *testing.F) {
	for _, msg := range samples() {
		data, err := Marshal(msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(frame(Version, TypeWindowResult, []byte("\x81\xa1p\x81\xa1d\xc6\xff\xff\xff\xff")))
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := Unmarshal(data, MaxMessageBytes)
		if err != nil {
			if msg != nil {
				t.Fatalf("Unmarshal returned %T with error %v", msg, err)
			}
			return
		}
		if r, ok := msg.(WindowResult); ok {
			r.Persistent.Decode()
			r.Relaxed.DecodeMax(3)
		}
		again, err := Marshal(msg.(Message))
		if err != nil {
			t.Fatalf("Marshal of an accepted %T: %v", msg, err)
		}
		msg2, err := Unmarshal(again, MaxMessageBytes)
		if err != nil {
			t.Fatalf("Unmarshal of re-marshalled %T: %v", msg, err)
		}
		again2, err := Marshal(msg2.(Message))
		if err != nil || !bytes.Equal(again, again2) {
			t.Fatalf("re-encoding not stable: %x\n%x (%v)", again, again2, err)
		}
	})
}
