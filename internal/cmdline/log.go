package cmdline

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// logLevels are the --log-level values, quietest last.
var logLevels = []string{"debug", "info", "warn", "error"}

// AddLogLevel gives every command --log-level: the log lines (cluster
// started and stopped, faults injected and healed, teardown, warnings) go
// through log/slog to stderr at that level and above; stdout keeps the
// human summary (or, with --json, the one JSON object).
func AddLogLevel(root *cobra.Command) {
	root.PersistentFlags().String("log-level", "info", "log lines on stderr at this level and above: "+strings.Join(logLevels, ", "))
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		_, err := LevelOf(cmd)
		return err
	}
	_ = root.RegisterFlagCompletionFunc("log-level", fixed(logLevels...))
}

// LevelOf reads --log-level.
func LevelOf(cmd *cobra.Command) (slog.Level, error) {
	s, _ := cmd.Flags().GetString("log-level")
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want one of %s", s, strings.Join(logLevels, ", "))
	}
	return l, nil
}

// Logger is the logger of a command: text records on its stderr at
// --log-level and above.
func Logger(cmd *cobra.Command) *slog.Logger {
	l, _ := LevelOf(cmd)
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: l}))
}
