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

func newRunCmd() *cobra.Command {
	var f solveFlags
	var e service.Embedded
	var secrets func() error
	cmd := &cobra.Command{
		Use:   "run MODEL -o DIR",
		Short: "Prove persistent labels by windows over an embedded NATS cluster (no server to install)",
		Long:  help("run"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.haloSet = cmd.Flags().Changed("halo")
			if f.window == 0 {
				f.window = job.DefaultRasterWindow
			}
			if err := f.validate(); err != nil {
				return err
			}
			if err := secrets(); err != nil {
				return err
			}
			e.Workers, e.Note = f.workers, noteTo(cmd)
			e.Log = logger(cmd, slog.LevelWarn) // the progress line says the rest
			defer e.Close()
			if err := runJob(cmd, f.spec(args[0]), job.Options{Runtime: &e}); err != nil {
				return err
			}
			return e.RemoveState()
		},
	}
	addSolveFlags(cmd, &f, false)
	addClusterMethodFlag(cmd, &f, job.PBPIRI)
	cmd.Flags().StringVar(&e.Listen, "listen", "", "also accept workers of other machines at HOST:PORT (default: in-process only; beyond this machine, with --token or --user/--password, or --insecure)")
	secrets = addServerAuthFlags(cmd, &e.Server)
	cmd.Flags().StringVar(&e.State, "state", "", "keep the run's work in `DIR` (default: a temporary directory): a run stopped before its end resumes there when started again with the same arguments; removed once the outputs are written")
	cmd.Flags().StringVar(&e.HTTP, "http", "", "serve the status page and /metrics at ADDR (e.g. localhost:8222)")
	return cmd
}
