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
// the outer slice and the last, partly filled chunk are clipped so appends reallocate.
func (l *funcList) share() funcList {
	c := funcList{chunks: l.chunks[:len(l.chunks):len(l.chunks)], n: l.n}
	if k := len(c.chunks); k > 0 {
		last := c.chunks[k-1]
		if len(last) < cap(last) {
			c.chunks = append([][]Function(nil), c.chunks...)
			c.chunks[k-1] = append(make([]Function, 0, 1<<chunkBits), last...)
		}
	}
	return c
}
