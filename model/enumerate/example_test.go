package enumerate_test

import (
	"fmt"

	"github.com/partopt/partopt/model"
	"github.com/partopt/partopt/model/enumerate"
)

func ExampleMinimize() {
	// Two variables with 2 and 3 labels, a unary term on each and a Potts term between them.
	b := model.NewBuilder([]int{2, 3})
	_ = b.AddTable([]int{0}, []float64{0, 1})
	_ = b.AddTable([]int{1}, []float64{2, 0, 1})
	potts, _ := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{2, 3}, W: 1.5})
	_ = b.AddFactor(potts, 0, 1)
	m, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := enumerate.Count(m, 100)
	fmt.Println(n, err)
	x, e, err := enumerate.Minimize(m, 100)
	fmt.Println(x, e, err)
	// A limit below the 6 labelings is refused before any work.
	_, _, err = enumerate.Minimize(m, 5)
	fmt.Println(err)
	// Output:
	// 6 <nil>
	// [1 1] 1 <nil>
	// enumerate: model has more than 5 labelings (2 variables)
}
