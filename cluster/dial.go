package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Dial connects and attaches to the resources the services created: what the
// clients (submit, status, fetch, cancel) call.
func Dial(ctx context.Context, o ConnOptions, name string) (*Resources, error) {
	nc, err := Connect(o, name)
	if err != nil {
		return nil, err
	}
	res, err := Attach(ctx, nc, o.Namespace)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", o.display(), err)
	}
	return res, nil
}

// DialService connects and creates or configures the resources with cfg: what
// the services (coordinators, workers) call.
func DialService(ctx context.Context, o ConnOptions, cfg Config, name string) (*Resources, error) {
	nc, err := Connect(o, name)
	if err != nil {
		return nil, err
	}
	if cfg.Namespace == "" {
		cfg.Namespace = o.Namespace
	}
	res, err := Open(ctx, nc, cfg)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w (is JetStream enabled on the server?)", o.display(), err)
	}
	return res, nil
}

// DialWaiting is DialService that, while NATS cannot be reached, tries again
// every second, logging once, until ctx ends: the services of a cluster start
// in any order.
func DialWaiting(ctx context.Context, o ConnOptions, cfg Config, name string, log *slog.Logger) (*Resources, error) {
	for logged := false; ; logged = true {
		res, err := DialService(ctx, o, cfg, name)
		if err == nil || ctx.Err() != nil {
			return res, err
		}
		if !logged {
			log.Warn("waiting for NATS", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}
