package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/partopt/partopt/cluster"
	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/modelfile"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// ModelOpener opens a job's model as a raster; the closer releases it.
type ModelOpener func(ctx context.Context, spec protocol.JobSpec) (partition.Raster, io.Closer, error)

// ObjectModels opens models from a shared filesystem path below one of roots
// (SharedPath) or, for an uploaded model, from the object store, downloading it
// into dir first. A .grid file is read by windows (out of core); a UAI raster is
// read into memory.
func ObjectModels(res *cluster.Resources, dir string, roots []string) ModelOpener {
	return func(ctx context.Context, spec protocol.JobSpec) (partition.Raster, io.Closer, error) {
		ref := spec.Model
		path, temp := ref.Path, false
		if ref.Path != "" {
			var err error
			if path, err = SharedPath(roots, ref.Path); err != nil {
				return partition.Raster{}, nil, err
			}
		}
		if ref.Object != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return partition.Raster{}, nil, err
			}
			path, temp = filepath.Join(dir, spec.Job+"-"+ref.FileName()), true
			if err := Download(ctx, res, ref.Object, ref.Size, ref.CRC32C, path); err != nil {
				return partition.Raster{}, nil, err
			}
		}
		r, c, err := openRaster(path, spec)
		if temp && (err != nil || c == nil) {
			os.Remove(path) // read into memory, or failed: the file is not needed
		}
		if err != nil {
			return r, nil, err
		}
		if temp && c != nil {
			c = removeOnClose{c, path}
		}
		return r, c, nil
	}
}

// Download fetches an object to path and checks its size and CRC32C; on any
// failure path is removed, so that no partial or damaged copy stays behind for a
// later job to read.
func Download(ctx context.Context, res *cluster.Resources, name string, size int64, crc32c uint32, path string) error {
	err := download(ctx, res, name, size, crc32c, path)
	if err != nil {
		os.Remove(path)
	}
	return err
}

