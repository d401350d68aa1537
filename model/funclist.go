package model

// funcList stores functions in fixed-size chunks: adding never moves existing
// functions (growing one large slice of pointer-holding structs is slow and doubles
// peak memory), and a child model shares the parent's chunks.
type funcList struct {
	chunks [][]Function
	n      int
}

const (
	chunkBits = 12
	chunkMask = 1<<chunkBits - 1
)

func (l *funcList) len() int { return l.n }

func (l *funcList) at(i int) *Function { return &l.chunks[i>>chunkBits][i&chunkMask] }

func (l *funcList) add(f Function) int {
	if l.n&chunkMask == 0 {
		l.chunks = append(l.chunks, make([]Function, 0, 1<<chunkBits))
	}
	last := len(l.chunks) - 1
	l.chunks[last] = append(l.chunks[last], f)
	l.n++
	return l.n - 1
}

// share returns a list that starts with l's functions and appends without touching l:
// it has its own outer slice, and the last, partly filled chunk is clipped, so that
// the child's first append copies that chunk, and a child that adds no function (an
// induced sub-model) copies nothing.
func (l *funcList) share() funcList {
	c := funcList{chunks: append([][]Function(nil), l.chunks...), n: l.n}
	if k := len(c.chunks); k > 0 {
		last := c.chunks[k-1]
		c.chunks[k-1] = last[:len(last):len(last)]
	}
	return c
}
