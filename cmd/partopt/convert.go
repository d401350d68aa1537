package main

import (
	"fmt"
	"os"
	"path/filepath"

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
			m, err := modelfile.Read(in)
			if err != nil {
				return err
			}
			tmp := filepath.Join(filepath.Dir(out), ".partopt-convert-"+filepath.Base(out))
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
