package protocol

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Labels is an array of non-negative values (a labeling, row-major over a
// rectangle) as a raw little-endian blob of Width bytes per value: a msgpack
// array would cost a type byte and a reflective decode per value. Labelings
// with a "no label" entry use label+1, and 0 for none.
//
// The zero Labels is the empty array.
type Labels struct {
	Width uint8  `msgpack:"w"` // bytes per value: 1, 2 or 4 (0 only when Count is 0)
	Count int    `msgpack:"n"`
	Data  []byte `msgpack:"d"`
}

// EncodeLabels packs values, each in [0, maxValue], in the narrowest width
// that holds maxValue. A value outside that range is a programmer error and
// panics.
func EncodeLabels(values []int32, maxValue int) Labels {
	if maxValue < 0 || maxValue > math.MaxInt32 {
		panic(fmt.Sprintf("protocol: EncodeLabels: maxValue %d outside [0, %d]", maxValue, math.MaxInt32))
	}
	for i, v := range values {
		if v < 0 || int(v) > maxValue {
			panic(fmt.Sprintf("protocol: EncodeLabels: value %d at %d outside [0, %d]", v, i, maxValue))
		}
	}
	w := widthFor(maxValue)
	l := Labels{Width: w, Count: len(values), Data: make([]byte, len(values)*int(w))}
	// One loop per width: a switch per value costs more than the copy itself.
	switch d := l.Data; w {
	case 1:
		for i, v := range values {
			d[i] = byte(v)
		}
	case 2:
		for i, v := range values {
			binary.LittleEndian.PutUint16(d[2*i:], uint16(v))
		}
	default:
		for i, v := range values {
			binary.LittleEndian.PutUint32(d[4*i:], uint32(v))
		}
	}
	return l
}

func widthFor(maxValue int) uint8 {
	switch {
	case maxValue <= math.MaxUint8:
		return 1
	case maxValue <= math.MaxUint16:
		return 2
	}
	return 4
}

// Validate checks the shape: a width of 1, 2 or 4 (or 0 for an empty array)
// and Count·Width = len(Data).
func (l Labels) Validate() error {
	switch {
	case l.Count < 0:
		return fmt.Errorf("labels: negative count %d", l.Count)
	case l.Width == 0 && l.Count == 0 && len(l.Data) == 0:
		return nil
	case l.Width != 1 && l.Width != 2 && l.Width != 4:
		return fmt.Errorf("labels: width %d, want 1, 2 or 4 bytes per value", l.Width)
	case uint64(l.Count)*uint64(l.Width) != uint64(len(l.Data)):
		return fmt.Errorf("labels: %d values of %d bytes need %d bytes, have %d", l.Count, l.Width, uint64(l.Count)*uint64(l.Width), len(l.Data))
	}
	return nil
}

// Decode unpacks the values; with a width of 4 each must fit a non-negative
// int32.
func (l Labels) Decode() ([]int32, error) { return l.DecodeMax(math.MaxInt32) }

// DecodeMax is Decode that also rejects a value above maxValue (for a
// labeling of K labels stored as label+1: K).
func (l Labels) DecodeMax(maxValue int) ([]int32, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	out := make([]int32, l.Count)
	// Values of 1 or 2 bytes fit an int32; check them against maxValue after.
	switch d := l.Data; l.Width {
	case 1:
		for i := range out {
			out[i] = int32(d[i])
		}
	case 2:
		for i := range out {
			out[i] = int32(binary.LittleEndian.Uint16(d[2*i:]))
		}
	case 4:
		for i := range out {
			v := binary.LittleEndian.Uint32(d[4*i:])
			if v > math.MaxInt32 {
				return nil, fmt.Errorf("labels: value %d at %d exceeds %d", v, i, math.MaxInt32)
			}
			out[i] = int32(v)
		}
	}
	if maxValue < math.MaxInt32 {
		for i, v := range out {
			if int(v) > maxValue {
				return nil, fmt.Errorf("labels: value %d at %d exceeds %d", v, i, maxValue)
			}
		}
	}
	return out, nil
}
