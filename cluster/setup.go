package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/partopt/partopt/protocol"
)

// Config sizes the shared JetStream resources.
type Config struct {
	// AckWait is how long a task may go without an ack or a heartbeat before
	// JetStream redelivers it (a worker heartbeats every AckWait/3): the time a
	// crashed worker costs.
	AckWait time.Duration
	// MaxDeliver is how many times a task is delivered before it is reported
	// lost (a window that crashes every worker must not crash them all).
	MaxDeliver int
	// Duplicates is the window within which a republished task or result with
	// the same Nats-Msg-Id is dropped.
	Duplicates time.Duration
	// Memory keeps the streams in memory instead of on disk (tests).
	Memory bool
	// Replicas is the streams' and buckets' replica count on a NATS cluster
	// (3 survives the loss of a NATS node; default 1).
	Replicas int
	// Namespace names the cluster's resources (protocol.NewNames; "": the
	// default): services of one cluster share it.
	Namespace string
}

// DefaultConfig is the configuration of a production cluster.
func DefaultConfig() Config {
	return Config{AckWait: 30 * time.Second, MaxDeliver: 4, Duplicates: 2 * time.Minute}
}

// Resources are the JetStream resources of partopt, opened by Open.
type Resources struct {
	Conn    *nats.Conn
	JS      jetstream.JetStream
	Tasks   jetstream.Stream   // names.StreamTasks(), a work queue
	Results jetstream.Stream   // names.StreamResults()
	Workers jetstream.Consumer // names.ConsumerWorkers(), shared by every worker
	Objects jetstream.ObjectStore
	Jobs    jetstream.KeyValue
	Config  Config
	Names   protocol.Names // of Config.Namespace
}

// Open creates the streams, the workers' consumer, the object store and the
// key-value bucket where missing, or brings their configuration to cfg, and
// returns them: what the services (coordinators, workers) call. Clients call
// Attach.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Resources, error) {
	if cfg.AckWait <= 0 || cfg.MaxDeliver < 1 || cfg.Duplicates <= 0 || cfg.Replicas < 0 {
		return nil, fmt.Errorf("nats: config %+v: want positive ack wait, max deliveries and duplicate window", cfg)
	}
	names, err := protocol.NewNames(cfg.Namespace)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	storage := jetstream.FileStorage
	if cfg.Memory {
		storage = jetstream.MemoryStorage
	}
	replicas := max(cfg.Replicas, 1)
	r := &Resources{Conn: nc, JS: js, Config: cfg, Names: names}
	maxMsg := int32(min(nc.MaxPayload(), 1<<31-1))
	if r.Tasks, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: names.StreamTasks(), Subjects: names.TaskStreamSubjects(),
		Retention: jetstream.WorkQueuePolicy, Storage: storage, Duplicates: cfg.Duplicates,
		MaxMsgSize: maxMsg, Replicas: replicas,
	}); err != nil {
		return nil, fmt.Errorf("nats: stream %s: %w", names.StreamTasks(), err)
	}
	// One message per result subject (job, round, window): a result published
	// again after the duplicate window replaces the first, never piles up.
	if r.Results, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: names.StreamResults(), Subjects: names.ResultStreamSubjects(),
		Retention: jetstream.LimitsPolicy, Storage: storage, Duplicates: cfg.Duplicates,
		MaxMsgsPerSubject: 1, MaxMsgSize: maxMsg, Replicas: replicas,
	}); err != nil {
		return nil, fmt.Errorf("nats: stream %s: %w", names.StreamResults(), err)
	}
	if r.Workers, err = r.Tasks.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: names.ConsumerWorkers(), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, MaxAckPending: -1,
		MaxWaiting: 4096,
	}); err != nil {
		return nil, fmt.Errorf("nats: consumer %s: %w", names.ConsumerWorkers(), err)
	}
	objCfg := jetstream.ObjectStoreConfig{Bucket: names.ObjectBucket(), Storage: storage, Replicas: replicas}
	if r.Objects, err = js.CreateOrUpdateObjectStore(ctx, objCfg); err != nil {
		return nil, fmt.Errorf("nats: object store %s: %w", names.ObjectBucket(), err)
	}
	kvCfg := jetstream.KeyValueConfig{Bucket: names.JobBucket(), Storage: storage, History: 1, Replicas: replicas}
	if r.Jobs, err = js.CreateOrUpdateKeyValue(ctx, kvCfg); err != nil {
		return nil, fmt.Errorf("nats: key-value bucket %s: %w", names.JobBucket(), err)
	}
	return r, nil
}

