package labelfile

// SetBandValues makes RenderPNG read at most n values of each raster at once
// and returns a function that restores the default.
func SetBandValues(n int) (restore func()) {
	old := bandValues
	bandValues = n
	return func() { bandValues = old }
}
