package job_test

import (
	"context"
	"fmt"
	"os"

	"github.com/partopt/partopt/job"
)

// Prove the persistent labels of the bundled 32×32 denoising model whole (the
// default method, pbp+iri: Algorithm 1, then label elimination on what it leaves),
// then re-check the proof from the model and the outputs alone.
func Example() {
	dir, err := os.MkdirTemp("", "partopt-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	model := "../testdata/denoise32.uai.gz"
	res, err := job.Run(context.Background(), job.Spec{Model: model, Output: dir}, job.Options{})
	if err != nil {
		panic(err)
	}
	rep := res.Report.(*job.IRIReport)
	fmt.Println(rep.PersistentVariables, "of", rep.FreeVariables, "variables persistent,", rep.EliminatedLabels, "labels eliminated")
	v, err := job.Verify(model, dir, false, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("verified", v.Persistent)
	// Output:
	// 1024 of 1024 variables persistent, 3072 labels eliminated
	// verified 1024
}
