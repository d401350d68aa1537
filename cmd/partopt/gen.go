package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/partopt/partopt/gen"
	"github.com/spf13/cobra"
)

func newGenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate grid models from images: colour segmentation, stereo, gigapixel tiling",
		Long: `Generate a model from images and write it as a tiled grid file (.grid, streamed row by
row) or a UAI file (.uai or .LG, optionally .gz), chosen by the output name: seg, a
colour segmentation of an image; stereo, a rectified pair's stereo model; tiled and
stereo-tiled, gigapixel test models (.grid only) mirror-tiled from an image's
segmentation model or a pair's stereo model.`,
	}
	cmd.AddCommand(newGenSegCmd(), newGenStereoCmd(), newGenTiledCmd(), newGenStereoTiledCmd())
	return cmd
}

// genOutput checks the output name (extension, existing directory) before any work.
func genOutput(out string) error {
	if out == "" {
		return fmt.Errorf("no output file: give -o OUT.grid or -o OUT.uai")
	}
	if err := gen.CheckOutput(out); err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: output directory %s does not exist", out, filepath.Dir(out))
	}
	return nil
}

// genWrite writes src; the inputs were checked, so a failure here is internal.
func genWrite(cmd *cobra.Command, out string, src gen.Source, tile int) error {
	line := newStatusLine(cmd, 0)
	progress := func(rows, height int) {
		line.show(func() string {
			return fmt.Sprintf("writing %s: row %d of %d (%.1f%%)", out, rows, height, 100*float64(rows)/float64(height))
		})
	}
	err := gen.WriteFile(out, src, gen.WriteOptions{TileSize: tile, Progress: progress})
	line.clear()
	if err != nil {
		return internalError{err}
	}
	h := src.Header()
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d×%d pixels, %d labels, %v pairwise (%v weights)\n",
		out, h.Width, h.Height, h.Labels, h.Kind, h.Mode)
	return nil
}

func newGenSegCmd() *cobra.Command {
	var (
		out  string
		k    int
		opts gen.SegOptions
	)
	cmd := &cobra.Command{
		Use:   "seg IMAGE -o OUT",
		Short: "Contrast-sensitive Potts colour segmentation of an image (k-means unaries)",
		Long: `Cluster the RGB colours of IMAGE (PNG, JPEG, GIF, BMP, TIFF) into K centres with k-means
and write the Potts model with unaries min(‖I_p−μ_l‖²/(2σ²), cap) and edge weights
λ·exp(−‖I_p−I_q‖²/(2β)), σ² the mean squared distance to the nearest centre and β the
mean squared neighbour difference.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := genOutput(out); err != nil {
				return err
			}
			img, err := gen.LoadImage(args[0])
			if err != nil {
				return err
			}
			seg, err := gen.Segmentation(img, k, opts)
			if err != nil {
				return err
			}
			return genWrite(cmd, out, seg, 0)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output model (.grid, .uai, .LG, optionally .gz)")
	cmd.Flags().IntVar(&k, "labels", 4, "number of labels K (k-means centres)")
	cmd.Flags().Float64Var(&opts.Lambda, "lambda", 1, "Potts weight λ of an edge between equal colours")
	cmd.Flags().Float64Var(&opts.Cap, "cap", 10, "truncation of the normalised unaries")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "k-means seed")
	return cmd
}

func newGenStereoCmd() *cobra.Command {
	var (
		out  string
		d    int
		opts gen.StereoOptions
	)
	cmd := &cobra.Command{
		Use:   "stereo LEFT RIGHT -o OUT --disparities D",
		Short: "Truncated-linear stereo model of a rectified image pair",
		Long: `Write the stereo model of a rectified pair: labels are disparities 0..D−1, unaries
min(|g_L(x,y) − g_R(x−d,y)|, τ) on grey levels, pairwise w·min(|d_p−d_q|, T), with
--contrast the weight modulated per edge by the left image's contrast.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := genOutput(out); err != nil {
				return err
			}
			if d < 1 {
				return fmt.Errorf("--disparities %d: give the number of disparities D ≥ 1", d)
			}
			left, err := gen.LoadImage(args[0])
			if err != nil {
				return err
			}
			right, err := gen.LoadImage(args[1])
			if err != nil {
				return err
			}
			st, err := gen.Stereo(left, right, d, opts)
			if err != nil {
				return err
			}
			return genWrite(cmd, out, st, 0)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output model (.grid, .uai, .LG, optionally .gz)")
	stereoFlags(cmd, &d, &opts)
	return cmd
}

