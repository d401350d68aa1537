package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// raftLogger is an hclog.Logger (what raft logs through) whose events go to
// log as slog events: raft writes JSON lines, each becomes one event of its
// level with raft's message and fields, so a coordinator's log has one format.
func raftLogger(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Output: &slogWriter{log: log}, Level: hclog.Info, JSONFormat: true})
}

// slogWriter re-emits hclog's JSON lines through a slog.Logger.
type slogWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *slogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// emit logs one hclog JSON line ("@level", "@message", "@module", fields).
func (w *slogWriter) emit(line []byte) {
	var ev map[string]any
	if err := json.Unmarshal(line, &ev); err != nil {
		w.log.Info(string(line), "component", "raft")
		return
	}
	level := slog.LevelInfo
	switch ev["@level"] {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	msg, _ := ev["@message"].(string)
	module, _ := ev["@module"].(string)
	attrs := []any{"component", module}
	keys := make([]string, 0, len(ev))
	for k := range ev {
		if len(k) > 0 && k[0] != '@' {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs = append(attrs, k, ev[k])
	}
	w.log.Log(context.Background(), level, msg, attrs...)
}
