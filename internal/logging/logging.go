// Package logging builds the process logger: logr over zap, as text or JSON.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// New returns a logger to standard error for level (debug, info, warn,
// error, or a number: the logr verbosity, so 2 is more than debug) and
// format (text or json).
//
// Every entry is one line. Errors carry their message, never a Go stack
// trace: shardgate logs an error for a condition of its inputs (a broken
// config file, an unreachable apiserver), where a stack of the logging
// goroutine says nothing and breaks line-oriented log pipelines. A panic
// still prints its stack.
func New(level, format string) (logr.Logger, error) {
	return NewTo(os.Stderr, level, format)
}

// NewTo is New writing to out.
func NewTo(out io.Writer, level, format string) (logr.Logger, error) {
	var lvl zapcore.Level
	switch strings.ToLower(level) {
	case "debug":
		lvl = zapcore.DebugLevel
	case "info", "":
		lvl = zapcore.InfoLevel
	case "warn", "warning":
		lvl = zapcore.WarnLevel
	case "error":
		lvl = zapcore.ErrorLevel
	default:
		var v int
		if _, err := fmt.Sscanf(level, "%d", &v); err != nil || v < 0 || v > 10 {
			return logr.Logger{}, fmt.Errorf("--log-level %q: want debug, info, warn, error or a verbosity 0-10", level)
		}
		lvl = zapcore.Level(-v)
	}
	opts := []crzap.Opts{crzap.Level(lvl), crzap.WriteTo(out), crzap.StacktraceLevel(zapcore.PanicLevel)}
	switch strings.ToLower(format) {
	case "json", "":
		opts = append(opts, crzap.UseDevMode(false))
	case "text":
		opts = append(opts, crzap.ConsoleEncoder(), crzap.UseDevMode(false))
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: want json or text", format)
	}
	return crzap.New(opts...), nil
}
