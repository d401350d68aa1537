package persistency

// ForceStructured makes every verification term of a Potts or truncated factor a
// model.Difference function (on), or leaves the choice to the cost rule (off), so
// that the soundness tests' small models check the Difference kernels too.
func ForceStructured(on bool) { forceStructured = on }

// BuildSubproblemByCopy is BuildSubproblem by the induced builder always, for
// comparing its shortcut where A is every variable.
var BuildSubproblemByCopy = buildSubproblem

// ParallelProof is the certificates' size from which a proof is compressed on
// all cores.
const ParallelProof = parallelProof
