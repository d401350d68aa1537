// Package expansion is the one decompression budget of partopt's readers: a
// file of n bytes may decode to at most MaxRatio·n + Slack bytes. model/uai
// holds .gz and .xz model files to it, internal/hdf5 the deflated datasets of
// OpenGM files; what declares or inflates to more is refused, before it fills
// memory, with an error wrapping ErrBomb:
//
//	if declared > expansion.Budget(size) {
//		return fmt.Errorf("%s declares %d bytes, more than …: %w", name, declared, expansion.ErrBomb)
//	}
package expansion

import "errors"

// MaxRatio bounds what a compressed file may decode to per byte of it. Real
// models stay below: xz -9 packs a uniform 256×256 Potts model 69×, gzip 32×;
// the datasets of a 1000×1000 binary OpenGM grid with integer unaries,
// shuffled and deflated at level 4 (h5py's default), pack 68×. Deflate
// reaches 1032× on zeros.
const MaxRatio = 128

// Slack is what any file may decode to, however small.
const Slack = 16 << 20

// Budget is how many bytes a file of size bytes may decode to.
func Budget(size int64) int64 { return MaxRatio*max(size, 0) + Slack }

// ErrBomb marks input refused for decoding to more than its Budget.
var ErrBomb = errors.New("refused as a decompression bomb")
