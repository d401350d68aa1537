package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/model/opengm"
	"github.com/partopt/partopt/model/uai"
	"github.com/spf13/cobra"
)

func newInfoCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info MODEL",
		Short: "Describe a model: variables, label counts, factor orders, function kinds, memory",
		Long: `Describe a model file — UAI (.uai), .LG, toulbar2's .wcsp (each optionally .gz or
.xz), OpenGM HDF5 (.h5) or partopt's tiled grid (.grid) — its variables and label
counts, the orders of its factors, the function kinds found (Potts and truncated
tables are recognised in explicit files), forbidden entries and a memory estimate.
A .grid file is described from its header alone, in constant time and memory
whatever its size: its tiles are not read, so its forbidden unaries are not
counted, and the distinct functions and the memory of reading it whole are given
as ranges: from all its values equal to all distinct.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if modelfile.IsGrid(args[0]) {
				s, err := grid.Describe(args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd, gridInfoJSON(args[0], s))
				}
				writeGridInfo(cmd.OutOrStdout(), args[0], s)
				return nil
			}
			m, err := modelfile.Read(args[0])
			if err != nil {
				return err
			}
			s := m.Stats()
			if asJSON {
				return writeJSON(cmd, infoJSON(args[0], s))
			}
			w := cmd.OutOrStdout()
			format, _ := uai.FormatOf(args[0])
			name := format.String()
			if opengm.IsFile(args[0]) {
				name = "OpenGM HDF5"
			}
			fmt.Fprintf(w, "model      %s (%s)\n", args[0], name)
			fmt.Fprintf(w, "variables  %d (labels %d..%d, %d with one label)\n", s.Vars, s.MinLabels, s.MaxLabels, s.OneLabel)
			fmt.Fprintf(w, "factors    %d (%s)\n", s.Factors, countsByOrder(s))
			fmt.Fprintf(w, "functions  %d distinct (%s)\n", s.Functions, countsByKind(s))
			fmt.Fprintf(w, "forbidden  %d table entries\n", s.ForbiddenEntries)
			fmt.Fprintf(w, "offset     %v\n", s.Offset)
			fmt.Fprintf(w, "memory     %s (estimate)\n", bytesString(s.MemoryBytes))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

func countsByOrder(s model.Stats) string {
	orders := make([]int, 0, len(s.FactorsByOrder))
	for k := range s.FactorsByOrder {
		orders = append(orders, k)
	}
	slices.Sort(orders)
	parts := make([]string, len(orders))
	for i, k := range orders {
		parts[i] = fmt.Sprintf("order %d: %d", k, s.FactorsByOrder[k])
	}
	return strings.Join(parts, ", ")
}

func countsByKind(s model.Stats) string {
	var parts []string
	for k := model.Explicit; k <= model.TruncatedQuadratic; k++ {
		if n := s.FactorsByKind[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%v: %d factors", k, n))
		}
	}
	return strings.Join(parts, ", ")
}

func infoJSON(path string, s model.Stats) map[string]any {
	orders := map[string]int{}
	for k, n := range s.FactorsByOrder {
		orders[fmt.Sprint(k)] = n
	}
	kinds := map[string]int{}
	for k, n := range s.FactorsByKind {
		kinds[k.String()] = n
	}
	return map[string]any{
		"model": path, "variables": s.Vars, "min_labels": s.MinLabels, "max_labels": s.MaxLabels,
		"one_label_variables": s.OneLabel, "factors": s.Factors, "factors_by_order": orders,
		"functions": s.Functions, "factors_by_kind": kinds, "forbidden_entries": s.ForbiddenEntries,
		"offset": s.Offset, "memory_bytes": s.MemoryBytes,
	}
}

// writeGridInfo prints the description of a .grid file from its header: the lines
// of the other formats where they apply, then the grid's own.
func writeGridInfo(w io.Writer, path string, s grid.Stats) {
	h := s.Header
	oneLabel := int64(0)
	if h.Labels == 1 {
		oneLabel = s.Variables
	}
	fmt.Fprintf(w, "model      %s (grid)\n", path)
	fmt.Fprintf(w, "variables  %d (%d×%d pixels, labels %d..%d, %d with one label)\n", s.Variables, h.Width, h.Height, h.Labels, h.Labels, oneLabel)
	fmt.Fprintf(w, "factors    %d (order 1: %d, order 2: %d; %d-connected)\n", s.Factors(), s.Unaries, s.Edges, h.Connectivity)
	kinds := []string{fmt.Sprintf("%v: %d factors", model.Explicit, s.FactorsByKind()[model.Explicit])}
	if h.Kind != model.Explicit && s.Edges > 0 {
		kinds = append(kinds, fmt.Sprintf("%v: %d factors", h.Kind, s.Edges))
	}
	fmt.Fprintf(w, "functions  %d..%d distinct, by the values in the tiles (%s)\n", s.MinFunctions, s.MaxFunctions, strings.Join(kinds, ", "))
	fmt.Fprintf(w, "pairwise   %s\n", gridPairwise(h))
	if h.Mode == grid.Table {
		fmt.Fprintf(w, "forbidden  %d pairwise table entries; unaries not counted (tiles not read)\n", s.TableForbidden)
	} else {
		fmt.Fprintf(w, "forbidden  unaries not counted (tiles not read)\n")
	}
	fmt.Fprintf(w, "offset     %v\n", h.Offset)
	fmt.Fprintf(w, "tiles      %d (%d×%d of %d×%d pixels)\n", h.TilesX()*h.TilesY(), h.TilesX(), h.TilesY(), h.TileWidth, h.TileHeight)
	fmt.Fprintf(w, "file       %s (%d bytes)\n", bytesString(s.FileBytes), s.FileBytes)
	fmt.Fprintf(w, "memory     %s..%s read whole (estimate, by the distinct functions)\n", bytesString(s.MinMemoryBytes), bytesString(s.MemoryBytes))
	if s.Variables > job.MaxInMemoryPixels {
		fmt.Fprintf(w, "           past the %d pixels read whole: commands go by windows or bands, or refuse\n", job.MaxInMemoryPixels)
	}
}

// gridPairwise describes the pairwise terms of a grid header.
func gridPairwise(h grid.Header) string {
	var weight string
	switch h.Mode {
	case grid.Shared:
		weight = fmt.Sprintf("shared weight %v", h.W)
	case grid.PerEdge:
		weight = "a weight per edge"
	case grid.Table:
		return fmt.Sprintf("%v, one %d×%d table shared by every edge", h.Kind, h.Labels, h.Labels)
	}
	if h.Kind == model.Potts {
		return fmt.Sprintf("%v, %s", h.Kind, weight)
	}
	return fmt.Sprintf("%v, %s, truncation %v", h.Kind, weight, h.T)
}

// gridInfoJSON is infoJSON's map for a .grid described from its header: the keys
// of the other formats that the header determines ("functions" and
// "forbidden_entries" are not: "min_functions" and "max_functions" bound the
// first; "memory_bytes" is an upper bound, "min_memory_bytes" the lower), and the
// grid's own.
func gridInfoJSON(path string, s grid.Stats) map[string]any {
	h := s.Header
	oneLabel := int64(0)
	if h.Labels == 1 {
		oneLabel = s.Variables
	}
	orders := map[string]int64{"1": s.Unaries}
	if s.Edges > 0 {
		orders["2"] = s.Edges
	}
	kinds := map[string]int64{}
	for k, n := range s.FactorsByKind() {
		kinds[k.String()] = n
	}
	out := map[string]any{
		"model": path, "format": "grid", "variables": s.Variables, "min_labels": h.Labels, "max_labels": h.Labels,
		"one_label_variables": oneLabel, "factors": s.Factors(), "factors_by_order": orders,
		"min_functions": s.MinFunctions, "max_functions": s.MaxFunctions, "factors_by_kind": kinds, "offset": h.Offset, "min_memory_bytes": s.MinMemoryBytes, "memory_bytes": s.MemoryBytes,
		"width": h.Width, "height": h.Height, "connectivity": h.Connectivity,
		"pairwise_kind": h.Kind.String(), "weight_mode": h.Mode.String(),
		"tile_width": h.TileWidth, "tile_height": h.TileHeight, "tiles": h.TilesX() * h.TilesY(),
		"file_bytes": s.FileBytes, "within_in_memory_bound": s.Variables <= job.MaxInMemoryPixels,
	}
	switch h.Mode {
	case grid.Shared:
		out["w"] = h.W
	case grid.Table:
		out["table_forbidden_entries"] = s.TableForbidden
	}
	if h.Kind == model.TruncatedLinear || h.Kind == model.TruncatedQuadratic {
		out["t"] = h.T
		if math.IsInf(h.T, 1) {
			out["t"] = "+Inf" // JSON has no infinity
		}
	}
	return out
}

func bytesString(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}
