package job

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/partopt/partopt/model/labelfile"
)

// Export writes a result's label raster to out as an image or array a vision
// user opens directly (labelfile.Export: PNG or TIFF of 8 or 16 bits, NumPy
// .npy), at full resolution, streamed: src is a job's output directory (its
// labels.plf, or persistent.plf with persistent: label+1 where proven, 0
// elsewhere) or a .plf file. src and out's directory are checked before
// anything is written; out is written whole or not at all: a temporary
// file beside it is renamed onto it once complete.
func Export(src, out string, persistent bool) error {
	format, err := labelfile.FormatOf(out)
	if err != nil {
		return err
	}
	name := LabelTilesFile
	if persistent {
		name = PersistentTilesFile
	}
	if info, err := os.Stat(src); err == nil && !info.IsDir() && persistent {
		return fmt.Errorf("--persistent: give the result directory, not the file %s", src)
	}
	path, err := checkExportSource(src, name)
	if err != nil {
		return err
	}
	if err := checkOutputDir(out); err != nil {
		return err
	}
	f, err := labelfile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".partopt-*")
	if err != nil {
		return Internal(err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename
	if err := labelfile.Export(tmp, f, format); err != nil {
		tmp.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) || errors.Is(err, os.ErrClosed) {
			return Internal(err)
		}
		return err
	}
	if err := tmp.Close(); err != nil {
		return Internal(err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return Internal(err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return Internal(err)
	}
	return nil
}