// stereoFlags defines the flags of a stereo model: --disparities and the options.
func stereoFlags(cmd *cobra.Command, d *int, opts *gen.StereoOptions) {
	cmd.Flags().IntVar(d, "disparities", 0, "number of disparities D (labels 0..D−1)")
	cmd.Flags().Float64Var(&opts.Tau, "tau", 20, "truncation τ of the grey difference")
	cmd.Flags().Float64Var(&opts.W, "weight", 8, "pairwise weight w")
	cmd.Flags().Float64Var(&opts.T, "trunc", 2, "truncation T of the disparity difference")
	cmd.Flags().BoolVar(&opts.Contrast, "contrast", false, "modulate the weight per edge by the left image's contrast")
}

// tiledFlags defines the flags of a streamed tiling: its output, size and grid tiles.
func tiledFlags(cmd *cobra.Command, out *string, width, height, tile *int) {
	cmd.Flags().StringVarP(out, "output", "o", "", "output grid file (.grid)")
	cmd.Flags().IntVar(width, "width", 0, "width W of the model in pixels")
	cmd.Flags().IntVar(height, "height", 0, "height H of the model in pixels")
	cmd.Flags().IntVar(tile, "tile", 0, "tile side of the grid file (0: the format's default, 128)")
}

// tiledOutput checks the output and size of a streamed tiling before any work.
func tiledOutput(out string, width, height int) error {
	if err := genOutput(out); err != nil {
		return err
	}
	if !strings.EqualFold(filepath.Ext(out), ".grid") {
		return fmt.Errorf("%s: tiled models are written as .grid files only", out)
	}
	if width < 1 || height < 1 {
		return fmt.Errorf("--width %d --height %d: give the size of the model", width, height)
	}
	return nil
}

func newGenTiledCmd() *cobra.Command {
	var (
		out           string
		width, height int
		k, tile       int
		seed          uint64
		opts          gen.TiledOptions
	)
	cmd := &cobra.Command{
		Use:   "tiled IMAGE -o OUT.grid --width W --height H",
		Short: "Stream a W×H segmentation model tiled from an image (gigapixel test models)",
		Long: `Mirror-tile IMAGE over W×H pixels with a random colour offset per tile and stream the
segmentation model of "partopt gen seg" (centres, σ² and β from IMAGE) to a grid file.
Memory is one band of --tile rows: about tile·W·(K+2)·4 bytes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := tiledOutput(out, width, height); err != nil {
				return err
			}
			img, err := gen.LoadImage(args[0])
			if err != nil {
				return err
			}
			tm, err := gen.Tiled(img, width, height, k, seed, opts)
			if err != nil {
				return err
			}
			return genWrite(cmd, out, tm, tile)
		},
	}
	tiledFlags(cmd, &out, &width, &height, &tile)
	cmd.Flags().IntVar(&k, "labels", 4, "number of labels K (k-means centres)")
	cmd.Flags().Float64Var(&opts.Lambda, "lambda", 1, "Potts weight λ of an edge between equal colours")
	cmd.Flags().Float64Var(&opts.Perturb, "perturb", 20, "largest colour offset per tile and channel (negative: none)")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the per-tile offsets")
	return cmd
}

func newGenStereoTiledCmd() *cobra.Command {
	var (
		out                 string
		width, height, tile int
		d                   int
		opts                gen.StereoOptions
	)
	cmd := &cobra.Command{
		Use:   "stereo-tiled LEFT RIGHT -o OUT.grid --width W --height H --disparities D",
		Short: "Stream a W×H stereo model tiled from a rectified pair's model (gigapixel test models)",
		Long: `Build the stereo model of "partopt gen stereo" on the rectified pair LEFT RIGHT, mirror it
over W×H pixels and stream it to a grid file: pixel (x, y) has the D data costs of the
pair's pixel at the mirrored coordinates, and an edge the pair's weight between the
mirrored pixels (w at a mirror seam, where both are the same pixel). The model, not the
images, is mirrored, so the flipped tiles keep the pair's disparities. Memory is one
band of --tile rows, about tile·W·(D+2)·4 bytes, plus the pair.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := tiledOutput(out, width, height); err != nil {
				return err
			}
			if d < 2 {
				return fmt.Errorf("--disparities %d: give the number of disparities D ≥ 2", d)
			}
			left, err := gen.LoadImage(args[0])
			if err != nil {
				return err
			}
			right, err := gen.LoadImage(args[1])
			if err != nil {
				return err
			}
			st, err := gen.StereoTiled(left, right, width, height, d, opts)
			if err != nil {
				return err
			}
			return genWrite(cmd, out, st, tile)
		},
	}
	tiledFlags(cmd, &out, &width, &height, &tile)
	stereoFlags(cmd, &d, &opts)
	return cmd
}