func download(ctx context.Context, res *cluster.Resources, name string, size int64, crc32c uint32, path string) error {
	if err := res.GetFile(ctx, name, path, size); err != nil {
		return fmt.Errorf("object %s: %w", name, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	crc := protocol.NewCRC32C()
	n, err := io.Copy(crc, f)
	if err != nil {
		return err
	}
	if n != size || crc.Sum32() != crc32c {
		return fmt.Errorf("object %s: %d bytes with CRC32C %08x, want %d bytes with %08x", name, n, crc.Sum32(), size, crc32c)
	}
	return nil
}

// openRaster opens the model file at path as the job's raster; the closer is nil
// when the model was read into memory.
func openRaster(path string, spec protocol.JobSpec) (partition.Raster, io.Closer, error) {
	if strings.EqualFold(filepath.Ext(path), ".grid") {
		r, err := grid.Open(path)
		if err != nil {
			return partition.Raster{}, nil, err
		}
		h := r.Header()
		if h.Width != spec.Width || h.Height != spec.Height || h.Labels > spec.Labels {
			r.Close()
			return partition.Raster{}, nil, fmt.Errorf("model %s is %d×%d with %d labels, the job says %d×%d with %d", path, h.Width, h.Height, h.Labels, spec.Width, spec.Height, spec.Labels)
		}
		return partition.Raster{Width: h.Width, Height: h.Height, Window: r.Window}, r, nil
	}
	m, err := modelfile.Read(path)
	if err != nil {
		return partition.Raster{}, nil, err
	}
	w, h, ok := grid.Dims(m)
	if !ok || w != spec.Width || h != spec.Height {
		return partition.Raster{}, nil, fmt.Errorf("model %s is not the job's %d×%d raster", path, spec.Width, spec.Height)
	}
	r, err := partition.RasterOf(m, w, h)
	return r, nil, err
}

type removeOnClose struct {
	io.Closer
	path string
}

func (r removeOnClose) Close() error {
	err := r.Closer.Close()
	return errors.Join(err, os.Remove(r.path))
}

// jobModel is a job's model as the worker solves its windows: a raster read by
// rectangles, or a graph model in memory.
type jobModel struct {
	raster partition.Raster
	graph  *model.Model
}

// openJobModel opens spec's model with the opener of its layout.
func openJobModel(rasters ModelOpener, graphs GraphOpener) func(context.Context, protocol.JobSpec) (jobModel, io.Closer, error) {
	return func(ctx context.Context, spec protocol.JobSpec) (jobModel, io.Closer, error) {
		if spec.Layout == protocol.LayoutGraph {
			m, err := graphs(ctx, spec)
			return jobModel{graph: m}, nil, err
		}
		r, c, err := rasters(ctx, spec)
		return jobModel{raster: r}, c, err
	}
}

// modelCache keeps the models of the most recent jobs open: a worker serves
// windows of the same job over and over.
type modelCache struct {
	open func(context.Context, protocol.JobSpec) (jobModel, io.Closer, error)
	keep int

	mu      sync.Mutex
	entries map[string]*cachedModel
	clock   int
}

type cachedModel struct {
	ready  chan struct{}
	model  jobModel
	closer io.Closer
	err    error
	refs   int
	used   int
}

func newModelCache(open func(context.Context, protocol.JobSpec) (jobModel, io.Closer, error), keep int) *modelCache {
	return &modelCache{open: open, keep: max(keep, 1), entries: map[string]*cachedModel{}}
}

// modelKey names the model a job's windows are solved on: the job (the
// stages of a pbp+iri job, JOB and JOB--iri, are one: protocol.StageOf), its
// model file (shared path or object, with its size and checksum), the
// evidence it is conditioned on (a graph), and the shape the opener checks.
// So a worker opens (or downloads) a pbp+iri job's model once for both
// stages, and a later job on a shared path that changed meanwhile opens it
// anew.
func modelKey(spec protocol.JobSpec) string {
	m, ev := spec.Model, ""
	if e := spec.Evidence; e != nil {
		ev = fmt.Sprintf("%s/%d/%08x/%08x", e.Object, e.Size, e.CRC32C, protocol.CRC32C(e.Inline))
	}
	return fmt.Sprintf("%s %q %q %d %08x %q %q %d×%d×%d %s", protocol.StageOf(spec.Job), m.Path, m.Object, m.Size, m.CRC32C, m.Name,
		spec.Layout, spec.Width, spec.Height, spec.Labels, ev)
}

// get returns the job's model; release it with put(modelKey(spec)).
// Concurrent callers for one model share a single open.
func (c *modelCache) get(ctx context.Context, spec protocol.JobSpec) (jobModel, error) {
	key := modelKey(spec)
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		e = &cachedModel{ready: make(chan struct{})}
		c.entries[key] = e
		go func() {
			e.model, e.closer, e.err = c.open(context.WithoutCancel(ctx), spec)
			close(e.ready)
		}()
	}
	e.refs++
	c.clock++
	e.used = c.clock
	c.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		c.put(key)
		return jobModel{}, ctx.Err()
	}
	if e.err != nil {
		c.mu.Lock()
		if c.entries[key] == e {
			delete(c.entries, key) // try again on the next task
		}
		e.refs--
		c.mu.Unlock()
		return jobModel{}, e.err
	}
	return e.model, nil
}

// put releases a get and closes the least recently used models beyond keep that
// no task uses.
func (c *modelCache) put(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		e.refs--
	}
	for len(c.entries) > c.keep {
		victim, oldest := "", 0
		for j, e := range c.entries {
			if e.refs == 0 && (victim == "" || e.used < oldest) {
				victim, oldest = j, e.used
			}
		}
		if victim == "" {
			return
		}
		e := c.entries[victim]
		delete(c.entries, victim)
		go func() { <-e.ready; closeModel(e) }()
	}
}

func closeModel(e *cachedModel) {
	if e.closer != nil {
		e.closer.Close()
	}
}

// close closes every model.
func (c *modelCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, e := range c.entries {
		<-e.ready
		closeModel(e)
		delete(c.entries, j)
	}
}
