package uai

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Evidence is a list of observed variables and their labels.
type Evidence struct {
	Vars, Labels []int
}

// Len is the number of observations.
func (e Evidence) Len() int { return len(e.Vars) }

// Fixed returns the argument of model.Condition for a model with the given label
// counts: the observed label of each observed variable, −1 elsewhere. It fails on
// variables or labels out of range and on contradicting observations.
func (e Evidence) Fixed(labels []int32) ([]int, error) {
	fixed := make([]int, len(labels))
	for i := range fixed {
		fixed[i] = -1
	}
	for i, v := range e.Vars {
		l := e.Labels[i]
		if v < 0 || v >= len(labels) {
			return nil, fmt.Errorf("evidence: variable %d out of range [0,%d)", v, len(labels))
		}
		if l < 0 || l >= int(labels[v]) {
			return nil, fmt.Errorf("evidence: variable %d: label %d out of range [0,%d)", v, l, labels[v])
		}
		if fixed[v] >= 0 && fixed[v] != l {
			return nil, fmt.Errorf("evidence: variable %d observed as %d and as %d", v, fixed[v], l)
		}
		fixed[v] = l
	}
	return fixed, nil
}

// ReadEvidenceFile reads an evidence file (see ReadEvidence).
func ReadEvidenceFile(path string) (Evidence, error) {
	r, err := Open(path)
	if err != nil {
		return Evidence{}, err
	}
	defer r.Close()
	return ReadEvidence(r, path)
}

// ReadEvidence reads "n v₁ l₁ … vₙ lₙ" (UAI 2014), or the UAI 2010 form with a leading
// sample count, which must be 0 or 1. The two are told apart by the number of tokens.
func ReadEvidence(r io.Reader, name string) (Evidence, error) {
	s := newScanner(r, name, 1<<12)
	var nums []int
	for {
		v, ok := s.readInt(maxCount)
		if !ok {
			if s.prob == atEOF {
				break
			}
			return Evidence{}, s.fail("an integer")
		}
		nums = append(nums, v)
	}
	switch {
	case len(nums) == 0:
		return Evidence{}, fmt.Errorf("%s: empty evidence file", name)
	case len(nums) == 1+2*nums[0]:
		nums = nums[1:]
	case nums[0] == 1 && len(nums) >= 2 && len(nums) == 2+2*nums[1]:
		nums = nums[2:]
	case nums[0] == 0 && len(nums) == 1:
		nums = nums[1:]
	default:
		return Evidence{}, fmt.Errorf("%s: %d numbers do not form \"n v₁ l₁ … vₙ lₙ\" (n = %d) nor one sample of the UAI 2010 form", name, len(nums), nums[0])
	}
	var e Evidence
	for i := 0; i < len(nums); i += 2 {
		e.Vars = append(e.Vars, nums[i])
		e.Labels = append(e.Labels, nums[i+1])
	}
	return e, nil
}

// WriteEvidence writes e in the UAI 2014 form "n v₁ l₁ … vₙ lₙ".
func WriteEvidence(w io.Writer, e Evidence) error {
	var sb strings.Builder
	sb.WriteString(strconv.Itoa(len(e.Vars)))
	for i, v := range e.Vars {
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(v))
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(e.Labels[i]))
	}
	sb.WriteByte('\n')
	_, err := io.WriteString(w, sb.String())
	return err
}

// EvidencePathFor returns the evidence file that toulbar2 and the UAI tools pair with
// a model file (MODEL.evid), and whether it exists.
func EvidencePathFor(modelPath string) (string, bool) {
	p := modelPath + ".evid"
	_, err := os.Stat(p)
	return p, err == nil
}
