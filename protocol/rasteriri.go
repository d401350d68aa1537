package protocol

import "fmt"

// A raster iri job (JobSpec.Method MethodIRI, layout raster: a .grid file
// eliminated out of core) sends each window as its rectangles (Core, Nodes)
// with the labels alive before the round over the nodes grown by one pixel
// (RasterExtent, WindowTask.Domains): every label of the job's Labels a bit,
// pixel after pixel. The window's nodes travel implicitly — the pixels of
// Nodes with more than one label alive (RasterWindowNodes), which is how the
// coordinator picks them — so a task holds no list that the domains do not
// already imply. Its result is an elimination over the extent's variables
// within one factor step of the nodes (WindowResult.Elimination), as a graph
// iri window's.

// RasterIRI says whether the job eliminates labels of a raster read by
// rectangles (Method MethodIRI, layout raster).
func (s JobSpec) RasterIRI() bool { return s.IRI() && s.Layout != LayoutGraph }

// RasterExtent is the extent of a raster iri window of nodes n in spec's
// raster: n grown by one pixel, clipped (what its domains cover).
func RasterExtent(spec JobSpec, n Rect) Rect {
	e := Rect{X0: max(n.X0-1, 0), Y0: max(n.Y0-1, 0)}
	e.W, e.H = min(n.X0+n.W+1, spec.Width)-e.X0, min(n.Y0+n.H+1, spec.Height)-e.Y0
	return e
}

// RasterDomainsSize is the size in bytes of the packed domains of a raster
// iri window whose extent is e, in a job of labels labels.
func RasterDomainsSize(e Rect, labels int) int64 {
	return (int64(e.Pixels())*int64(labels) + 7) / 8
}

// EncodeRasterDomains packs a raster iri window's domains (ascending labels
// per pixel of its extent, row-major, each below labels).
func EncodeRasterDomains(domains [][]int, labels int) []byte {
	counts := make([]int, len(domains))
	for i := range counts {
		counts[i] = labels
	}
	return EncodeDomains(domains, counts)
}

// DecodeRasterDomains returns the domains of task, a window of spec's raster
// iri job, given the content of their object (ignored when inline): the
// window must lie in the raster, the content is checked against the
// payload's size and CRC32C and must be exactly the extent's
// RasterDomainsSize before anything is decoded. It returns the extent too.
func DecodeRasterDomains(spec JobSpec, task WindowTask, content []byte) ([][]int, Rect, error) {
	n := task.Nodes
	if task.Domains == nil || !spec.RasterIRI() {
		return nil, Rect{}, fmt.Errorf("task %s/%d/%d is not a window of a raster iri job with its domains", task.Job, task.Round, task.Window)
	}
	if n.X0+n.W > spec.Width || n.Y0+n.H > spec.Height {
		return nil, Rect{}, fmt.Errorf("window %+v outside the %d×%d raster", n, spec.Width, spec.Height)
	}
	e := RasterExtent(spec, n)
	p := task.Domains
	if p.Object == "" {
		content = p.Inline
	}
	if size := RasterDomainsSize(e, spec.Labels); int64(len(content)) != size {
		return nil, e, fmt.Errorf("domains of %d bytes for an extent %+v of %d labels, want %d", len(content), e, spec.Labels, size)
	}
	if err := p.Verify(content); err != nil {
		return nil, e, err
	}
	counts := make([]int, e.Pixels())
	for i := range counts {
		counts[i] = spec.Labels
	}
	doms, err := DecodeDomains(content, counts)
	return doms, e, err
}

// RasterWindowNodes are the nodes of a raster iri window of nodes n over
// extent e with domains (RasterExtent, DecodeRasterDomains): the pixels
// (y·width+x, ascending) of n with more than one label alive.
func RasterWindowNodes(width int, n, e Rect, domains [][]int) []int {
	var out []int
	for y := n.Y0; y < n.Y0+n.H; y++ {
		for x := n.X0; x < n.X0+n.W; x++ {
			if len(domains[(y-e.Y0)*e.W+x-e.X0]) > 1 {
				out = append(out, y*width+x)
			}
		}
	}
	return out
}
