package persistency_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/trws"
)

// cold is the TRW-S relaxation without warm starts, for the comparison.
type cold struct{ persistency.TRWS }

func (c cold) Solve(ctx context.Context, p *model.Model, _ *persistency.Warm) (*persistency.Outcome, error) {
	return c.TRWS.Solve(ctx, p, nil)
}

// TestPaperTable prints the paper-style table of docs/BENCHMARKS.md. It takes several
// minutes: run with PARTOPT_TABLE=1 go test ./persistency -run PaperTable -v -timeout 60m
func TestPaperTable(t *testing.T) {
	if os.Getenv("PARTOPT_TABLE") == "" {
		t.Skip("set PARTOPT_TABLE=1 to build the benchmark table (several minutes)")
	}
	type inst struct {
		name string
		m    func() *model.Model
	}
	shared := func(path string) func() *model.Model {
		return func() *model.Model {
			full := testutil.SharedPath("models", path)
			testutil.SkipWithoutShared(t, full)
			m, err := uai.ReadFile(full)
			if err != nil {
				t.Fatal(err)
			}
			if ev, ok := uai.EvidencePathFor(full); ok {
				e, _ := uai.ReadEvidenceFile(ev)
				fx, _ := e.Fixed(m.LabelCounts())
				c, _ := m.Condition(fx)
				m = c.Model
			}
			return m
		}
	}
	insts := []inst{
		{"pdb1i24 (side-chain)", shared("pascal2-dechterlab/proteinfolding/pdb1i24.uai")},
		{"ProteinFolding_15", shared("uai2014-mroavi/MAP/ProteinFolding_15.uai")},
		{"Segmentation_11 (21 labels)", shared("uai2014-mroavi/MAP/Segmentation_11.uai")},
		{"1_28_s (binary seg.)", shared("pascal2-dechterlab/segmentation/1_28_s.binary.uai")},
		{"grid10x10.f10 (Ising)", shared("toulbar2/grid10x10.f10.uai")},
		{"Grids_26 (spin glass)", shared("uai2014-mroavi/MAP/Grids_26.uai")},
		{"denoise 64x64 K=8 λ=1.5 σ=0.6", func() *model.Model { return random.PottsDenoising(random.New(1), 64, 64, 8, 0.6, 4, 1.5) }},
		{"denoise 256x256 K=8 λ=1 σ=1.2", func() *model.Model { return random.PottsDenoising(random.New(1), 256, 256, 8, 1.2, 4, 1) }},
		{"denoise 256x256 K=8 λ=2 σ=1.2", func() *model.Model { return random.PottsDenoising(random.New(1), 256, 256, 8, 1.2, 4, 2) }},
	}
	fmt.Println("| instance | labels | vars | initial agreement | original | invariant | pruning its | solver its | time | solver share | cold-start time |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, in := range insts {
		m := in.m()
		maxK := 0
		for _, k := range m.LabelCounts() {
			maxK = max(maxK, int(k))
		}
		var first int
		runOne := func(v persistency.Variant, solver persistency.Relaxation) *persistency.Result {
			r, err := persistency.Run(context.Background(), m, persistency.Options{Variant: v, Solver: solver, Progress: func(p persistency.Progress) {
				if p.Iteration == 0 {
					first = p.SetSize
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := persistency.Verify(m, r); err != nil {
				t.Fatal(err)
			}
			return r
		}
		inv := runOne(persistency.Invariant, persistency.TRWS{Options: trws.DefaultOptions()})
		orig := runOne(persistency.Original, persistency.TRWS{Options: trws.DefaultOptions()})
		coldTime := "—"
		if m.NumVars() >= 4096 {
			st := time.Now()
			runOne(persistency.Invariant, cold{persistency.TRWS{Options: trws.DefaultOptions()}})
			coldTime = fmt.Sprintf("%.1f s", time.Since(st).Seconds())
		}
		fmt.Printf("| %s | %d | %d | %.4f | %.4f | %.4f | %d | %d | %.1f s | %.0f%% | %s |\n", in.name, maxK, m.NumVars(),
			float64(first)/float64(m.NumVars()), orig.Score, inv.Score, inv.PruningIterations, inv.SolverIterations, inv.Seconds,
			100*inv.SolverSeconds/math.Max(inv.Seconds, 1e-9), coldTime)
	}
}
