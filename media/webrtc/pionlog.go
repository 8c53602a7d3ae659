package webrtc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// levelTrace is below slog's Debug: pion's trace lines (every packet and
// state step) are kept out of even a debug log.
const levelTrace = slog.LevelDebug - 4

// slogFactory routes pion's loggers into the server's slog.Logger, so that
// its lines come out in the server's format (JSON lines stay JSON) and
// level, each with component "pion" and pion's scope (ice, dtls, pc...).
type slogFactory struct{ log *slog.Logger }

func (f slogFactory) NewLogger(scope string) logging.LeveledLogger {
	return slogLeveled{f.log.With("component", "pion", "scope", scope)}
}

type slogLeveled struct{ log *slog.Logger }

func (l slogLeveled) at(lv slog.Level, msg string) { l.log.Log(context.Background(), lv, msg) }

func (l slogLeveled) atf(lv slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), lv) {
		l.log.Log(context.Background(), lv, fmt.Sprintf(format, args...))
	}
}

func (l slogLeveled) Trace(msg string)                  { l.at(levelTrace, msg) }
func (l slogLeveled) Tracef(format string, args ...any) { l.atf(levelTrace, format, args...) }
func (l slogLeveled) Debug(msg string)                  { l.at(slog.LevelDebug, msg) }
func (l slogLeveled) Debugf(format string, args ...any) { l.atf(slog.LevelDebug, format, args...) }
func (l slogLeveled) Info(msg string)                   { l.at(slog.LevelInfo, msg) }
func (l slogLeveled) Infof(format string, args ...any)  { l.atf(slog.LevelInfo, format, args...) }
func (l slogLeveled) Warn(msg string)                   { l.at(slog.LevelWarn, msg) }
func (l slogLeveled) Warnf(format string, args ...any)  { l.atf(slog.LevelWarn, format, args...) }
func (l slogLeveled) Error(msg string)                  { l.at(slog.LevelError, msg) }
func (l slogLeveled) Errorf(format string, args ...any) { l.atf(slog.LevelError, format, args...) }
