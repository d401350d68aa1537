// Package modelfile reads a model from a file of any format partopt knows, choosing
// by the file name, so that every command and the workers accept the same files:
//
//	m, err := modelfile.Read("stereo.h5")
//
// .grid is the tiled grid format (model/grid), .h5 and .hdf5 OpenGM's HDF5 layout
// (model/opengm), .uai, .LG and .wcsp (optionally .gz or .xz) the UAI family
// (model/uai).
package modelfile

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/opengm"
	"github.com/partopt/partopt/model/uai"
)

// Formats names the formats Read accepts, for messages.
const Formats = ".uai, .LG or .wcsp (optionally .gz or .xz), .h5 (OpenGM) or .grid"

// IsGrid says whether path names a tiled grid model.
func IsGrid(path string) bool { return strings.EqualFold(filepath.Ext(path), ".grid") }

// Read reads the model in path, in the format its name says.
func Read(path string) (*model.Model, error) {
	switch {
	case IsGrid(path):
		return grid.ReadFile(path)
	case opengm.IsFile(path):
		return opengm.ReadFile(path)
	}
	if f, _ := uai.FormatOf(path); f == uai.Unknown {
		return nil, fmt.Errorf("%s: unknown model format (want %s)", path, Formats)
	}
	return uai.ReadFile(path)
}
