package model_test

import (
	"fmt"
	"math"

	"github.com/partopt/partopt/model"
)

func ExampleBuilder() {
	b := model.NewBuilder([]int{2, 2, 3})
	potts, _ := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{2, 2}, W: 1.5})
	_ = b.AddFactor(potts, 0, 1)
	_ = b.AddTable([]int{2}, []float64{0, 1, math.Inf(1)}) // label 2 of variable 2 is forbidden
	// 0.5 + |a−b|: stored as a truncated linear function, 0.5 moves to the offset.
	_ = b.AddTable([]int{1, 2}, []float64{0.5, 1.5, 2.5, 1.5, 0.5, 1.5})
	m, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	f := m.FactorFunction(2)
	fmt.Printf("factor 2: %v W=%v T=%v, offset %v\n", f.Kind, f.W, f.T, m.Offset())
	fmt.Println(m.Energy([]int{0, 1, 1}))
	fmt.Println(m.Energy([]int{0, 0, 2}))
	// Output:
	// factor 2: truncated-linear W=1 T=2, offset 0.5
	// 3
	// +Inf
}
