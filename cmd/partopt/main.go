// Command partopt proves which parts of the MAP labeling of a discrete graphical model
// are optimal (persistency), from a laptop to a cluster. Run "partopt help".
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"

	"github.com/partopt/partopt/internal/redact"
	"github.com/partopt/partopt/internal/version"
	"github.com/partopt/partopt/job"
	"github.com/spf13/cobra"
)

func main() {
	os.Exit(profiled(os.Getenv("PARTOPT_CPUPROFILE"), os.Stderr, func() int { return run(os.Args[1:], os.Stdout, os.Stderr) }))
}

// profiled runs cmd, writing a Go CPU profile of it to path when path is set
// ($PARTOPT_CPUPROFILE: what a performance report or a benchmark's
// breakdown needs, read with "go tool pprof"); a path that cannot be
// written is bad input, reported before anything runs.
func profiled(path string, stderr io.Writer, cmd func() int) int {
	if path == "" {
		return cmd()
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "partopt: PARTOPT_CPUPROFILE: %v\n", err)
		return exitBadInput
	}
	code := cmd()
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintf(stderr, "partopt: PARTOPT_CPUPROFILE: %v\n", err)
		return max(code, exitInternal)
	}
	return code
}

// Exit codes of the CLI contract.
const (
	exitOK       = 0
	exitInternal = 1
	exitBadInput = 2
)

// internalError marks failures that are not the user's input (exit code 1).
type internalError struct{ err error }

func (e internalError) Error() string { return e.err.Error() }
func (e internalError) Unwrap() error { return e.err }

// run executes the CLI and returns the exit code: 0 on success, 2 on bad input (bad
// arguments, unreadable or malformed files), 1 on internal failures.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a context that commands which can be interrupted (solve)
// watch besides the signals; tests use it to cancel them.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Coordinators, workers and status lines write from many goroutines: files
	// take concurrent writes, other writers (tests' buffers) get a lock.
	stdout, stderr = syncWriter(stdout), syncWriter(stderr)
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	// Errors are masked where they are made; this is the last line of defence.
	fmt.Fprintf(stderr, "partopt: %s\n", redact.URLs(strings.ReplaceAll(err.Error(), "\n", "; ")))
	if errors.As(err, new(internalError)) || errors.As(err, new(job.InternalError)) {
		return exitInternal
	}
	return exitBadInput
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "partopt",
		Short: "Partial optimality (persistency) for MAP inference in discrete graphical models",
		Long: `partopt proves which labels of a minimum-energy labeling of a discrete graphical
model (MRF) are optimal — persistency, or partial optimality — with a certificate
anyone can re-check from the model alone: whole models in memory, gigapixel grids
by windows out of core, on one machine or a cluster over NATS JetStream.

Exit status: 0 on success, 1 on an internal failure (or a proof that does not
verify, a job that failed), 2 on bad input (arguments, unreadable or malformed
files, an unknown job, no connection).

PARTOPT_CPUPROFILE=FILE writes a CPU profile of any command to FILE ("go tool
pprof FILE"), for a report of where the time goes.`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("partopt {{.Version}}\n")
	addLogFlags(root)
	defer setExamples(root)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newInfoCmd(), newEnergyCmd(), newSolveCmd(), newVerifyCmd())
	root.AddCommand(newGenCmd(), newConvertCmd(), newRunCmd(), newReduceCmd(), newExportCmd())
	root.AddCommand(newVersionCmd())
	root.AddCommand(newServerCmd(), newWorkerCmd(), newCoordinatorCmd(), newSubmitCmd(), newStatusCmd(), newFetchCmd(), newCancelCmd(), newJobsCmd(), newDeleteCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print partopt's version: module version, commit, Go version",
		Long: `Print the version of this partopt binary, from the build information the go
command embeds: the module version (a release tag, or "(devel)" for a build in a
checkout), the commit it was built from with its time ("modified" when the tree had
uncommitted changes), and the Go version and platform. Reports (report.json) and
the partopt_build_info metric carry the same version.`,
		Example: `  partopt version
  partopt --version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version.Get()
			fmt.Fprintf(cmd.OutOrStdout(), "partopt %s\n%s %s/%s\n", v, v.Go, runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

// syncWriter returns w, behind a lock unless it is a file.
func syncWriter(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return &lockedWriter{w: w}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
