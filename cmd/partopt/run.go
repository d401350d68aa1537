// The run command: a windowed solve over an embedded NATS server, with the
// coordinator and the workers in this process (and, with --listen, workers of
// other machines joining it).
package main

import (
	"log/slog"

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/service"
	"github.com/spf13/cobra"
)

const runHelp = `Solve MODEL by windows as "partopt solve --method pbp --window N" does, but
distributed: an embedded NATS server with JetStream (in a temporary directory,
nothing to install) carries the window tasks to --workers worker slots in this
process and their results back to the coordinator, which merges them in plan
order. The outputs are those of the windowed solve, byte for byte (a raster's
labels.plf, persistent.plf and persistency.png; labels.sol and persistent.evid
when small enough), and report.json with "runtime": "nats-embedded" and, should a window
fail on every delivery, "lost_windows" (such windows prove nothing; the run
still finishes).

MODEL may be any model. A raster — a .grid file or a UAI model whose factors
form a 4-connected W×H grid — gets square windows (default 512 pixels, halo
32) and label files. Any other model, of any factor order (MODEL.evid
applied), gets the BFS regions of "solve --window N": regions of N variables
(default 512) plus --halo graph steps (default 2), the coordinator planning
them on the model in memory and each task carrying its region's variables and
the labels fixed around them; it writes labels.sol, persistent.evid and
report.json, those of "partopt solve --window N --halo H" whatever --workers.
With --listen HOST:PORT the server also accepts workers of other machines
("partopt worker --nats nats://HOST:PORT"); the model (and MODEL.evid) is then
uploaded to the object store for them. With --http ADDR a status page (job
progress, workers, the live persistency map of a raster) and Prometheus
metrics (/metrics) are served there.`

func newRunCmd() *cobra.Command {
	var f solveFlags
	var e service.Embedded
	cmd := &cobra.Command{
		Use:   "run MODEL -o DIR",
		Short: "Prove persistent labels by windows over an embedded NATS cluster (no server to install)",
		Long:  runHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.method = string(job.PBP)
			f.haloSet = cmd.Flags().Changed("halo")
			if f.window == 0 {
				f.window = job.DefaultRasterWindow
			}
			if err := f.validate(); err != nil {
				return err
			}
			e.Workers, e.Note = f.workers, noteTo(cmd)
			e.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			return runJob(cmd, f.spec(args[0]), job.Options{Runtime: &e})
		},
	}
	addSolveFlags(cmd, &f, false)
	cmd.Flags().StringVar(&e.Listen, "listen", "", "also accept workers of other machines at HOST:PORT (default: in-process only)")
	cmd.Flags().StringVar(&e.HTTP, "http", "", "serve the status page and /metrics at ADDR (e.g. localhost:8222)")
	return cmd
}
