package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/opengm"
	"github.com/partopt/partopt/model/uai"
	"github.com/spf13/cobra"
)

func newConvertCmd() *cobra.Command {
	var tile int
	cmd := &cobra.Command{
		Use:   "convert IN OUT",
		Short: "Convert a model between formats",
		Long: `Read the model IN in any format partopt reads (` + modelfile.Formats + `)
and write it to OUT in the format its name says: .uai (probabilities, MARKOV), .LG
(log values: exact for every energy) — either optionally .gz — or .grid (the tiled
grid format, for a model whose factors form a 4-connected W×H grid, values as
float32; --tile sets its tile side). Writing OpenGM HDF5 is not supported. The energy of every labeling
is kept (.uai writes exp(−E), exact up to rounding; use .LG for bit-exact values).
A .grid IN to a .grid OUT is copied by bands of rows, of any size, every value, its
connectivity and its weight mode kept, only the tiles changed; to another format it
is read whole, up to ` + fmt.Sprint(job.MaxInMemoryPixels) + ` pixels (larger ones are refused before reading).
IN.evid is not converted: copy it beside OUT if needed. OUT is written through a
temporary file and renamed, so a failed conversion leaves no partial file.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, out := args[0], args[1]
			switch f, _ := uai.FormatOf(out); {
			case opengm.IsFile(out):
				return fmt.Errorf("%s: writing OpenGM HDF5 is not supported (write .uai, .LG or .grid)", out)
			case modelfile.IsGrid(out):
			case f != uai.UAI && f != uai.LG:
				return fmt.Errorf("%s: unknown output format (want .uai or .LG, optionally .gz, or .grid)", out)
			}
			tmp := filepath.Join(filepath.Dir(out), ".partopt-convert-"+filepath.Base(out))
			if modelfile.IsGrid(in) && modelfile.IsGrid(out) {
				return retileGrid(cmd, in, out, tmp, tile)
			}
			if modelfile.IsGrid(in) {
				if err := checkGridFitsInMemory(in); err != nil {
					return err
				}
			}
			m, err := modelfile.Read(in)
			if err != nil {
				return err
			}
			if modelfile.IsGrid(out) {
				w, h, ok := grid.Dims(m)
				if !ok {
					return fmt.Errorf("%s: the model is not a raster (a 4-connected W×H grid): it cannot be written as .grid", in)
				}
				err = grid.WriteModelFile(tmp, m, w, h, tile)
			} else {
				err = uai.WriteFile(tmp, m)
			}
			if err == nil {
				err = os.Rename(tmp, out)
			}
			if err != nil {
				os.Remove(tmp)
				return internalError{err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d variables, %d factors\n", out, m.NumVars(), m.NumFactors())
			return nil
		},
	}
	cmd.Flags().IntVar(&tile, "tile", 0, "tile side of a .grid output (0: the format's default)")
	return cmd
}

// checkGridFitsInMemory refuses, before reading it, a .grid model that
// converting to a format other than .grid would read whole past job's bound.
func checkGridFitsInMemory(path string) error {
	s, err := grid.Describe(path)
	if err != nil {
		return err
	}
	if s.Variables > job.MaxInMemoryPixels {
		return fmt.Errorf("%s: %d×%d pixels: converting it to a format other than .grid reads the model into memory, up to %d pixels (convert to .grid streams any size)",
			path, s.Header.Width, s.Header.Height, job.MaxInMemoryPixels)
	}
	return nil
}

// retileGrid converts the .grid in to the .grid out through tmp by bands of
// rows (grid.Reader.Retile), in memory bounded by a band.
func retileGrid(cmd *cobra.Command, in, out, tmp string, tile int) error {
	r, err := grid.Open(in)
	if err != nil {
		return err
	}
	defer r.Close()
	err = r.RetileFile(tmp, tile, tile)
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
		if errors.Is(err, grid.ErrCorrupt) {
			return err // the input's damage, found reading its tiles
		}
		return internalError{err}
	}
	h := r.Header()
	s := h.Stats()
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d variables, %d factors\n", out, s.Variables, s.Factors())
	return nil
}
