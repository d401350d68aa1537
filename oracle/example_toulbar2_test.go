package oracle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/partopt/partopt/model/random"
	"github.com/partopt/partopt/model/uai"
	"github.com/partopt/partopt/oracle"
)

// The example compiles but does not run (it has no output comment): it needs toulbar2.
func ExampleToulbar2_Solve() {
	m := random.PottsGrid(random.New(1), 20, 20, 4) // 4^400 labelings
	ev := uai.Evidence{Vars: []int{0, 399}, Labels: []int{3, 0}}

	tb := oracle.Toulbar2{Timeout: time.Minute}
	r, err := tb.Solve(context.Background(), m, ev)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("energy %.6f, proved optimal: %v (within %.1g)\n", r.Energy, r.Optimal, r.Tolerance)
}
