package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
)

// reasonBook remembers, per neighbour address, why GoBGP last reported the
// session down (the "Reason" of its "Peer Down" message).
type reasonBook struct {
	mu      sync.Mutex
	reasons map[string]string
}

func newReasonBook() *reasonBook { return &reasonBook{reasons: make(map[string]string)} }

func (b *reasonBook) set(key, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reasons[key] = reason
}

func (b *reasonBook) get(key string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reasons[key]
}

// gobgpLogger adapts GoBGP's logger interface to log/slog. GoBGP's info
// messages go to debug: the Speaker logs session changes itself.
type gobgpLogger struct {
	log     *slog.Logger
	reasons *reasonBook
}

var _ gobgplog.Logger = (*gobgpLogger)(nil)

func newGoBGPLogger(l *slog.Logger, reasons *reasonBook) *gobgpLogger {
	return &gobgpLogger{log: l.With("component", "gobgp"), reasons: reasons}
}

func (g *gobgpLogger) emit(level slog.Level, msg string, fields gobgplog.Fields) {
	if msg == "Peer Down" {
		g.reasons.set(fmt.Sprint(fields["Key"]), fmt.Sprint(fields["Reason"]))
	}
	if !g.log.Enabled(context.Background(), level) {
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		attrs = append(attrs, k, fields[k])
	}
	g.log.Log(context.Background(), level, msg, attrs...)
}

func (g *gobgpLogger) Panic(msg string, f gobgplog.Fields) {
	g.emit(slog.LevelError, msg, f)
	panic(msg)
}

func (g *gobgpLogger) Fatal(msg string, f gobgplog.Fields) {
	g.emit(slog.LevelError, msg, f)
	panic(msg)
}

func (g *gobgpLogger) Error(msg string, f gobgplog.Fields) { g.emit(slog.LevelError, msg, f) }
func (g *gobgpLogger) Warn(msg string, f gobgplog.Fields)  { g.emit(slog.LevelWarn, msg, f) }
func (g *gobgpLogger) Info(msg string, f gobgplog.Fields)  { g.emit(slog.LevelDebug, msg, f) }
func (g *gobgpLogger) Debug(msg string, f gobgplog.Fields) { g.emit(slog.LevelDebug-4, msg, f) }

// SetLevel is ignored: the slog handler decides.
func (g *gobgpLogger) SetLevel(gobgplog.LogLevel) {}

// GetLevel tells GoBGP whether to build its debug messages at all.
func (g *gobgpLogger) GetLevel() gobgplog.LogLevel {
	if g.log.Enabled(context.Background(), slog.LevelDebug-4) {
		return gobgplog.DebugLevel
	}
	return gobgplog.InfoLevel
}
