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
//
// An iri task (JobSpec.Method MethodIRI) has no Fixed: its Nodes are the
// window's undecided nodes (the variables whose labels it may eliminate), and
// Domains holds the labels alive before the round over their extent
// (partition.EliminationExtent: the nodes and their neighbours, ascending) as
// EncodeDomains packs them.
type GraphWindow struct {
	Nodes   Values   `msgpack:"n"`
	Fixed   *Values  `msgpack:"f,omitempty"`
	Domains *Payload `msgpack:"a,omitempty"`
}

// Validate checks the shapes of both lists (their contents are checked by
// CheckNodes and the worker, which knows the model).
func (g GraphWindow) Validate() error {
	if err := g.Nodes.Validate(); err != nil {
		return fmt.Errorf("graph window nodes: %w", err)
	}
	if g.Domains != nil {
		if g.Fixed != nil {
			return errors.New("graph window with both fixed labels and domains")
		}
		if err := g.Domains.Validate(); err != nil {
			return fmt.Errorf("graph window domains: %w", err)
		}
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

// DomainsObject is the ObjectBucket name of an iri window's domains, when they
// are too large to travel in its task.
func DomainsObject(job string, round, window int) string {
	return job + "/domains/" + strconv.Itoa(round) + "/" + strconv.Itoa(window)
}

// DomainsSize is the size in bytes of the packed domains of variables with
// these label counts: one bit per label.
func DomainsSize(counts []int) int64 {
	bits := int64(0)
	for _, k := range counts {
		bits += int64(k)
	}
	return (bits + 7) / 8
}

// EncodeDomains packs domains (ascending labels per variable, each below the
// variable's count in counts) as bits: variable after variable, counts[i] bits
// each, bit l set when label l is alive, least significant bit first.
func EncodeDomains(domains [][]int, counts []int) []byte {
	out := make([]byte, DomainsSize(counts))
	bit := 0
	for i, ls := range domains {
		for _, l := range ls {
			out[(bit+l)/8] |= 1 << ((bit + l) % 8)
		}
		bit += counts[i]
	}
	return out
}

// DecodeDomains unpacks EncodeDomains's data for variables with these label
// counts: data must have exactly DomainsSize(counts) bytes, every variable an
// alive label, and the padding bits must be clear.
func DecodeDomains(data []byte, counts []int) ([][]int, error) {
	if int64(len(data)) != DomainsSize(counts) {
		return nil, fmt.Errorf("domains of %d bytes for %d variables, want %d", len(data), len(counts), DomainsSize(counts))
	}
	out := make([][]int, len(counts))
	bit := 0
	for i, k := range counts {
		for l := range k {
			if data[(bit+l)/8]&(1<<((bit+l)%8)) != 0 {
				out[i] = append(out[i], l)
			}
		}
		if len(out[i]) == 0 {
			return nil, fmt.Errorf("domains: variable %d of the extent has no alive label", i)
		}
		bit += k
	}
	if bit%8 != 0 && data[len(data)-1]>>(bit%8) != 0 {
		return nil, errors.New("domains: padding bits set")
	}
	return out, nil
}
