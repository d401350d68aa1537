package coordinator

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
)

// TestStoppedRunDoesNotTakeUpItsConsumer: when Run returns it stops its
// results iterator, which ends the reading goroutine's Next with an error;
// that is no loss of the consumer to take up again (a run of the README's
// example warned "the results consumer stopped: taking it up again" at its end
// about one time in five, when the ready retry timer won the select).
func TestStoppedRunDoesNotTakeUpItsConsumer(t *testing.T) {
	var log bytes.Buffer
	r := &Runner{log: slog.New(slog.NewTextHandler(&log, nil))} // no resources: touching them panics
	stopped := make(chan struct{})
	close(stopped)
	cause := errors.New("nats: messages iterator closed")
	for range 200 {
		if _, err := r.resumeResults(context.Background(), cause, stopped); err != cause {
			t.Fatalf("err %v, want the iterator's %v", err, cause)
		}
	}
	if log.Len() != 0 {
		t.Fatalf("logged:\n%s", log.String())
	}
}
