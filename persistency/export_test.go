package persistency

// ForceStructured makes every verification term of a Potts or truncated factor a
// model.Difference function (on), or leaves the choice to the cost rule (off), so
// that the soundness tests' small models check the Difference kernels too.
func ForceStructured(on bool) { forceStructured = on }
