package protocol

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// benchLabels is the persistent map of a default window (512-pixel core plus a
// 32-pixel halo: 576² values) of a k-label model, as label+1.
func benchLabels(k int) []int32 {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]int32, 576*576)
	for i := range v {
		v[i] = int32(r.IntN(k + 1))
	}
	return v
}

type labelsArray struct {
	V []int32 `msgpack:"v"`
}

// BenchmarkLabelsBlob is the round trip of a labeling as a raw blob: pack,
// msgpack encode, decode, unpack.
func BenchmarkLabelsBlob(b *testing.B) {
	for _, k := range []int{21, 300} {
		b.Run(benchName(k), func(b *testing.B) {
			values := benchLabels(k)
			b.SetBytes(int64(4 * len(values)))
			var wire int
			for b.Loop() {
				data := encodeBench(b, EncodeLabels(values, k))
				wire = len(data)
				var l Labels
				decodeBench(b, data, &l)
				if _, err := l.DecodeMax(k); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(wire), "wire-B")
		})
	}
}

// BenchmarkLabelsMsgpackArray is the same round trip as a msgpack array of
// compact ints.
func BenchmarkLabelsMsgpackArray(b *testing.B) {
	for _, k := range []int{21, 300} {
		b.Run(benchName(k), func(b *testing.B) {
			values := benchLabels(k)
			b.SetBytes(int64(4 * len(values)))
			var wire int
			for b.Loop() {
				data := encodeBench(b, labelsArray{values})
				wire = len(data)
				var l labelsArray
				decodeBench(b, data, &l)
				if len(l.V) != len(values) {
					b.Fatal("short")
				}
			}
			b.ReportMetric(float64(wire), "wire-B")
		})
	}
}

func benchName(k int) string {
	if k < 256 {
		return "K=21"
	}
	return "K=300"
}

// encodeBench and decodeBench use Marshal's and Unmarshal's msgpack settings.
func encodeBench(b *testing.B, v any) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func decodeBench(b *testing.B, data []byte, v any) {
	if err := msgpack.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		b.Fatal(err)
	}
}
