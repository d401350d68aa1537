// The verify command: re-check, from the model alone, the persistency proof that
// solve --method pbp wrote, and that the labeling files agree with it.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/persistency"
	"github.com/spf13/cobra"
)

// maxVerifyEnumeration bounds the labelings that an exhaustive certificate may ask
// verify to enumerate (a certificate names its own limit, and a file is input):
// persistency.Exhaustive's default (pbp wrote such certificates for higher-order
// models, up to 2^20 labelings, before it solved them with srmp).
const maxVerifyEnumeration = 1 << 22

func newVerifyCmd() *cobra.Command {
	var noEvid bool
	cmd := &cobra.Command{
		Use:   "verify MODEL DIR",
		Short: "Re-check the persistency proof that solve wrote to DIR",
		Long: `Re-check the output of "partopt solve MODEL -o DIR" (method pbp) from MODEL
alone: read DIR/certificate.gob, rebuild the final sub-problem of the proof from
MODEL (with MODEL.evid applied, as solve did; --no-evid ignores it, and must then
have been given to solve too), check the certificate on it, and check that
DIR/persistent.evid lists exactly the proven labels and the observed variables and
that DIR/labels.sol takes them. On success the last line of stdout is

  verified <k> persistent variables, certificate gap <g>

k counting the persistent variables among the free ones, g the certificate's
energy − bound on the final sub-problem.

Exit codes: 0 verified; 1 NOT verified (the certificate does not prove the labels,
or persistent.evid or labels.sol disagrees with them; one line "NOT verified: ..."
on stderr) or an internal error; 2 bad input (a missing, unreadable, truncated or
corrupt file, or files of another model or evidence), with a one-line message.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd, args[0], args[1], noEvid)
		},
	}
	cmd.Flags().BoolVar(&noEvid, "no-evid", false, "ignore MODEL.evid")
	return cmd
}

// notVerified is the failure of a well-formed proof: exit code 1.
func notVerified(format string, args ...any) error {
	return internalError{fmt.Errorf("NOT verified: "+format, args...)}
}

func runVerify(cmd *cobra.Command, modelPath, dir string, noEvid bool) error {
	in, err := loadProblem(modelPath, noEvid)
	if err != nil {
		return err
	}
	// Read every file before the check, so that bad input fails fast.
	certPath := filepath.Join(dir, certificateFile)
	if _, err := os.Stat(certPath); errors.Is(err, os.ErrNotExist) && windowedOutput(dir) {
		return fmt.Errorf("%s holds a windowed result, which has no whole-model certificate to verify: every window's certificate was checked as it was solved (report.json \"verified\")", dir)
	}
	res, err := readResultFile(certPath)
	if err != nil {
		return err
	}
	if n := in.solved.NumVars(); len(res.Persistent) != n {
		what := "variables"
		if in.ev != nil {
			what = "free variables (after " + in.ev.path + ")"
		}
		return fmt.Errorf("%s: a result for %d variables, but %s has %d %s", certPath, len(res.Persistent), modelPath, n, what)
	}
	if c := res.Certificate; c != nil && c.Dual == nil && c.Exhaustive && c.Limit > maxVerifyEnumeration {
		return fmt.Errorf("%s: the exhaustive certificate asks to enumerate up to %d labelings; verify enumerates at most %d", certPath, c.Limit, maxVerifyEnumeration)
	}
	evidPath := filepath.Join(dir, persistentFile)
	listed, err := uai.ReadEvidenceFile(evidPath)
	if err != nil {
		return err
	}
	fixed, err := listed.Fixed(in.m.LabelCounts())
	if err != nil {
		return fmt.Errorf("%s: %w", evidPath, err)
	}
	labelsPath := filepath.Join(dir, labelsFile)
	labels, err := uai.ReadSolutionFile(labelsPath, in.m.NumVars())
	if err != nil {
		return err
	}
	if err := in.m.CheckLabeling(labels); err != nil {
		return fmt.Errorf("%s: %w", labelsPath, err)
	}
	in.note(cmd.ErrOrStderr())

	chk, err := persistency.Verify(in.solved, res)
	if err != nil {
		return notVerified("%s: %v", certPath, err)
	}
	want := provenLabels(in, res.Persistent)
	for v, l := range want {
		switch got := fixed[v]; {
		case got == l:
		case got < 0:
			return notVerified("%s lacks variable %d, which the proof or the evidence fixes to %d", evidPath, v, l)
		case l < 0:
			return notVerified("%s fixes variable %d to %d, which is neither proven persistent nor observed", evidPath, v, got)
		default:
			return notVerified("%s gives variable %d label %d, the proof or the evidence %d", evidPath, v, got, l)
		}
	}
	for v, l := range want {
		if l >= 0 && labels[v] != l {
			return notVerified("%s gives variable %d label %d, the proof or the evidence %d", labelsPath, v, labels[v], l)
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "verified %d persistent variables, certificate gap %s\n", len(res.Set), formatEnergy(chk.Gap))
	return nil
}

// windowedOutput says whether dir holds the report of a windowed solve.
func windowedOutput(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, reportFile))
	if err != nil {
		return false
	}
	var rep struct{ Plan string }
	return json.Unmarshal(data, &rep) == nil && rep.Plan != ""
}

// readResultFile reads a result file; errors name it.
func readResultFile(path string) (*persistency.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (partopt solve --method pbp writes it)", err)
	}
	defer f.Close()
	res, err := persistency.ReadResult(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}
