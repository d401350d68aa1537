package coordinator_test

import (
	"path/filepath"
	"testing"

	"github.com/partopt/partopt/model/labelfile"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/protocol"
)

// BenchmarkSerialCostPerWindow measures what the coordinator does alone for each
// real-size window (512-pixel core, 32-pixel halo, K=4): decode the result
// message, merge it into label files on disk, and read and encode the next
// round's fixed labels for a task. With the workers' ~13–27 s per window, this
// serial cost bounds how many workers one coordinator keeps busy.
func BenchmarkSerialCostPerWindow(b *testing.B) {
	const side, core, halo, k = 2048, 512, 32, 4
	dir := b.TempDir()
	open := func(name string, kind labelfile.Kind) *labelfile.File {
		f, err := labelfile.Create(filepath.Join(dir, name), labelfile.Header{Width: side, Height: side, Labels: k, Kind: kind})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	pers, lab, scratch := open("p.plf", labelfile.Persistent), open("l.plf", labelfile.Labeling), open("s.plf", labelfile.Persistent)
	wins := partition.RasterWindows(side, side, core, halo, 0)
	spec := protocol.JobSpec{Job: "b", Model: protocol.ModelRef{Path: "/m.grid"}, Width: side, Height: side, Labels: k, Core: core, Halo: halo, MaxRounds: 1, Variant: protocol.VariantInvariant}
	// Results as workers send them: every node proven, label 1.
	msgs := make([][]byte, len(wins))
	for i, w := range wins {
		p := make([]int32, w.Nodes.Pixels())
		l := make([]int32, w.Core.Pixels())
		for j := range p {
			p[j] = 2
		}
		for j := range l {
			l[j] = 2
		}
		data, err := protocol.Marshal(protocol.WindowResult{Job: "b", Window: i, Persistent: protocol.EncodeLabels(p, k), Relaxed: protocol.EncodeLabels(l, k), Vars: len(p)})
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = data
	}
	b.SetBytes(int64(len(msgs[0])))
	b.ResetTimer()
	for n := range b.N {
		i := n % len(wins)
		w := wins[i]
		msg, err := protocol.Decode[protocol.WindowResult](msgs[i], protocol.MaxMessageBytes)
		if err != nil {
			b.Fatal(err)
		}
		task := protocol.WindowTask{Job: "b", Window: i, Core: protocol.Rect(w.Core), Nodes: protocol.Rect(w.Nodes)}
		res, err := protocol.DecodeResult(spec, task, msg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := partition.MergeWindow(w, res, pers, lab); err != nil {
			b.Fatal(err)
		}
		// The next round's task of this window: its fixed labels, encoded.
		e := w.Nodes
		vals := make([]int32, (e.W+4)*(e.H+4))
		x0, y0 := max(e.X0-2, 0), max(e.Y0-2, 0)
		ew, eh := min(e.X0+e.W+2, side)-x0, min(e.Y0+e.H+2, side)-y0
		if err := scratch.ReadRect(x0, y0, ew, eh, vals[:ew*eh]); err != nil {
			b.Fatal(err)
		}
		if _, err := protocol.Marshal(protocol.WindowTask{Job: "b", Round: 1, Window: i, Core: task.Core, Nodes: task.Nodes,
			Fixed: &protocol.Fixed{Rect: protocol.Rect{X0: x0, Y0: y0, W: ew, H: eh}, Width: 1, Data: protocol.Payload{Inline: protocol.EncodeLabels(vals[:ew*eh], k).Data}}}); err != nil {
			b.Fatal(err)
		}
	}
}
