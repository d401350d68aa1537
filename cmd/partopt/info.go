package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/partopt/partopt/model"
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
tables are recognised in explicit files), forbidden entries and a memory estimate.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			switch {
			case modelfile.IsGrid(args[0]):
				name = "grid"
			case opengm.IsFile(args[0]):
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