// ErrNoCluster is Attach's error where no service has created the resources.
var ErrNoCluster = errors.New("no partopt cluster of this namespace on this NATS server yet (start a coordinator)")

// Attach opens the resources the services created, changing nothing: what
// clients (submit, status, fetch, cancel) call, with the services' namespace
// ns ("": the default). Config is the workers' consumer's, as the services set
// it.
func Attach(ctx context.Context, nc *nats.Conn, ns string) (*Resources, error) {
	names, err := protocol.NewNames(ns)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	r := &Resources{Conn: nc, JS: js, Config: DefaultConfig(), Names: names}
	r.Config.Namespace = names.Namespace()
	missing := func(err error) error {
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
			errors.Is(err, jetstream.ErrBucketNotFound) {
			return ErrNoCluster
		}
		return fmt.Errorf("nats: %w", err)
	}
	if r.Tasks, err = js.Stream(ctx, names.StreamTasks()); err != nil {
		return nil, missing(err)
	}
	if r.Results, err = js.Stream(ctx, names.StreamResults()); err != nil {
		return nil, missing(err)
	}
	if r.Workers, err = r.Tasks.Consumer(ctx, names.ConsumerWorkers()); err != nil {
		return nil, missing(err)
	}
	c := r.Workers.CachedInfo().Config
	r.Config.AckWait, r.Config.MaxDeliver = c.AckWait, c.MaxDeliver
	if r.Objects, err = js.ObjectStore(ctx, names.ObjectBucket()); err != nil {
		return nil, missing(err)
	}
	if r.Jobs, err = js.KeyValue(ctx, names.JobBucket()); err != nil {
		return nil, missing(err)
	}
	return r, nil
}

// JobSpec reads a job's spec from the Jobs bucket.
func (r *Resources) JobSpec(ctx context.Context, job string) (protocol.JobSpec, error) {
	e, err := r.Jobs.Get(ctx, protocol.JobSpecKey(job))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return protocol.JobSpec{}, fmt.Errorf("job %s: no such job", job)
	}
	if err != nil {
		return protocol.JobSpec{}, fmt.Errorf("job %s: %w", job, err)
	}
	spec, err := protocol.Decode[protocol.JobSpec](e.Value(), protocol.MaxMessageBytes)
	if err != nil {
		return spec, fmt.Errorf("job %s: stored spec: %w", job, err)
	}
	return spec, nil
}

// PutJobSpec stores a job's spec (validated) in the Jobs bucket.
func (r *Resources) PutJobSpec(ctx context.Context, spec protocol.JobSpec) error {
	data, err := protocol.Marshal(spec)
	if err != nil {
		return err
	}
	_, err = r.Jobs.Put(ctx, protocol.JobSpecKey(spec.Job), data)
	return err
}

// StartLoading records that a coordinator starts loading job (its model,
// before its windows) and returns how many earlier starts never finished
// loading: a coordinator killed while loading a job (out of memory) leaves its
// count behind, so that its successors can fail the job instead of loading it
// again in a crash loop. Loaded ends the count.
func (r *Resources) StartLoading(ctx context.Context, job string) (int, error) {
	key := protocol.JobLoadsKey(job)
	for {
		n, rev := 0, uint64(0)
		e, err := r.Jobs.Get(ctx, key)
		switch {
		case err == nil:
			if n, err = strconv.Atoi(string(e.Value())); err != nil || n < 0 {
				n = 0 // unreadable: counted afresh
			}
			rev = e.Revision()
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return 0, err
		}
		next := []byte(strconv.Itoa(n + 1))
		if rev == 0 {
			_, err = r.Jobs.Create(ctx, key, next)
		} else {
			_, err = r.Jobs.Update(ctx, key, next, rev)
		}
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSequence(err) {
			return 0, err
		}
		// Another coordinator counted at the same time: count again.
	}
}

