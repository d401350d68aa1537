// Logs: every command's --log-format and --log-level (persistent flags of the
// root), one slog handler for the services' events, raft's and the progress
// lines written off a terminal.
package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/partopt/partopt/internal/redact"
	"github.com/spf13/cobra"
)

// Log formats and levels of the flags.
var (
	logFormats = []string{"text", "json"}
	logLevels  = []string{"debug", "info", "warn", "error"}
)

// addLogFlags adds --log-format and --log-level to root, for every command.
func addLogFlags(root *cobra.Command) {
	fl := root.PersistentFlags()
	fl.String("log-format", "text", "log lines as text (key=value) or json, one event a line on stderr: "+strings.Join(logFormats, ", "))
	fl.String("log-level", "info", "the least severe events logged: "+strings.Join(logLevels, ", ")+" (debug adds one line per window event)")
	enumCompletion(root, "log-format", logFormats...)
	enumCompletion(root, "log-level", logLevels...)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		_, err := newLogger(cmd, slog.LevelInfo)
		return err
	}
}

// newLogger is the logger of cmd's --log-format and --log-level on stderr;
// def is the level when --log-level is not given.
func newLogger(cmd *cobra.Command, def slog.Level) (*slog.Logger, error) {
	level := def
	if f := cmd.Flag("log-level"); f != nil && f.Changed {
		switch f.Value.String() {
		case "debug":
			level = slog.LevelDebug
		case "info":
			level = slog.LevelInfo
		case "warn":
			level = slog.LevelWarn
		case "error":
			level = slog.LevelError
		default:
			return nil, fmt.Errorf("--log-level %q: want one of %s", f.Value, strings.Join(logLevels, ", "))
		}
	}
	// Every event of every command, raft's included, has the credentials of
	// the URLs it quotes masked.
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: redact.ReplaceAttr}
	format := "text"
	if f := cmd.Flag("log-format"); f != nil {
		format = f.Value.String()
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want one of %s", format, strings.Join(logFormats, ", "))
}

// logger is newLogger once the flags were checked (PersistentPreRunE).
func logger(cmd *cobra.Command, def slog.Level) *slog.Logger {
	l, err := newLogger(cmd, def)
	if err != nil {
		panic(err) // checked before every command runs
	}
	return l
}

// enumCompletion completes flag name of cmd (or of its subcommands, for a
// persistent flag) with values.
func enumCompletion(cmd *cobra.Command, name string, values ...string) {
	cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	})
}
