package persistency_test

import (
	"testing"

	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/persistency"
	"github.com/partopt/partopt/srmp"
	"github.com/partopt/partopt/trws"
)

// higherOrderModels are the models of ../shared/models with factors of order > 2.
var higherOrderModels = []string{
	"toulbar2/network.uai",
	"pascal2-dechterlab/pedigree/pedigree1.uai",
	"toulbar2/pedigree9.uai.xz",
	"pascal2-dechterlab/promedas/or_chain_10.fg.uai",
	"uai2014-mroavi/MAP/Promedas_61.uai",
	"uai2014-mroavi/MAP/Promedas_70.uai",
	"toulbar2/water.uai",
	"pascal2-dechterlab/grid/50-20-5.uai",
	"pascal2-dechterlab/grid/75-26-5.uai",
	"pascal2-dechterlab/grid/90-50-5.uai",
	"toulbar2/404.wcsp.xz",
	"uai2014-mroavi/MAP/wcsp_11.uai",
}

// BenchmarkHigherOrderModels runs, on every higher-order model of ../shared/models
// (evidence applied), SRMP alone (srmp.DefaultOptions) and Algorithm 1 with SRMP and each
// boundary, reporting per run the seconds, SRMP's bound, its best energy, the
// optimum of oracle.tsv ("opt", +Inf when unknown) and the persistency score:
//
//	go test ./persistency -run '^$' -bench HigherOrderModels -benchtime 1x
func BenchmarkHigherOrderModels(b *testing.B) {
	testutil.SkipWithoutShared(b, sharedModels)
	best := map[string]float64{}
	for _, r := range testutil.ReadOracle(b, sharedModels) {
		best[r.Path] = r.Energy
	}
	for _, path := range higherOrderModels {
		m := readShared(b, path)
		b.Run(path+"/srmp", func(b *testing.B) {
			var res trws.Result
			var bound float64
			for range b.N {
				s, err := srmp.New(m)
				if err != nil {
					b.Fatal(err)
				}
				if res, err = s.Solve(testCtx, srmp.DefaultOptions()); err != nil {
					b.Fatal(err)
				}
				if bound, err = s.Bound(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(bound, "bound")
			b.ReportMetric(res.Energy, "energy")
			b.ReportMetric(best[path], "opt")
			b.ReportMetric(float64(res.Agreeing)/float64(max(1, m.NumVars())), "agreeing")
			b.ReportMetric(float64(res.Iterations), "iterations")
		})
		for _, v := range variants {
			b.Run(path+"/pbp-"+v.String(), func(b *testing.B) {
				var res *persistency.Result
				for range b.N {
					var err error
					if res, err = persistency.Run(testCtx, m, persistency.Options{Variant: v}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(res.Score, "score")
				b.ReportMetric(float64(len(res.Set)), "persistent")
				b.ReportMetric(float64(res.PruningIterations), "pruning")
			})
		}
	}
}
