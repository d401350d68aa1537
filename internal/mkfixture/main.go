// Command mkfixture writes testdata/denoise32.uai.gz, the README's example model:
// random.PottsDenoising(random.New(3), 32, 32, 4, 0.6, 4, 1) in the UAI format.
//
//	go run ./internal/mkfixture
package main

import (
	"log"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
)

func main() {
	m := random.PottsDenoising(random.New(3), 32, 32, 4, 0.6, 4, 1)
	if err := uai.WriteFile("testdata/denoise32.uai.gz", m); err != nil {
		log.Fatal(err)
	}
}
