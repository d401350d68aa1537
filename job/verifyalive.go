package job

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/partopt/partopt/model/grid"
	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/partition"
)

// tempAlive creates alive planes for the raster of h in the directory dir
// (made if missing): a replay's.
func tempAlive(dir string, h grid.Header) (*partition.AliveLabels, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	a := &partition.AliveLabels{Labels: h.Labels}
	for p := range labelfile.AlivePlanes(h.Labels) {
		f, err := labelfile.Create(filepath.Join(dir, AlivePlaneFile(p)), labelfile.Header{Width: h.Width, Height: h.Height, Labels: h.Labels, Kind: labelfile.Alive, Plane: p})
		if err != nil {
			closeAlive(*a)
			return nil, err
		}
		a.Planes = append(a.Planes, f)
	}
	return a, nil
}

// closeAlive closes the planes of tempAlive.
func closeAlive(a partition.AliveLabels) {
	for _, s := range a.Planes {
		s.(*labelfile.File).Close()
	}
}

// checkAliveFiles checks the alive planes in dir (AlivePlaneFile; planes
// beyond the model's labels must be all 0) and, when present, domains.txt
// against alive, what the proofs leave, band by band: NOT verified where they
// differ.
func checkAliveFiles(dir string, alive partition.AliveLabels, w, h int) error {
	const block = 1024
	want, got := make([]int32, block*block), make([]int32, block*block)
	for p := 0; ; p++ {
		f, err := openLabelFile(filepath.Join(dir, AlivePlaneFile(p)), w, h)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		err = func() error {
			defer f.Close()
			for y := 0; y < h; y += block {
				for x := 0; x < w; x += block {
					bw, bh := min(block, w-x), min(block, h-y)
					want, got := want[:bw*bh], got[:bw*bh]
					clear(want)
					if p < len(alive.Planes) {
						if err := alive.Planes[p].ReadRect(x, y, bw, bh, want); err != nil {
							return Internal(err)
						}
					}
					if err := f.ReadRect(x, y, bw, bh, got); err != nil {
						return err
					}
					for i := range want {
						if got[i] != want[i] {
							return notVerified("%s gives pixel (%d, %d) the labels mask %#x, the proofs %#x", f.Name(), x+i%bw, y+i/bw, uint32(got[i]), uint32(want[i]))
						}
					}
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	path := filepath.Join(dir, DomainsFile)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return checkDomainsFile(path, alive, w, h)
}

// checkDomainsFile checks domains.txt at path against alive, line by line: a
// malformed file is bad input, one that lists other labels NOT verified.
func checkDomainsFile(path string, alive partition.AliveLabels, w, h int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	line := 0
	next := func() ([]string, error) {
		for sc.Scan() {
			line++
			if fields := strings.Fields(sc.Text()); len(fields) > 0 {
				return fields, nil
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, io.EOF
	}
	n := int64(w) * int64(h)
	head, err := next()
	if err != nil {
		return fmt.Errorf("%s: no variable count: not a domains file", path)
	}
	if c, err := strconv.ParseInt(head[0], 10, 64); err != nil || len(head) != 1 || c != n {
		return fmt.Errorf("%s: line %d: %q: want the number of variables, %d", path, line, clip(strings.Join(head, " ")), n)
	}
	var listed []int
	err = aliveBands(alive, w, h, func(r partition.Rect, doms [][]int) error {
		for i, ls := range doms {
			v := int64(r.Y0)*int64(w) + int64(i)
			fields, err := next()
			if err == io.EOF {
				return fmt.Errorf("%s: %d variables listed, want %d", path, v, n)
			}
			if err != nil {
				return err
			}
			k, err := strconv.Atoi(fields[0])
			if err != nil || k < 1 || k != len(fields)-1 {
				return fmt.Errorf("%s: line %d: variable %d: %q: want a count k ≥ 1 and k labels", path, line, v, clip(strings.Join(fields, " ")))
			}
			listed = listed[:0]
			for _, s := range fields[1:] {
				l, err := strconv.Atoi(s)
				if err != nil || l < 0 || l >= alive.Labels || (len(listed) > 0 && l <= listed[len(listed)-1]) {
					return fmt.Errorf("%s: line %d: variable %d: label %q: want ascending labels below %d", path, line, v, clip(s), alive.Labels)
				}
				listed = append(listed, l)
			}
			if !slices.Equal(listed, ls) {
				return notVerified("%s gives variable %d the labels %v, the proofs %v", path, v, listed, ls)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := next(); err != io.EOF {
		return fmt.Errorf("%s: line %d: more lines than the %d variables", path, line, n)
	}
	return nil
}
