package trws

// SmallRanges makes every spread of the package cut ranges of at least n
// items, so that tests cut small models into ranges on several cores; it
// returns what undoes it.
func SmallRanges(n int) (undo func()) {
	light, heavy := spreadMin, heavyMin
	spreadMin, heavyMin = n, n
	return func() { spreadMin, heavyMin = light, heavy }
}

// byStrips makes New lay grids out for n strips (layoutOrder), whatever the
// cores; it returns what undoes it.
func byStrips(n int) (undo func()) {
	was := layoutStrips
	layoutStrips = func() int { return n }
	return func() { layoutStrips = was }
}
