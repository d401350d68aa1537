package opengm

import (
	"fmt"
	"io"
	"strings"

	"github.com/partopt/partopt/internal/hdf5"
	"github.com/partopt/partopt/model"
)

// IsFile says whether path names an OpenGM HDF5 model (.h5 or .hdf5).
func IsFile(path string) bool {
	p := strings.ToLower(path)
	return strings.HasSuffix(p, ".h5") || strings.HasSuffix(p, ".hdf5")
}

// DefaultGroup is the group OpenGM's tools and the benchmark files keep the model in.
const DefaultGroup = "gm"

// ReadFile reads the OpenGM model in an HDF5 file: from the group "gm", or from the
// root's only group when there is no "gm". Datasets larger than the model needs,
// or whose values need more memory than the file's size allows (hdf5.MaxExpansion:
// deflate packs zeros a thousandfold), are refused before their data is read.
func ReadFile(path string) (*model.Model, error) {
	f, err := hdf5.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeFile(f, path)
}

// Read reads the OpenGM model in the HDF5 file r of size bytes, as ReadFile; name is
// used in error messages.
func Read(r io.ReaderAt, size int64, name string) (*model.Model, error) {
	f, err := hdf5.Open(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return decodeFile(f, name)
}

func decodeFile(f *hdf5.File, name string) (*model.Model, error) {
	group, err := modelGroup(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m, err := Decode(fileSource{f, group})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// modelGroup finds the group holding the model.
func modelGroup(f *hdf5.File) (string, error) {
	names, err := f.List("/")
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if n == DefaultGroup {
			return n, nil
		}
	}
	var groups []string
	for _, n := range names {
		if ok, err := f.IsGroup(n); err == nil && ok {
			groups = append(groups, n)
		}
	}
	if len(groups) != 1 {
		return "", fmt.Errorf("%w: no group %q, and the root holds %d groups (%v), not one", ErrFormat, DefaultGroup, len(groups), groups)
	}
	return groups[0], nil
}

// fileSource reads the datasets of one group of an HDF5 file.
type fileSource struct {
	f     *hdf5.File
	group string
}

func (s fileSource) Uint64s(name string, limit int) ([]uint64, error) {
	d, err := s.f.Dataset(s.group + "/" + name)
	if err != nil {
		return nil, err
	}
	return d.Uint64s(limit)
}

func (s fileSource) Float64s(name string, limit int) ([]float64, error) {
	d, err := s.f.Dataset(s.group + "/" + name)
	if err != nil {
		return nil, err
	}
	return d.Float64s(limit)
}
