package job

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"slices"

	"github.com/partopt/partopt/internal/version"
)

// Provenance says what produced a report: which partopt, where the windows
// were solved, by which workers, and the exact model file (its size and
// SHA-256), so that a report found later names what it is about even when the
// model's path was a cluster's internal copy.
type Provenance struct {
	Version string `json:"partopt_version"`
	// Runtime is where the windows were solved: "process" (solve), "nats-embedded"
	// (run), "cluster" (a coordinator's job).
	Runtime string `json:"runtime"`
	// WorkersSeen are the workers whose results were merged (nats runtimes).
	WorkersSeen []string `json:"workers_seen,omitempty"`
	ModelBytes  int64    `json:"model_bytes"`
	ModelSHA256 string   `json:"model_sha256"`
}

// Runtimes of Provenance.Runtime.
const (
	RuntimeProcess  = "process"
	RuntimeEmbedded = "nats-embedded"
	RuntimeCluster  = "cluster"
)

// fileDigest is the size and SHA-256 of a file, read once in the background.
type fileDigest struct {
	done  chan struct{}
	bytes int64
	sum   string
}

// digestFile starts reading path for its digest ("" sum when it cannot be read).
func digestFile(path string) *fileDigest {
	d := &fileDigest{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return
		}
		d.bytes, d.sum = n, hex.EncodeToString(h.Sum(nil))
	}()
	return d
}

// provenance is the Provenance of the run's report; out is the windows'
// outcome (nil: none, or solved in this process).
func (r *runner) provenance(out *Outcome) Provenance {
	p := Provenance{Version: version.Get().String(), Runtime: RuntimeProcess}
	if out != nil && out.Runtime != "" {
		p.Runtime = out.Runtime
		p.WorkersSeen = workersSeen(out)
	}
	if r.digest != nil {
		<-r.digest.done
		p.ModelBytes, p.ModelSHA256 = r.digest.bytes, r.digest.sum
	}
	return p
}

// modelName is the model as the report names it: as submitted (Spec.ModelName),
// else its path.
func (r *runner) modelName() string {
	if r.spec.ModelName != "" {
		return r.spec.ModelName
	}
	return r.spec.Model
}

// workers is the report's "workers": the windows solved at once in this
// process, or the workers seen where they were solved elsewhere.
func (r *runner) workers(out *Outcome) int {
	if out != nil && out.Runtime != "" {
		return len(workersSeen(out))
	}
	return r.spec.Workers
}

// workersSeen are the distinct workers of out, sorted (pbp+iri's stages list
// theirs each).
func workersSeen(out *Outcome) []string {
	return slices.Compact(slices.Sorted(slices.Values(out.Workers)))
}
