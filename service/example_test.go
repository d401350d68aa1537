package service_test

import (
	"context"
	"fmt"
	"os"

	"github.com/partopt/partopt/job"
	"github.com/partopt/partopt/service"
)

// Prove the bundled 32×32 denoising model by 16×16 windows sent over an
// embedded NATS server to two in-process worker slots, as "partopt run" does.
func ExampleEmbedded() {
	dir, err := os.MkdirTemp("", "partopt-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	spec := job.Spec{Model: "../testdata/denoise32.uai.gz", Window: 16, Halo: 8, Output: dir}
	res, err := job.Run(context.Background(), spec, job.Options{Runtime: &service.Embedded{Workers: 2, Log: quiet()}})
	if err != nil {
		panic(err)
	}
	rep := res.Report.(*job.WindowsReport)
	fmt.Println(rep.Runtime, rep.PersistentVariables, "of", rep.FreeVariables, "persistent in", rep.Windows, "windows")
	// Output: nats-embedded 1024 of 1024 persistent in 13 windows
}
