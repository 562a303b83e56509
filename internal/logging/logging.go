// Package logging builds the process logger: logr over zap, as text or
// JSON, sampling repeated messages with a small table of its own.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
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
//
// Repeated messages are sampled: per level and message, beyond the first
// 100 entries in a second only every 100th is written (see sampler.go).
// From verbosity 2 on nothing is sampled.
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
	// The encoders and options are those controller-runtime's zap.New gives
	// in production mode (UseDevMode(false)), with its sampler replaced by
	// ours (sampler.go): JSON with zap's production encoder config and
	// RFC 3339 times in seconds, text with zap's development encoder config
	// (ISO 8601 times in milliseconds), no caller, stack traces only from
	// panic level, encoding errors to out. controller-runtime disables its
	// sampling when verbosity 2 or more is enabled; so does this.
	var enc zapcore.Encoder
	switch strings.ToLower(format) {
	case "json", "":
		cfg := zap.NewProductionEncoderConfig()
		cfg.EncodeTime = zapcore.RFC3339TimeEncoder
		enc = zapcore.NewJSONEncoder(cfg)
	case "text":
		enc = zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: want json or text", format)
	}
	sink := zapcore.AddSync(out)
	var core zapcore.Core = zapcore.NewCore(&crzap.KubeAwareEncoder{Encoder: enc}, sink, lvl)
	if !lvl.Enabled(zapcore.Level(-2)) {
		core = newSampler(core, sampleTick, sampleFirst, sampleThereafter)
	}
	return zapr.NewLogger(zap.New(core, zap.AddStacktrace(zapcore.PanicLevel), zap.ErrorOutput(sink))), nil
}
