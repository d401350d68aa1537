package worker

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// SharedPath is the file that a job's shared model path (protocol.ModelRef.Path)
// names, when it lies below one of roots, the directories the operator shares
// with the cluster (--shared-root); an error otherwise, before anything opens
// it. A job spec is data from the network: without this check anyone who can
// submit could make a coordinator or worker read any file it can, and see its
// first token quoted back by the parser. Symbolic links are resolved on both
// sides, so a link below a root cannot lead outside it; the returned path is the
// resolved one.
func SharedPath(roots []string, path string) (string, error) {
	if len(roots) == 0 {
		return "", fmt.Errorf("the job refers to its model by a shared path, and this process shares none (start it with --shared-root DIR)")
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return "", errors.New("the job's shared model path is not absolute and clean")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", errors.New("the job's shared model path does not name a readable file below the shared roots")
	}
	for _, root := range roots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(r, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "." {
			return real, nil
		}
	}
	return "", errors.New("the job's shared model path lies outside the shared roots")
}
