// Package gen generates grid models from images: contrast-sensitive Potts colour
// segmentation, truncated-linear stereo, and gigapixel segmentation and stereo models
// streamed by mirror-tiling a small image or a stereo pair's model.
//
// Every generator returns a Source, a W×H 4-connected grid model that produces its
// rows on demand. WriteFile streams a Source to a tiled grid file (.grid: memory is one
// tile row of the grid Writer plus one row of the Source) or builds it as a
// model.Model and writes a UAI file (.uai or .LG, optionally .gz). Values are rounded
// to float32 once, in Row, so both outputs describe exactly the same energy.
//
// Typical use:
//
//	img, err := gen.LoadImage("fruits.jpg")
//	seg, err := gen.Segmentation(img, 4, gen.SegOptions{}) // defaults: λ=1, cap 10
//	err = gen.WriteFile("fruits.grid", seg, gen.WriteOptions{})
//	e := m.Energy(seg.Labeling()) // the k-means labeling, for any m built from seg
//
//	big, err := gen.Tiled(img, 40000, 25000, 4, 7, gen.TiledOptions{})
//	err = gen.WriteFile("big.grid", big, gen.WriteOptions{TileSize: 64})
//
//	pair, err := gen.StereoTiled(left, right, 40000, 25000, 16, gen.StereoOptions{})
//	err = gen.WriteFile("stereo.grid", pair, gen.WriteOptions{})
//
// # Segmentation
//
// Colours are RGB in [0,255]³. k-means (k-means++ seeding from a fixed-seed PCG
// generator on at most SegOptions.Sample pixels, at most SegOptions.Iterations Lloyd
// steps, centres sorted by R+G+B) gives centres μ_l. With σ² the mean over all pixels
// of the squared distance to the nearest centre and β the mean of ‖I_p−I_q‖² over the
// 4-connected edges,
//
//	θ_p(l)  = min(‖I_p − μ_l‖² / (2σ²), Cap)              (a pixel at its centre costs 0)
//	θ_pq    = w_pq·[x_p ≠ x_q],  w_pq = λ·exp(−‖I_p−I_q‖² / (2β))
//
// the classic GrabCut / Boykov–Jolly contrast-sensitive Potts model. The unaries are
// normalised so that the mean best unary is 1/2 (before the cap), so λ = 1 (the
// default) weighs a cut through a flat region like one unit of normalised colour
// misfit. Which λ makes models partially but not fully tight has not been measured.
//
// # Stereo
//
// Labels are disparities 0..D−1, grey g = 0.299R + 0.587G + 0.114B, and
//
//	θ_p(d)  = min(|g_L(x,y) − g_R(x−d,y)|, τ)   (τ when x−d < 0: no correspondence)
//	θ_pq    = w_pq·min(|d_p − d_q|, T)
//
// with one shared weight w (defaults τ = 20, w = 8, T = 2) or, with Contrast, the
// per-edge w_pq = w·exp(−(g_p−g_q)²/(2β)) of the left image.
//
// # Tiled
//
// Tiled maps pixel (x, y) of a W×H output to the source image mirrored in both
// directions (tile (tx, ty) is the source flipped horizontally when tx is odd and
// vertically when ty is odd, so content is continuous across seams) and adds a colour
// offset per tile, uniform in [−Perturb, Perturb] per channel from a hash of (seed, tx,
// ty). Centres, σ² and β are computed once on the source image. Row y costs O(W·K) and
// needs nothing but the source image, so W·H = 10⁹ streams in bounded memory.
//
// # Stereo tiled
//
// StereoTiled mirror-tiles the stereo model of a pair, not the images. Tiling the
// images would break the model: in a horizontally flipped tile, left pixel x matches
// right pixel x+d, not x−d, so the true disparities of that tile are negative, outside
// the labels 0..D−1. Instead pixel (x, y) of the W×H output takes the D unaries of
// source pixel (x', y') = (mirror(x), mirror(y)), mirrored as in Tiled (no offsets).
// The edge between output pixels p and q has the stereo weight of their source pixels
// p' and q': w, or with Contrast w·exp(−(g_p'−g_q')²/(2β)) with β of the pair — the
// contrast weights of the mirror-tiled left image. Away from the seams p' and q' are
// neighbours, so the weight is exactly that of the source edge between them. At a
// seam (x and x+1 on either side of a mirror line, or y and y+1) both pixels map to
// the same border pixel, p' = q', and the weight is that of equal greys, w, as the
// mirror-tiled left image is flat across the seam. A labeling tiled from a source
// labeling gives both seam pixels the same label, so no seam costs it anything,
// whatever its weight. Every edge is truncated linear with the options' T, as in
// Stereo, and W×H equal to the pair's size gives exactly Stereo's model.
//
// Row y costs O(W·D): it computes the unaries of source row y' as Stereo does and
// copies them out with period 2·(source width). Memory is the pair's grey levels (8
// bytes per source pixel) and one source row; nothing is proportional to W·H, and there
// is no table of the pair's unaries (4·D bytes per source pixel: 3.4 MB for Tsukuba at
// D = 16, 43 MB for Cones at D = 64).
package gen
