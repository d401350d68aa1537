package model

import "testing"

// TestSharedFunctionListsAreIndependent: children of a function list see the
// parent's functions, add their own without changing the parent or each other,
// whether the parent's last chunk is full or partly filled.
func TestSharedFunctionListsAreIndependent(t *testing.T) {
	for _, n := range []int{0, 1, 1<<chunkBits - 1, 1 << chunkBits, 1<<chunkBits + 7} {
		var parent funcList
		for i := range n {
			parent.add(Function{W: float64(i)})
		}
		a, b := parent.share(), parent.share()
		for i := range 2*(1<<chunkBits) + 3 { // across two chunk boundaries
			a.add(Function{W: -1 - float64(i)})
		}
		b.add(Function{W: 1e9})
		if parent.len() != n || a.len() != n+2*(1<<chunkBits)+3 || b.len() != n+1 {
			t.Fatalf("n=%d: lengths %d %d %d", n, parent.len(), a.len(), b.len())
		}
		for i := range n {
			if parent.at(i).W != float64(i) || a.at(i).W != float64(i) || b.at(i).W != float64(i) {
				t.Fatalf("n=%d: function %d differs: %v %v %v", n, i, parent.at(i).W, a.at(i).W, b.at(i).W)
			}
		}
		for i := n; i < a.len(); i++ {
			if a.at(i).W != -1-float64(i-n) {
				t.Fatalf("n=%d: child function %d is %v", n, i, a.at(i).W)
			}
		}
		if b.at(n).W != 1e9 {
			t.Fatalf("n=%d: the second child's function is %v", n, b.at(n).W)
		}
		// The parent grows on, untouched by its children.
		parent.add(Function{W: 42})
		if parent.at(n).W != 42 || b.at(n).W != 1e9 || a.at(n).W != -1 {
			t.Fatalf("n=%d: after the parent grew: %v %v %v", n, parent.at(n).W, b.at(n).W, a.at(n).W)
		}
	}
}
