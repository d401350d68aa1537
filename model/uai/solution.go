package uai

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ReadSolutionFile reads a labeling (see ReadSolution).
func ReadSolutionFile(path string, n int) ([]int, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadSolution(r, path, n)
}

// ReadSolution reads a labeling of n variables in any of the forms in use: the
// competition format ("MPE" or "MAP", then "n x₀ … xₙ₋₁", possibly preceded by a
// solution count of 1), or the plain labeling "x₀ … xₙ₋₁" of toulbar2 and of
// ../shared/models/oracle. Pass n < 0 when the variable count is unknown.
func ReadSolution(r io.Reader, name string, n int) ([]int, error) {
	s := newScanner(r, name, 1<<12)
	var nums []int
	header := false
	for i := 0; ; i++ {
		tok, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if i == 0 {
			if w := strings.ToUpper(string(tok)); w == "MPE" || w == "MAP" {
				header = true
				continue
			}
		}
		v, ok := parseInt(tok)
		if !ok {
			return nil, s.errorf("expected a label (a non-negative integer), found %q", clip(tok))
		}
		nums = append(nums, v)
	}
	switch {
	case n < 0 && header && len(nums) > 0 && len(nums) == nums[0]+1:
		return nums[1:], nil
	case n < 0 && !header:
		return nums, nil
	case n >= 0 && len(nums) == n && !(header && n > 0):
		return nums, nil
	case n >= 0 && len(nums) == n+1 && nums[0] == n:
		return nums[1:], nil
	case n >= 0 && len(nums) == n+2 && nums[0] == 1 && nums[1] == n:
		return nums[2:], nil
	}
	return nil, fmt.Errorf("%s: %d numbers do not form a labeling of %d variables", name, len(nums), n)
}

// WriteSolution writes x in the competition format: "MPE", then "n x₀ … xₙ₋₁".
func WriteSolution(w io.Writer, x []int) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("MPE\n")
	bw.WriteString(strconv.Itoa(len(x)))
	for _, l := range x {
		bw.WriteByte(' ')
		bw.WriteString(strconv.Itoa(l))
	}
	bw.WriteByte('\n')
	return bw.Flush()
}
