package hdf5_test

import (
	"fmt"
	"log"

	"github.com/partopt/partopt/internal/hdf5"
)

func Example() {
	f, err := hdf5.OpenFile("testdata/small0.h5")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	names, err := f.List("/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(names)
	d, err := f.Dataset("z")
	if err != nil {
		log.Fatal(err)
	}
	v, err := d.Float64s(1 << 20)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Class(), d.Shape(), v[:7])
	c, err := f.Dataset("c")
	if err != nil {
		log.Fatal(err)
	}
	ints, err := c.Int64s(0)
	fmt.Println(ints, err)
	_, err = c.Uint64s(0)
	fmt.Println(err)
	// Output:
	// [c g z]
	// floating-point [5 6] [0 1 2 3 4 5 6]
	// [-3 -2 -1 0 1 2] <nil>
	// hdf5: /c: element 0 is negative (-3), cannot be read as unsigned: value does not convert
}
