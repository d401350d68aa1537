package partition_test

import (
	"context"
	"testing"

	"github.com/partopt/partopt/gen"
	"github.com/partopt/partopt/internal/testutil"
	"github.com/partopt/partopt/partition"
	"github.com/partopt/partopt/persistency"
)

// TestWindowedColourSegmentationMatchesTheWholeModel: on a contrast-sensitive Potts
// colour segmentation of a real image (the windows issue's target models), windows
// with halos reach the whole model's persistency within 1 percentage point, and every
// window's proof checks.
func TestWindowedColourSegmentationMatchesTheWholeModel(t *testing.T) {
	fruits := testutil.SharedPath("images", "opencv-doc-debian", "fruits.jpg")
	testutil.SkipWithoutShared(t, fruits)
	img, err := gen.LoadImage(fruits)
	if err != nil {
		t.Fatal(err)
	}
	src, err := gen.Segmentation(img, 5, gen.SegOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := gen.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	whole, err := persistency.Run(context.Background(), m, persistency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := partition.Solve(context.Background(), m, partition.Options{Workers: 2, MaxRounds: 3,
		Plan: func(r int) partition.Plan { return partition.GridPlan(w, h, 128, 16, r*64) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := partition.Check(m, res); err != nil {
		t.Fatal(err)
	}
	score, _ := persistency.Score(m, res.Persistent)
	if score < whole.Score-0.01 {
		t.Errorf("windowed score %.4f, whole %.4f", score, whole.Score)
	}
	t.Logf("fruits 512x480 K=5: whole %.4f, windows 128+16: %.4f (%d rounds)", whole.Score, score, res.Rounds)
}
