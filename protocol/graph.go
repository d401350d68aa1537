package protocol

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Values are Count non-negative values of Width bytes each (the Data of a Labels)
// carried inline or as an object (Payload): a graph window's node list, or its
// fixed labels, either of which may outgrow a message.
type Values struct {
	Width uint8   `msgpack:"w"`
	Count int     `msgpack:"n"`
	Data  Payload `msgpack:"d"`
}

// NewValues returns labels as Values, inline when they fit limit (see
// NewPayloadWithin) and otherwise as object, which the caller must put in
// ObjectBucket.
func NewValues(labels Labels, object string, limit int) Values {
	return Values{Width: labels.Width, Count: labels.Count, Data: NewPayloadWithin(labels.Data, object, limit)}
}

// Validate checks the count against MaxSide, the width, the payload and that
// its size is Count·Width.
func (v Values) Validate() error {
	if v.Count < 1 || v.Count > MaxSide {
		return fmt.Errorf("%d values: want 1 to %d", v.Count, MaxSide)
	}
	if v.Width != 1 && v.Width != 2 && v.Width != 4 {
		return fmt.Errorf("width %d, want 1, 2 or 4 bytes per value", v.Width)
	}
	if err := v.Data.Validate(); err != nil {
		return err
	}
	size, have := int64(v.Count)*int64(v.Width), int64(len(v.Data.Inline))
	if v.Data.Object != "" {
		have = v.Data.Size
	}
	if have != size {
		return fmt.Errorf("%d values of %d bytes need %d bytes, have %d", v.Count, v.Width, size, have)
	}
	return nil
}

// Decode returns the values given the content of an object (ignored for inline
// data), checked against the payload's size and CRC32C, each at most maxValue.
func (v Values) Decode(content []byte, maxValue int) ([]int32, error) {
	if v.Data.Object == "" {
		content = v.Data.Inline
	}
	if err := v.Data.Verify(content); err != nil {
		return nil, err
	}
	return Labels{Width: v.Width, Count: v.Count, Data: content}.DecodeMax(maxValue)
}

// GraphWindow is the window of a graph job's task. Nodes lists the window's
// variables (core and halo, strictly ascending, of the model the job's windows
// are planned on); Fixed, when set, holds the labels fixed before the round over
// the window's extent (partition.WindowExtent of the nodes: the nodes, their
// neighbours and theirs, ascending), label+1 or 0 for free, in the extent's
// order; nil when no label is fixed there. The worker computes the extent from
// the model and checks Fixed's count against it.
type GraphWindow struct {
	Nodes Values  `msgpack:"n"`
	Fixed *Values `msgpack:"f,omitempty"`
}

// Validate checks the shapes of both lists (their contents are checked by
// CheckNodes and the worker, which knows the model).
func (g GraphWindow) Validate() error {
	if err := g.Nodes.Validate(); err != nil {
		return fmt.Errorf("graph window nodes: %w", err)
	}
	if g.Fixed != nil {
		if err := g.Fixed.Validate(); err != nil {
			return fmt.Errorf("graph window fixed labels: %w", err)
		}
		if g.Fixed.Count < g.Nodes.Count {
			return fmt.Errorf("graph window: %d fixed labels cannot cover %d nodes", g.Fixed.Count, g.Nodes.Count)
		}
	}
	return nil
}

// DecodeNodes returns the node list of a graph window of spec, given the content
// of its object (ignored when inline): its count is checked against the model's
// variables before anything is read, then every node is checked (CheckNodes).
func DecodeNodes(spec JobSpec, g GraphWindow, content []byte) ([]int, error) {
	if g.Nodes.Count > spec.Width {
		return nil, fmt.Errorf("graph window of %d nodes in a model of %d variables", g.Nodes.Count, spec.Width)
	}
	vals, err := g.Nodes.Decode(content, math.MaxInt32) // CheckNodes names a node out of range
	if err != nil {
		return nil, fmt.Errorf("graph window nodes: %w", err)
	}
	nodes := make([]int, len(vals))
	for i, v := range vals {
		nodes[i] = int(v)
	}
	return nodes, CheckNodes(nodes, spec.Width)
}

// CheckNodes checks that nodes is a non-empty, strictly ascending list of
// variables in [0, n).
func CheckNodes(nodes []int, n int) error {
	if len(nodes) == 0 {
		return errors.New("graph window without nodes")
	}
	for i, v := range nodes {
		switch {
		case v < 0 || v >= n:
			return fmt.Errorf("graph window node %d (at %d) outside the model's %d variables", v, i, n)
		case i > 0 && v <= nodes[i-1]:
			return fmt.Errorf("graph window nodes not strictly ascending: %d after %d (at %d)", v, nodes[i-1], i)
		}
	}
	return nil
}

// NodesObject is the ObjectBucket name of a graph window's node list, when it is
// too large to travel in its task.
func NodesObject(job string, round, window int) string {
	return job + "/nodes/" + strconv.Itoa(round) + "/" + strconv.Itoa(window)
}