// isWrongSequence says whether err is a key-value update's lost race.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// Loaded records that job's load finished (StartLoading).
func (r *Resources) Loaded(ctx context.Context, job string) error {
	err := r.Jobs.Delete(ctx, protocol.JobLoadsKey(job))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// TransferTimeout bounds an object transfer (a model of gigabytes takes
// minutes): without a deadline of its own the JetStream client allows a whole
// object 5 s.
const TransferTimeout = 6 * time.Hour

// TransferContext is ctx with TransferTimeout unless it has a deadline; use it
// for every object store call.
func TransferContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, TransferTimeout)
}

// GetBytes reads an object of size bytes (see transfer). The size is the one
// its reference declares: an object of another size is refused before it is
// read, and at most size bytes are ever held, so that whoever can write to the
// object store cannot make the reader allocate more than the reference allows.
func (r *Resources) GetBytes(ctx context.Context, name string, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("object %s: no declared size", name)
	}
	var data []byte
	err := transfer(ctx, size, func(ctx context.Context) error {
		info, err := r.Objects.GetInfo(ctx, name)
		if err != nil {
			return err
		}
		if info.Size != uint64(size) {
			return fmt.Errorf("object %s holds %d bytes, its reference says %d", name, info.Size, size)
		}
		obj, err := r.Objects.Get(ctx, name)
		if err != nil {
			return err
		}
		defer obj.Close()
		if data, err = io.ReadAll(io.LimitReader(obj, size+1)); err == nil && int64(len(data)) != size {
			err = fmt.Errorf("object %s: read %d bytes, its reference says %d", name, len(data), size)
		}
		return err
	})
	return data, err
}

// GetFile writes an object of size bytes (−1: unknown) to path (see transfer).
func (r *Resources) GetFile(ctx context.Context, name, path string, size int64) error {
	return transfer(ctx, size, func(ctx context.Context) error { return r.Objects.GetFile(ctx, name, path) })
}

// transfer runs an object read with a deadline fit for size bytes (at least
// 2 minutes, plus a second per 2 MiB; TransferTimeout when the size is
// unknown), and returns as soon as ctx ends. The JetStream client's object
// reader waits for its next chunk until the deadline, whatever the
// cancellation; such a read is left to end by its deadline in the background.
func transfer(ctx context.Context, size int64, read func(context.Context) error) error {
	d := TransferTimeout
	if size >= 0 {
		d = 2*time.Minute + time.Duration(size>>21)*time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- read(rctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Put stores an object read from r. Its chunks stay within the server's
// message limit (the object store's default 128 KiB chunks fail on a server
// whose max_payload is smaller).
func (r *Resources) Put(ctx context.Context, name string, rd io.Reader) error {
	chunk := uint32(min(128<<10, max(r.Conn.MaxPayload()-1024, 256)))
	meta := jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunk}}
	ctx, cancel := TransferContext(ctx)
	defer cancel()
	if _, err := r.Objects.Put(ctx, meta, rd); err != nil {
		return fmt.Errorf("storing object %s: %w", name, err)
	}
	return nil
}

// PutBytes stores data as an object (see Put).
func (r *Resources) PutBytes(ctx context.Context, name string, data []byte) error {
	return r.Put(ctx, name, bytes.NewReader(data))
}

// PurgeJob removes what job left in JetStream: its queued tasks, stored
// results and errors, its coordinator's consumer, and its objects (JOB/…)
// but those keep says to keep (nil: none). Each removal is tried; the first
// error is returned.
func (r *Resources) PurgeJob(ctx context.Context, job string, keep func(object string) bool) error {
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	note(r.Tasks.Purge(ctx, jetstream.WithPurgeSubject(r.Names.TaskSubject(job))))
	note(r.Results.Purge(ctx, jetstream.WithPurgeSubject(r.Names.ResultFilter(job))))
	note(r.Results.Purge(ctx, jetstream.WithPurgeSubject(r.Names.ErrorSubject(job))))
	if err := r.Results.DeleteConsumer(ctx, r.Names.CoordinatorConsumer(job)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		note(err)
	}
	infos, err := r.Objects.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return first
	}
	note(err)
	var names []string
	for _, o := range infos {
		if strings.HasPrefix(o.Name, job+"/") && (keep == nil || !keep(o.Name)) {
			names = append(names, o.Name)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := r.Objects.Delete(ctx, n); !errors.Is(err, jetstream.ErrObjectNotFound) {
			note(err)
		}
	}
	return first
}
