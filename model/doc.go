// Package model is the discrete graphical model (MRF) at the centre of partopt.
//
// A Model has variables 0..n-1, each with its own label count (one label is allowed),
// a list of shared Functions, and factors of any order, each naming one function and
// the variables it applies to. The energy of a labeling x is
//
//	E(x) = Offset + Σ_f θ_{func(f)}(x_{vars(f)})
//
// Functions are shared: a uniform Potts grid has one Potts function referenced by every
// edge. Explicit tables are stored with the last argument varying fastest (UAI order).
// +Inf entries are forbidden states; NaN and −Inf are rejected when the model is built.
// Order-0 factors are folded into Offset.
//
// Build a model with a Builder:
//
//	b := model.NewBuilder([]int{2, 2, 3})
//	potts, _ := b.AddFunction(model.Function{Kind: model.Potts, Shape: []int{2, 2}, W: 1.5})
//	_ = b.AddFactor(potts, 0, 1)
//	_ = b.AddTable([]int{2}, []float64{0, 1, math.Inf(1)}) // unary on variable 2, label 2 forbidden
//	m, err := b.Build()
//	e := m.Energy([]int{0, 1, 1}) // 1.5 + 1
//
// AddTable recognises pairwise tables that are exactly Potts, truncated linear or
// truncated quadratic up to an additive constant (the constant moves to Offset), so
// solvers get the fast kernels whatever file format the model came from.
//
// A Model is immutable once built and safe for concurrent readers. Induced returns the
// sub-model of a node set together with the factors that cross its boundary; Condition
// fixes labels and folds the fixed variables into lower-order factors of the rest. Both
// share the parent's functions, so they cost memory proportional to their own size.
//
// Memory is proportional to the model: variables and factor scopes are flat int32
// slices (structure of arrays), and the variable→factor adjacency is one CSR array.
package model
