// Package service runs partopt's jobs over NATS: the coordinator service, the
// job.Runtimes that send a job's windows to workers, and the cluster's clients.
//
// A coordinator process dials the cluster and serves until stopped:
//
//	res, err := cluster.DialWaiting(ctx, conn, cluster.DefaultConfig(), "partopt-coordinator", log)
//	err = service.Serve(ctx, service.Config{Res: res, Data: "partopt-data", Log: log})
//
// Serve takes submissions, keeps the job table (in the key-value bucket, or
// replicated with raft when Config.Raft is set; then only the leader runs jobs
// and a new leader resumes them), runs each job with job.Run over the cluster,
// uploads its outputs and records its end; jobs left unfinished by a crash are
// resumed at start. Clients submit and follow jobs:
//
//	id, err := service.Submit(ctx, conn, job.Spec{Model: "big.grid", Window: 512}, service.SubmitOptions{})
//	sum, err := service.Status(ctx, res, id)       // sum.Phase "done" at the end
//	names, err := service.Fetch(ctx, res, id, "out") // the outputs of job.Run, byte for byte
//
// On one machine, Embedded is a job.Runtime with its own NATS server and
// in-process workers (what "partopt run" uses):
//
//	res, err := job.Run(ctx, spec, job.Options{Runtime: &service.Embedded{Workers: 4}})
package service
