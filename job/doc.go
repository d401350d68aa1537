// Package job runs partopt's jobs: one description of a job (Spec: the model,
// its evidence, the method and its options, the window plan, the output
// directory) and one entry point, Run, that solves it whole, by windows in this
// process, or by windows through a Runtime (package service: an embedded NATS
// cluster, or the cluster's coordinator), and writes the same outputs in all
// cases. The output files (labels.sol, persistent.evid, certificate.gob, the
// tiled label files, persistency.png and report.json last) are written here and
// nowhere else; Verify re-checks a whole pbp run's outputs from the model alone.
//
// Typical use:
//
//	res, err := job.Run(ctx, job.Spec{Model: "model.uai", Output: "out"}, job.Options{})
//	// out/labels.sol, out/persistent.evid, out/certificate.gob, out/domains.txt, out/report.json,
//	// and out/optimal.sol when the completion proved labels.sol optimal
//	fmt.Println(res.Summary)
//	v, err := job.Verify("model.uai", "out", false, nil)
//
// A whole-model pbp, iri or pbp+iri run completes what its proof leaves
// (Spec.Complete, package complete): each component of the undecided
// variables solved exactly where the budget allows, so that labels.sol is
// proven optimal (report.json "optimal") when every one was.
//
// A Spec's zero values are the defaults: method pbp+iri (whole: label
// elimination, then Algorithm 1 on what it leaves undecided; by windows:
// Algorithm 1's windows, then label elimination's) with the reparametrisation-invariant
// boundary, each relaxation solver's own iteration cap, the whole model (a
// .grid file by 512-pixel windows; past MaxInMemoryPixels by pbp alone, out of
// core). Window > 0 solves by windows: tiles of a raster model or BFS regions of
// any other model (pbp alone: tiles out of core). Options.Progress and Options.Note report progress and
// messages for the user; the caller renders them (package job prints nothing).
//
// Errors of type InternalError are failures of the run (an interrupted proof, a
// solver or file-system failure, a proof that failed its own check); all other
// errors are bad input, with a message that names the file and the problem.
//
// Layering: job is pure computation and files. It knows nothing of NATS: a
// windowed job goes to a cluster through the Runtime interface, which receives
// the job's wire description (protocol.JobSpec), its open model and its label
// stores, and must leave in the stores what partition.SolveRaster or
// partition.Solve would.
package job
