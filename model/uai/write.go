package uai

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/partopt/partopt/model"
)

// WriteFile writes m in the format its name says (.uai or .LG, optionally .gz).
func WriteFile(path string, m *model.Model) error {
	format, comp := FormatOf(path)
	if format != UAI && format != LG {
		return fmt.Errorf("%s: can write .uai and .LG models only", path)
	}
	if comp == ".xz" {
		return fmt.Errorf("%s: writing .xz is not supported (use .gz)", path)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := io.Writer(f)
	var zw interface{ Close() error }
	if comp == ".gz" {
		gz := gzip.NewWriter(f)
		w, zw = gz, gz
	}
	if err = Write(w, m, format); err == nil && zw != nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Write writes m as a MARKOV network in the UAI (probability) or LG (log) format.
// Parametric functions are written as explicit tables; the offset becomes order-0
// factors. In the probability format a factor whose energies exceed ±300 is written
// relative to its minimum (the shift moves to the order-0 factors, each carrying up to
// ±700); a factor whose finite energies span more than 700, or constants needing more
// than maxConstantFactors order-0 factors, cannot be written as probabilities and are
// an error (use LG). In LG a forbidden entry is written as -inf, which this package
// reads back but toulbar2 1.1.1 does not (it silently reads it and every later entry
// as 0): give toulbar2 the probability format (see oracle.Toulbar2).
func Write(w io.Writer, m *model.Model, format Format) error {
	if format != UAI && format != LG {
		return fmt.Errorf("uai: cannot write format %v", format)
	}
	logDomain := format == LG
	tables := make([][]float64, m.NumFactors())
	shift := m.Offset()
	for f := range tables {
		t, s, err := factorTable(m, f, logDomain)
		if err != nil {
			return err
		}
		tables[f], shift = t, shift+s
	}
	constants, err := splitConstant(shift, logDomain)
	if err != nil {
		return err
	}

	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	buf = append(buf, "MARKOV\n"...)
	buf = strconv.AppendInt(buf, int64(m.NumVars()), 10)
	buf = append(buf, '\n')
	for v := 0; v < m.NumVars(); v++ {
		if v > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendInt(buf, int64(m.NumLabels(v)), 10)
	}
	buf = append(buf, '\n')
	buf = strconv.AppendInt(buf, int64(len(constants)+m.NumFactors()), 10)
	buf = append(buf, '\n')
	for range constants {
		buf = append(buf, "0\n"...)
	}
	for f := 0; f < m.NumFactors(); f++ {
		vars := m.FactorVars(f)
		buf = strconv.AppendInt(buf, int64(len(vars)), 10)
		for _, v := range vars {
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(v), 10)
		}
		buf = append(buf, '\n')
		if len(buf) > 1<<15 {
			bw.Write(buf)
			buf = buf[:0]
		}
	}
	for _, c := range constants {
		buf = append(buf, "\n1\n"...)
		buf = strconv.AppendFloat(buf, c, 'g', -1, 64)
		buf = append(buf, '\n')
	}
	for _, t := range tables {
		buf = append(buf, '\n')
		buf = strconv.AppendInt(buf, int64(len(t)), 10)
		buf = append(buf, '\n')
		for i, v := range t {
			if i > 0 {
				buf = append(buf, ' ')
			}
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
			if len(buf) > 1<<15 {
				bw.Write(buf)
				buf = buf[:0]
			}
		}
		buf = append(buf, '\n')
	}
	bw.Write(buf)
	return bw.Flush()
}

// factorTable returns the file entries of factor f and the energy shift taken out of them.
func factorTable(m *model.Model, f int, logDomain bool) ([]float64, float64, error) {
	fn := m.FactorFunction(f)
	if fn.Kind != model.Explicit && fn.Shape[0] > model.MaxTableSize/fn.Shape[1] {
		return nil, 0, fmt.Errorf("uai: factor %d: a %v function of shape %v is too large to write as a table", f, fn.Kind, fn.Shape)
	}
	t := make([]float64, fn.Size())
	if fn.Kind == model.Explicit {
		copy(t, fn.Table)
	} else {
		kb := fn.Shape[1]
		for i := range t {
			t[i] = fn.Pairwise(i/kb, i%kb)
		}
	}
	if logDomain {
		for i, e := range t {
			t[i] = -e
		}
		return t, 0, nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range t {
		if !math.IsInf(e, 1) {
			lo, hi = math.Min(lo, e), math.Max(hi, e)
		}
	}
	shift := 0.0
	if math.Max(math.Abs(lo), math.Abs(hi)) > 300 && !math.IsInf(lo, 1) {
		shift = lo
	}
	if hi-shift > 700 {
		return nil, 0, fmt.Errorf("uai: factor %d: energies up to %g cannot be written as probabilities; write the .LG format", f, hi-shift)
	}
	for i, e := range t {
		t[i] = math.Exp(-(e - shift)) // exp(−Inf) = 0: forbidden
	}
	return t, shift, nil
}

// maxConstantFactors bounds the order-0 factors that carry a constant in the
// probability format (±700 each, so constants up to 7·10⁶).
const maxConstantFactors = 10000

// splitConstant returns order-0 table entries whose energies sum to c.
func splitConstant(c float64, logDomain bool) ([]float64, error) {
	switch {
	case c == 0:
		return nil, nil
	case logDomain:
		return []float64{-c}, nil
	case math.IsInf(c, 1):
		return []float64{0}, nil
	case math.Abs(c) > 700*maxConstantFactors:
		return nil, fmt.Errorf("uai: the constant energy %g needs more than %d order-0 factors as probabilities; write the .LG format", c, maxConstantFactors)
	}
	var out []float64
	for math.Abs(c) > 700 {
		step := math.Copysign(700, c)
		out = append(out, math.Exp(-step))
		c -= step
	}
	return append(out, math.Exp(-c)), nil
}
