package main

import (
	"fmt"

	"github.com/partopt/partopt/job"
	"github.com/spf13/cobra"
)

func newExportCmd() *cobra.Command {
	var out string
	var persistent bool
	cmd := &cobra.Command{
		Use:   "export RESULT -o LABELS.png|.tif|.tiff|.npy",
		Short: "Write a result's labels as a PNG, TIFF or NumPy file at full resolution",
		Long: `Write the labeling of a result (the labels.plf of a solve, run or fetch
directory, or a .plf file) as an image or array that vision tools open directly,
one value per pixel at full resolution: a grayscale PNG or TIFF of 8 bits (fewer
than 256 labels) or 16 bits, or a NumPy .npy array of shape (height, width) and
type uint8, uint16 or uint32. The raster is streamed, so a gigapixel result needs
a band of memory, not the image (TIFF past 4 GB is written as BigTIFF).

--persistent exports persistent.plf instead: label+1 where the label is proven
persistent, 0 where nothing is proven. The output is written whole or not at
all. A result of a model that is not a raster has no label raster: its labeling
is labels.sol.`,
		Example: `  partopt export result/ -o labels.png
  partopt export result/ --persistent -o persistent.tiff
  partopt export result/labels.plf -o labels.npy   # numpy.load("labels.npy")`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := job.Export(args[0], out, persistent); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file: .png, .tif/.tiff or .npy (required)")
	cmd.MarkFlagRequired("output")
	cmd.Flags().BoolVar(&persistent, "persistent", false, "export the persistency map (label+1 where proven, 0 elsewhere) instead of the labeling")
	return cmd
}
