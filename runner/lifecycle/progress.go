package lifecycle

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"seckill-harness/runner"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progressPrinter renders live progress: on a terminal one line rewritten
// in place every second; elsewhere (CI logs) a plain line every `plainEvery`.
// activeFault names the faults in force (may be nil).
func progressPrinter(w io.Writer, tty bool, plainEvery time.Duration, activeFault func() string) func(runner.Progress) {
	var lastPlain time.Duration = -plainEvery
	return func(p runner.Progress) {
		final := p.InFlight == 0 && p.Elapsed >= p.Total
		line := fmt.Sprintf("%5.1f/%.0fs %-9s %6.0f ops/s  in flight %4d  p99(1s) %7.2f ms  max %7.2f ms  ok %d sold-out %d unknown %d error %d dropped %d",
			p.Elapsed.Seconds(), p.Total.Seconds(), trunc(p.Phase, 9), p.Rate, p.InFlight,
			float64(p.LastP99.Microseconds())/1000, float64(p.LastMax.Microseconds())/1000,
			p.Accepted, p.SoldOut, p.Unknown, p.Errors, p.Dropped)
		if activeFault != nil {
			if f := activeFault(); f != "" {
				line += "  FAULT " + f
			}
		}
		if tty {
			fmt.Fprintf(w, "\r\033[K%s", line)
			if final {
				fmt.Fprintln(w)
			}
			return
		}
		if p.Elapsed-lastPlain >= plainEvery-plainEvery/10 || final {
			lastPlain = p.Elapsed
			fmt.Fprintln(w, line)
		}
	}
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimSpace(s[:n])
}

func CheckProgressMode(mode string) error {
	switch mode {
	case "auto", "tty", "plain", "off", "":
		return nil
	}
	return fmt.Errorf("--progress %q: want auto, tty, plain or off", mode)
}

// progressOption turns a --progress mode into a runner option (nil for off
// with no also). also, when set, sees every snapshot too (live metrics).
func progressOption(mode string, w io.Writer, activeFault func() string, also func(runner.Progress)) runner.Option {
	var print func(runner.Progress)
	if w != nil && mode != "off" && mode != "" {
		tty := mode == "tty" || (mode == "auto" && isTerminal(w))
		plainEvery := 5 * time.Second
		if mode == "plain" {
			plainEvery = time.Second
		}
		print = progressPrinter(w, tty, plainEvery, activeFault)
	}
	switch {
	case print == nil && also == nil:
		return nil
	case print == nil:
		return runner.WithProgress(time.Second, also)
	case also == nil:
		return runner.WithProgress(time.Second, print)
	}
	return runner.WithProgress(time.Second, func(p runner.Progress) { also(p); print(p) })
}
