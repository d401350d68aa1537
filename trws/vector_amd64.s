//go:build !purego

#include "textflag.h"

// HMIN leaves in the low lane of x (the low half of y) the minimum of y's eight
// lanes; t is scratch.
#define HMIN(y, x, t) \
	VEXTRACTF128 $1, y, t; \
	VMINPS       t, x, x; \
	VMOVHLPS     x, x, t; \
	VMINPS       t, x, x; \
	VSHUFPS      $0x55, x, x, t; \
	VMINSS       t, x, x

// LANEMASK sets y's first r lanes (1 ≤ r ≤ 8, in register r) to all ones and
// the others to zero, from lanemask<>; t is scratch, r is kept.
#define LANEMASK(r, t, y) \
	LEAQ    lanemask<>+32(SB), t; \
	NEGQ    r; \
	VMOVDQU (t)(r*4), y; \
	NEGQ    r

// HEADREST folds the masked last chunk of three rows, at (p), (p)(b*1),
// (p)(b*2), into their minima a, b2, c (h's chunk in Y14, the mask in Y13;
// Y9 scratch).
#define HEADREST(p, b, a, b2, c) \
	VMASKMOVPS (p), Y13, Y9; \
	VADDPS     Y9, Y14, Y9; \
	VMINPS     Y9, a, a; \
	VMASKMOVPS (p)(b*1), Y13, Y9; \
	VADDPS     Y9, Y14, Y9; \
	VMINPS     Y9, b2, b2; \
	VMASKMOVPS (p)(b*2), Y13, Y9; \
	VADDPS     Y9, Y14, Y9; \
	VMINPS     Y9, c, c

// lanemask<>: eight all-ones lanes, then eight zero lanes; the mask of r lanes
// starts 8 − r lanes in.
DATA lanemask<>+0(SB)/8, $-1
DATA lanemask<>+8(SB)/8, $-1
DATA lanemask<>+16(SB)/8, $-1
DATA lanemask<>+24(SB)/8, $-1
DATA lanemask<>+32(SB)/8, $0
DATA lanemask<>+40(SB)/8, $0
DATA lanemask<>+48(SB)/8, $0
DATA lanemask<>+56(SB)/8, $0
GLOBL lanemask<>(SB), RODATA|NOPTR, $64

// func minPlusFromTailAVX2(h, out, tab []float32)
// out[y] = min_x h[x] + tab[x*n + y], n = len(out). The minima stay in registers
// while the rows go by — 32 labels at a time (four independent chains of VMINPS),
// then 8, then the last 1–7 (the last eight again, or a masked block when out has
// fewer) — so out is stored once (its last labels twice, the same floats).
TEXT ·minPlusFromTailAVX2(SB), NOSPLIT, $0-72
	MOVQ         h_base+0(FP), SI
	MOVQ         h_len+8(FP), CX
	MOVQ         out_base+24(FP), DI
	MOVQ         out_len+32(FP), DX
	MOVQ         tab_base+48(FP), BX
	LEAQ         (DX*4), R10 // bytes in a row
	MOVQ         DX, R8
	ANDQ         $-32, R8
	MOVQ         DX, R9
	ANDQ         $-8, R9
	MOVL         $0x7f800000, AX // +Inf
	VMOVD        AX, X15
	VBROADCASTSS X15, Y15
	XORQ         AX, AX

tail32:
	CMPQ    AX, R8
	JGE     tail8
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	LEAQ    (BX)(AX*4), R11
	XORQ    R12, R12

tail32rows:
	CMPQ         R12, CX
	JGE          tail32store
	VBROADCASTSS (SI)(R12*4), Y4
	VADDPS       (R11), Y4, Y5
	VADDPS       32(R11), Y4, Y6
	VADDPS       64(R11), Y4, Y7
	VADDPS       96(R11), Y4, Y8
	VMINPS       Y5, Y0, Y0
	VMINPS       Y6, Y1, Y1
	VMINPS       Y7, Y2, Y2
	VMINPS       Y8, Y3, Y3
	ADDQ         R10, R11
	INCQ         R12
	JMP          tail32rows

tail32store:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ    $32, AX
	JMP     tail32

tail8:
	CMPQ    AX, R9
	JGE     tail1
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	LEAQ    (BX)(AX*4), R11
	XORQ    R12, R12
	MOVQ    CX, R13
	ANDQ    $-2, R13 // rows in pairs: two chains of VMINPS

tail8rows:
	CMPQ         R12, R13
	JGE          tail8last
	VBROADCASTSS (SI)(R12*4), Y4
	VBROADCASTSS 4(SI)(R12*4), Y6
	VADDPS       (R11), Y4, Y5
	VADDPS       (R11)(R10*1), Y6, Y7
	VMINPS       Y5, Y0, Y0
	VMINPS       Y7, Y1, Y1
	LEAQ         (R11)(R10*2), R11
	ADDQ         $2, R12
	JMP          tail8rows

tail8last:
	CMPQ         R12, CX
	JGE          tail8store
	VBROADCASTSS (SI)(R12*4), Y4
	VADDPS       (R11), Y4, Y5
	VMINPS       Y5, Y0, Y0

tail8store:
	VMINPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     tail8

tail1:
	// The last 1–7 labels: with eight or more, the last eight again as a block
	// (the labels it shares with the block before get the same minima); with
	// fewer, one block under a mask, its lanes beyond out neither loaded nor
	// stored.
	MOVQ       DX, R12
	SUBQ       AX, R12
	JZ         taildone
	CMPQ       DX, $8
	JLT        tailmask
	MOVQ       DX, R9
	LEAQ       -8(DX), AX
	JMP        tail8

tailmask:
	LANEMASK(R12, R13, Y13)
	VMOVAPS    Y15, Y0
	LEAQ       (BX)(AX*4), R11
	XORQ       R12, R12

tail1rows:
	CMPQ         R12, CX
	JGE          tail1store
	VBROADCASTSS (SI)(R12*4), Y4
	VMASKMOVPS   (R11), Y13, Y5
	VADDPS       Y5, Y4, Y5
	VMINPS       Y5, Y0, Y0
	ADDQ         R10, R11
	INCQ         R12
	JMP          tail1rows

tail1store:
	VMASKMOVPS Y0, Y13, (DI)(AX*4)

taildone:
	VZEROUPPER
	RET

// func minPlusFromHeadAVX2(h, out, tab []float32)
// out[x] = min_y h[y] + tab[x*n + y], n = len(h): eight rows at a time, then four,
// then one, each chunk of eight labels of h loaded once for them; the last 1–7
// labels of each row as one more chunk under a mask (h's lanes beyond n +Inf).
TEXT ·minPlusFromHeadAVX2(SB), NOSPLIT, $0-72
	MOVQ         h_base+0(FP), SI
	MOVQ         h_len+8(FP), DX
	MOVQ         out_base+24(FP), DI
	MOVQ         out_len+32(FP), CX
	MOVQ         tab_base+48(FP), BX
	MOVQ         DX, R8
	SHRQ         $3, R8 // whole chunks of eight labels
	MOVQ         DX, R9
	ANDQ         $-8, R9
	LEAQ         (DX*4), R10 // bytes in a row
	MOVL         $0x7f800000, AX // +Inf
	VMOVD        AX, X15
	VBROADCASTSS X15, Y15
	MOVQ         DX, R15
	SUBQ         R9, R15 // labels in the masked chunk
	JZ           head8
	LANEMASK(R15, R12, Y13)
	VMASKMOVPS   (SI)(R9*4), Y13, Y14
	VBLENDVPS    Y13, Y14, Y15, Y14 // h's last labels, +Inf beyond

head8:
	CMPQ    CX, $8
	JLT     head4
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	VMOVAPS Y15, Y4
	VMOVAPS Y15, Y5
	VMOVAPS Y15, Y6
	VMOVAPS Y15, Y7
	MOVQ    BX, R11 // rows 0–2 at (R11), (R11)(R10*1), (R11)(R10*2)
	LEAQ    (R10)(R10*2), AX
	LEAQ    (BX)(AX*1), R13 // rows 3–5
	LEAQ    (R13)(AX*1), AX // rows 6–7
	MOVQ    SI, R14
	MOVQ    R8, R12

head8chunks:
	TESTQ   R12, R12
	JZ      head8rest
	VMOVUPS (R14), Y8
	VADDPS  (R11), Y8, Y9
	VMINPS  Y9, Y0, Y0
	VADDPS  (R11)(R10*1), Y8, Y9
	VMINPS  Y9, Y1, Y1
	VADDPS  (R11)(R10*2), Y8, Y9
	VMINPS  Y9, Y2, Y2
	VADDPS  (R13), Y8, Y9
	VMINPS  Y9, Y3, Y3
	VADDPS  (R13)(R10*1), Y8, Y9
	VMINPS  Y9, Y4, Y4
	VADDPS  (R13)(R10*2), Y8, Y9
	VMINPS  Y9, Y5, Y5
	VADDPS  (AX), Y8, Y9
	VMINPS  Y9, Y6, Y6
	VADDPS  (AX)(R10*1), Y8, Y9
	VMINPS  Y9, Y7, Y7
	ADDQ    $32, R11
	ADDQ    $32, R13
	ADDQ    $32, AX
	ADDQ    $32, R14
	DECQ    R12
	JMP     head8chunks

head8rest:
	TESTQ R15, R15
	JZ    head8reduce
	HEADREST(R11, R10, Y0, Y1, Y2)
	HEADREST(R13, R10, Y3, Y4, Y5)
	VMASKMOVPS (AX), Y13, Y9
	VADDPS     Y9, Y14, Y9
	VMINPS     Y9, Y6, Y6
	VMASKMOVPS (AX)(R10*1), Y13, Y9
	VADDPS     Y9, Y14, Y9
	VMINPS     Y9, Y7, Y7

head8reduce:
	// The eight rows' minima at once: pairs of rows interleaved and folded,
	// then pairs of pairs, then the two halves: lane r ends with row r's minimum.
	VUNPCKLPS  Y1, Y0, Y8
	VUNPCKHPS  Y1, Y0, Y9
	VMINPS     Y9, Y8, Y8 // rows 0, 1
	VUNPCKLPS  Y3, Y2, Y10
	VUNPCKHPS  Y3, Y2, Y9
	VMINPS     Y9, Y10, Y10 // rows 2, 3
	VUNPCKLPS  Y5, Y4, Y11
	VUNPCKHPS  Y5, Y4, Y9
	VMINPS     Y9, Y11, Y11 // rows 4, 5
	VUNPCKLPS  Y7, Y6, Y12
	VUNPCKHPS  Y7, Y6, Y9
	VMINPS     Y9, Y12, Y12 // rows 6, 7
	VSHUFPS    $0x44, Y10, Y8, Y9
	VSHUFPS    $0xEE, Y10, Y8, Y0
	VMINPS     Y0, Y9, Y9 // rows 0–3, each half
	VSHUFPS    $0x44, Y12, Y11, Y10
	VSHUFPS    $0xEE, Y12, Y11, Y0
	VMINPS     Y0, Y10, Y10 // rows 4–7, each half
	VPERM2F128 $0x20, Y10, Y9, Y11
	VPERM2F128 $0x31, Y10, Y9, Y12
	VMINPS     Y12, Y11, Y11
	VMOVUPS    Y11, (DI)
	ADDQ       $32, DI
	LEAQ       (BX)(R10*8), BX
	SUBQ       $8, CX
	JMP        head8

head4:
	CMPQ    CX, $4
	JLT     headrow
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	MOVQ    BX, R11 // rows 0 and 1 at (R11), (R11)(R10*1)
	LEAQ    (BX)(R10*2), R13 // rows 2 and 3
	MOVQ    SI, R14
	MOVQ    R8, R12

head4chunks:
	TESTQ   R12, R12
	JZ      head4rest
	VMOVUPS (R14), Y4
	VADDPS  (R11), Y4, Y5
	VADDPS  (R11)(R10*1), Y4, Y6
	VADDPS  (R13), Y4, Y7
	VADDPS  (R13)(R10*1), Y4, Y8
	VMINPS  Y5, Y0, Y0
	VMINPS  Y6, Y1, Y1
	VMINPS  Y7, Y2, Y2
	VMINPS  Y8, Y3, Y3
	ADDQ    $32, R11
	ADDQ    $32, R13
	ADDQ    $32, R14
	DECQ    R12
	JMP     head4chunks

head4rest:
	TESTQ      R15, R15
	JZ         head4reduce
	VMASKMOVPS (R11), Y13, Y5
	VMASKMOVPS (R11)(R10*1), Y13, Y6
	VMASKMOVPS (R13), Y13, Y7
	VMASKMOVPS (R13)(R10*1), Y13, Y8
	VADDPS     Y5, Y14, Y5
	VADDPS     Y6, Y14, Y6
	VADDPS     Y7, Y14, Y7
	VADDPS     Y8, Y14, Y8
	VMINPS     Y5, Y0, Y0
	VMINPS     Y6, Y1, Y1
	VMINPS     Y7, Y2, Y2
	VMINPS     Y8, Y3, Y3

head4reduce:
	HMIN(Y0, X0, X5)
	HMIN(Y1, X1, X5)
	HMIN(Y2, X2, X5)
	HMIN(Y3, X3, X5)
	VMOVSS X0, (DI)
	VMOVSS X1, 4(DI)
	VMOVSS X2, 8(DI)
	VMOVSS X3, 12(DI)
	ADDQ   $16, DI
	LEAQ   (BX)(R10*4), BX
	SUBQ   $4, CX
	JMP    head4

headrow:
	TESTQ   CX, CX
	JZ      headdone
	VMOVAPS Y15, Y2
	MOVQ    BX, R11
	MOVQ    SI, R14
	MOVQ    R8, R12

headchunks:
	TESTQ   R12, R12
	JZ      headrowrest
	VMOVUPS (R14), Y0
	VADDPS  (R11), Y0, Y0
	VMINPS  Y0, Y2, Y2
	ADDQ    $32, R11
	ADDQ    $32, R14
	DECQ    R12
	JMP     headchunks

headrowrest:
	TESTQ      R15, R15
	JZ         headreduce
	VMASKMOVPS (R11), Y13, Y0
	VADDPS     Y0, Y14, Y0
	VMINPS     Y0, Y2, Y2

headreduce:
	HMIN(Y2, X2, X3)
	VMOVSS X2, (DI)
	ADDQ   $4, DI
	ADDQ   R10, BX
	DECQ   CX
	JMP    headrow

headdone:
	VZEROUPPER
	RET

// func sumRowsAVX2(d, u, block []float32, rows int) float32
// d[x] = u[x] + block[x] + block[n + x] + … (rows terms, in that order), n = len(d);
// returns min d.
TEXT ·sumRowsAVX2(SB), NOSPLIT, $0-84
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), DX
	MOVQ u_base+24(FP), SI
	MOVQ block_base+48(FP), BX
	MOVQ rows+72(FP), CX
	MOVQ DX, R9
	ANDQ $-8, R9
	LEAQ (DX*4), R10
	MOVL $0x7f800000, AX
	VMOVD AX, X7
	VBROADCASTSS X7, Y7
	XORQ AX, AX

sumvec:
	CMPQ    AX, R9
	JGE     sumreduce
	VMOVUPS (SI)(AX*4), Y0
	LEAQ    (BX)(AX*4), R11
	MOVQ    CX, R12

sumvecrows:
	TESTQ  R12, R12
	JZ     sumvecstore
	VADDPS (R11), Y0, Y0
	ADDQ   R10, R11
	DECQ   R12
	JMP    sumvecrows

sumvecstore:
	VMOVUPS Y0, (DI)(AX*4)
	VMINPS  Y0, Y7, Y7
	ADDQ    $8, AX
	JMP     sumvec

sumreduce:
	HMIN(Y7, X7, X6)

sumscalar:
	CMPQ   AX, DX
	JGE    sumdone
	VMOVSS (SI)(AX*4), X0
	LEAQ   (BX)(AX*4), R11
	MOVQ   CX, R12

sumscalarrows:
	TESTQ  R12, R12
	JZ     sumscalarstore
	VADDSS (R11), X0, X0
	ADDQ   R10, R11
	DECQ   R12
	JMP    sumscalarrows

sumscalarstore:
	VMOVSS X0, (DI)(AX*4)
	VMINSS X0, X7, X7
	INCQ   AX
	JMP    sumscalar

sumdone:
	VMOVSS X7, ret+80(FP)
	VZEROUPPER
	RET

// func reparamAVX2(h, d, back []float32, gamma float32) float32
// h[x] = gamma·d[x] − back[x] (a product, then a difference: no fused multiply-add);
// returns min h. len(h) = len(d) ≤ len(back).
TEXT ·reparamAVX2(SB), NOSPLIT, $0-84
	MOVQ         h_base+0(FP), DI
	MOVQ         d_base+24(FP), SI
	MOVQ         d_len+32(FP), DX
	MOVQ         back_base+48(FP), BX
	VMOVSS       gamma+72(FP), X6
	VBROADCASTSS X6, Y6
	MOVQ         DX, R9
	ANDQ         $-8, R9
	MOVL         $0x7f800000, AX
	VMOVD        AX, X7
	VBROADCASTSS X7, Y7
	XORQ         AX, AX

repvec:
	CMPQ    AX, R9
	JGE     repreduce
	VMULPS  (SI)(AX*4), Y6, Y0
	VSUBPS  (BX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	VMINPS  Y0, Y7, Y7
	ADDQ    $8, AX
	JMP     repvec

repreduce:
	HMIN(Y7, X7, X5)

repscalar:
	CMPQ   AX, DX
	JGE    repdone
	VMULSS (SI)(AX*4), X6, X0
	VSUBSS (BX)(AX*4), X0, X0
	VMOVSS X0, (DI)(AX*4)
	VMINSS X0, X7, X7
	INCQ   AX
	JMP    repscalar

repdone:
	VMOVSS X7, ret+80(FP)
	VZEROUPPER
	RET

// func normalizeAVX2(out []float32) float32
// Subtracts the minimum of out from every entry and returns it.
TEXT ·normalizeAVX2(SB), NOSPLIT, $0-28
	MOVQ         out_base+0(FP), DI
	MOVQ         out_len+8(FP), DX
	MOVQ         DX, R9
	ANDQ         $-8, R9
	MOVL         $0x7f800000, AX
	VMOVD        AX, X7
	VBROADCASTSS X7, Y7
	XORQ         AX, AX

normvec:
	CMPQ   AX, R9
	JGE    normreduce
	VMINPS (DI)(AX*4), Y7, Y7
	ADDQ   $8, AX
	JMP    normvec

normreduce:
	HMIN(Y7, X7, X5)

normscalar:
	CMPQ   AX, DX
	JGE    normsub
	VMINSS (DI)(AX*4), X7, X7
	INCQ   AX
	JMP    normscalar

normsub:
	VBROADCASTSS X7, Y7
	XORQ         AX, AX

normsubvec:
	CMPQ    AX, R9
	JGE     normsubscalar
	VMOVUPS (DI)(AX*4), Y0
	VSUBPS  Y7, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     normsubvec

normsubscalar:
	CMPQ   AX, DX
	JGE    normdone
	VMOVSS (DI)(AX*4), X0
	VSUBSS X7, X0, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    normsubscalar

normdone:
	VMOVSS X7, ret+24(FP)
	VZEROUPPER
	RET

// TL2CHUNK sets Y0 = min(h[y], top, min(h[y−1], h[y+1]) + w) for the eight
// labels from y = AX (Y6 = w, Y7 = top).
#define TL2CHUNK \
	VMOVUPS -4(SI)(AX*4), Y0; \
	VMINPS  4(SI)(AX*4), Y0, Y0; \
	VADDPS  Y6, Y0, Y0; \
	VMINPS  (SI)(AX*4), Y0, Y0; \
	VMINPS  Y7, Y0, Y0

// func truncLinear2AVX2(h, out []float32, w, top float32) float32
// out[y] = min(h[y], top, min(h[y−1], h[y+1]) + w) (one neighbour at the ends),
// then normalised: returns their minimum lo and leaves out − lo. len(out) =
// len(h) ≥ 10. The middle labels go eight at a time, the last eight overlapping
// the ones before when len(h)−2 is not a multiple of eight; they are computed
// twice, for the minimum and then for out, rather than stored and read back
// (loads that straddle the stores just made wait for them: a quarter of the
// stereo solve's time went there).
TEXT ·truncLinear2AVX2(SB), NOSPLIT, $0-60
	MOVQ         h_base+0(FP), SI
	MOVQ         h_len+8(FP), DX
	MOVQ         out_base+24(FP), DI
	VMOVSS       w+48(FP), X6
	VBROADCASTSS X6, Y6
	VMOVSS       top+52(FP), X7
	VBROADCASTSS X7, Y7
	LEAQ         -1(DX), R9

	// The ends: X10 = out[0], X11 = out[k−1].
	VMOVSS 4(SI), X10
	VADDSS X6, X10, X10
	VMINSS (SI), X10, X10
	VMINSS X7, X10, X10
	VMOVSS -8(SI)(DX*4), X11
	VADDSS X6, X11, X11
	VMINSS -4(SI)(DX*4), X11, X11
	VMINSS X7, X11, X11

	// The minimum.
	MOVL         $0x7f800000, AX
	VMOVD        AX, X8
	VBROADCASTSS X8, Y8
	MOVQ         $1, AX

tl2min:
	LEAQ   8(AX), R10
	CMPQ   R10, R9
	JG     tl2minlast
	TL2CHUNK
	VMINPS Y0, Y8, Y8
	MOVQ   R10, AX
	JMP    tl2min

tl2minlast:
	CMPQ   AX, R9
	JGE    tl2reduce
	LEAQ   -9(DX), AX
	TL2CHUNK
	VMINPS Y0, Y8, Y8

tl2reduce:
	HMIN(Y8, X8, X5)
	VMINSS       X10, X8, X8
	VMINSS       X11, X8, X8
	VBROADCASTSS X8, Y9
	VSUBSS       X8, X10, X10
	VMOVSS       X10, (DI)
	VSUBSS       X8, X11, X11
	VMOVSS       X11, -4(DI)(DX*4)
	MOVQ         $1, AX

tl2loop:
	LEAQ    8(AX), R10
	CMPQ    R10, R9
	JG      tl2last
	TL2CHUNK
	VSUBPS  Y9, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     tl2loop

tl2last:
	CMPQ    AX, R9
	JGE     tl2done
	LEAQ    -9(DX), AX
	TL2CHUNK
	VSUBPS  Y9, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)

tl2done:
	VMOVSS X8, ret+56(FP)
	VZEROUPPER
	RET

// TL2ALIGNED sets Y0 = min(h[y], top, min(h[y−1], h[y+1]) + w) for the eight
// labels of Y2 = h[8i:8i+8], from its neighbours Y1 = h[8i−8:8i] and Y3 =
// h[8i+8:8i+16] (+Inf beyond h), shifted a lane across the registers instead
// of loaded from h at odd offsets. Clobbers Y4, Y5.
#define TL2ALIGNED \
	VPERM2F128 $0x21, Y3, Y2, Y4; \
	VPALIGNR   $4, Y2, Y4, Y4; \
	VPERM2F128 $0x21, Y2, Y1, Y5; \
	VPALIGNR   $12, Y5, Y2, Y5; \
	VMINPS     Y5, Y4, Y0; \
	VADDPS     Y6, Y0, Y0; \
	VMINPS     Y2, Y0, Y0; \
	VMINPS     Y7, Y0, Y0

// func truncLinear2SendAVX2(d, back, h, out []float32, gamma, w, t float32) float32
// A truncated-linear message (1 < t ≤ 2, len(d) a multiple of eight) in one
// call: tl2send<> with the arguments in its registers.
TEXT ·truncLinear2SendAVX2(SB), NOSPLIT, $8-116
	MOVQ         d_base+0(FP), R11
	MOVQ         d_len+8(FP), DX
	MOVQ         back_base+24(FP), BX
	MOVQ         h_base+48(FP), SI
	MOVQ         out_base+72(FP), DI
	VBROADCASTSS gamma+96(FP), Y4
	VMOVSS       w+100(FP), X6
	VMOVSS       t+104(FP), X10
	CALL         tl2send<>(SB)
	VMOVSS       X8, ret+112(FP)
	VZEROUPPER
	RET

// tl2send<> sends a truncated-linear message (1 < t ≤ 2, k a multiple of
// eight): h = gamma·d − back as reparamAVX2, top = min h + w·t, out as
// truncLinear2AVX2(h, out, w, top), normalised. In: R11 d, DX k, BX back, SI
// h, DI out, Y4 gamma (broadcast), X6 w, X10 t; out: X8 the normalisation.
// Uses AX, R9, Y0–Y9, Y15; the passes below call it with their state in other
// registers (no arguments on the stack: the Go calls' argument stores queued
// behind the messages' stores were a third of the stereo passes). h is read
// back only in the aligned eights just stored, the neighbours shifted across
// registers (TL2ALIGNED), so the loads take their values from those stores
// instead of waiting for them to be written.
TEXT tl2send<>(SB), NOSPLIT, $0-0
	CMPQ         DX, $16
	JEQ          tl2s16
	MOVL         $0x7f800000, AX
	VMOVD        AX, X7
	VBROADCASTSS X7, Y7
	XORQ         AX, AX

tl2sh:
	VMULPS  (R11)(AX*4), Y4, Y0
	VSUBPS  (BX)(AX*4), Y0, Y0
	VMOVUPS Y0, (SI)(AX*4)
	VMINPS  Y0, Y7, Y7
	ADDQ    $8, AX
	CMPQ    AX, DX
	JL      tl2sh
	HMIN(Y7, X7, X5)
	VMULSS       X10, X6, X5
	VADDSS       X5, X7, X7 // top = min h + w·t
	VBROADCASTSS X7, Y7
	VBROADCASTSS X6, Y6
	// The values' minimum, then out = the values − it (X8).
	MOVL         $0x7f800000, AX
	VMOVD        AX, X15
	VBROADCASTSS X15, Y15 // +Inf
	LEAQ         -8(DX), R9 // the last eight start here
	VMOVAPS      Y15, Y8
	VMOVAPS      Y15, Y1
	VMOVUPS      (SI), Y2
	XORQ         AX, AX

tl2smin:
	VMOVAPS Y15, Y3
	CMPQ    AX, R9
	JGE     tl2smin1
	VMOVUPS 32(SI)(AX*4), Y3

tl2smin1:
	TL2ALIGNED
	VMINPS  Y0, Y8, Y8
	VMOVAPS Y2, Y1
	VMOVAPS Y3, Y2
	ADDQ    $8, AX
	CMPQ    AX, DX
	JL      tl2smin
	HMIN(Y8, X8, X5)
	VBROADCASTSS X8, Y9
	VMOVAPS      Y15, Y1
	VMOVUPS      (SI), Y2
	XORQ         AX, AX

tl2sout:
	VMOVAPS Y15, Y3
	CMPQ    AX, R9
	JGE     tl2sout1
	VMOVUPS 32(SI)(AX*4), Y3

tl2sout1:
	TL2ALIGNED
	VSUBPS  Y9, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	VMOVAPS Y2, Y1
	VMOVAPS Y3, Y2
	ADDQ    $8, AX
	CMPQ    AX, DX
	JL      tl2sout
	RET

	// Sixteen labels (stereo's commonest count), the loops above written
	// out with the same operations in the same order, so the same floats: h
	// stays in Y2, Y3 (stored for the callers), and the values of the two
	// eights are computed once, not again for out. Their minimum is min h
	// itself, so it is not searched for: the value at h's argmin is min h,
	// and every other candidate is min h plus w ≥ 0 or w·t, or another h,
	// none below it after rounding (the minimum of the values is one of
	// them, equal to min h). The next node's sum waits on out, so that
	// search was on the pass's critical path.
tl2s16:
	MOVL         $0x7f800000, AX
	VMOVD        AX, X15
	VBROADCASTSS X15, Y15 // +Inf
	VMULPS       (R11), Y4, Y2
	VSUBPS       (BX), Y2, Y2
	VMULPS       32(R11), Y4, Y3
	VSUBPS       32(BX), Y3, Y3
	VMOVUPS      Y2, (SI)
	VMOVUPS      Y3, 32(SI)
	VMINPS       Y3, Y2, Y7
	HMIN(Y7, X7, X5)
	VMOVAPS      X7, X8 // the normalisation: min h
	VBROADCASTSS X7, Y9
	VMULSS       X10, X6, X5
	VADDSS       X5, X7, X7 // top = min h + w·t
	VBROADCASTSS X7, Y7
	VBROADCASTSS X6, Y6
	VMOVAPS      Y15, Y1
	TL2ALIGNED
	VSUBPS       Y9, Y0, Y0
	VMOVUPS      Y0, (DI)
	VMOVAPS      Y2, Y1
	VMOVAPS      Y3, Y2
	VMOVAPS      Y15, Y3
	TL2ALIGNED
	VSUBPS       Y9, Y0, Y0
	VMOVUPS      Y0, 32(DI)
	RET

// TL2ROWS sets BX to node R8's adjacency count and R10 to the first message
// into it (the node's rows, consecutive in msg). Uses AX, CX.
#define TL2ROWS \
	MOVQ         astart_base+184(FP), R10; \
	MOVLQSX      (R10)(R8*4), CX; \
	MOVLQSX      4(R10)(R8*4), BX; \
	SUBQ         CX, BX; \
	MOVQ         msg_base+40(FP), R10; \
	TESTQ        BX, BX; \
	JLE          4(PC); \
	MOVQ         ain_base+256(FP), AX; \
	MOVLQSX      (AX)(CX*4), CX; \
	LEAQ         (R10)(CX*4), R10

// TL2SUM sets d (DI) to node R8's unary plus the messages into it and Y7's
// low lane to min d, as sumRowsAVX2 (k = DX, a multiple of eight). Uses AX,
// CX, BX, SI, R9, R10, Y0, X5.
#define TL2SUM \
	TL2ROWS; \
	MOVQ         R8, SI; \
	IMULQ        DX, SI; \
	SHLQ         $2, SI; \
	ADDQ         u_base+16(FP), SI; \
	MOVQ         d_base+136(FP), DI; \
	MOVL         $0x7f800000, AX; \
	VMOVD        AX, X7; \
	VBROADCASTSS X7, Y7; \
	XORQ         AX, AX; \
	VMOVUPS      (SI)(AX*4), Y0; \
	LEAQ         (R10)(AX*4), R9; \
	MOVQ         BX, CX; \
	TESTQ        CX, CX; \
	JZ           5(PC); \
	VADDPS       (R9), Y0, Y0; \
	LEAQ         (R9)(DX*4), R9; \
	DECQ         CX; \
	JMP          -5(PC); \
	VMOVUPS      Y0, (DI)(AX*4); \
	VMINPS       Y0, Y7, Y7; \
	ADDQ         $8, AX; \
	CMPQ         AX, DX; \
	JL           -13(PC); \
	HMIN(Y7, X7, X5)

// TL2SUM16 is TL2SUM for sixteen labels: both eights summed in one pass over
// the rows, each lane's additions in the same order. Uses AX, CX, BX, SI, DI,
// R10, Y0, Y1, X5.
#define TL2SUM16 \
	TL2ROWS; \
	MOVQ         R8, SI; \
	SHLQ         $6, SI; \
	ADDQ         u_base+16(FP), SI; \
	MOVQ         d_base+136(FP), DI; \
	VMOVUPS      (SI), Y0; \
	VMOVUPS      32(SI), Y1; \
	TESTQ        BX, BX; \
	JZ           6(PC); \
	VADDPS       (R10), Y0, Y0; \
	VADDPS       32(R10), Y1, Y1; \
	ADDQ         $64, R10; \
	DECQ         BX; \
	JMP          -6(PC); \
	VMOVUPS      Y0, (DI); \
	VMOVUPS      Y1, 32(DI); \
	VMINPS       Y1, Y0, Y7; \
	HMIN(Y7, X7, X5)

// TL2EDGE sets tl2send<>'s registers for adjacency entry CX of node R8 (Y12:
// its gamma) and calls it. Uses AX, R9, R10.
#define TL2EDGE \
	MOVQ         aedge_base+232(FP), R10; \
	MOVLQSX      (R10)(CX*4), AX; \
	MOVQ         w_base+64(FP), R10; \
	VMOVSS       (R10)(AX*4), X6; \
	MOVQ         t_base+88(FP), R10; \
	VMOVSS       (R10)(AX*4), X10; \
	MOVQ         msg_base+40(FP), R10; \
	MOVQ         ain_base+256(FP), R9; \
	MOVLQSX      (R9)(CX*4), AX; \
	LEAQ         (R10)(AX*4), BX; \
	MOVQ         aout_base+280(FP), R9; \
	MOVLQSX      (R9)(CX*4), AX; \
	LEAQ         (R10)(AX*4), DI; \
	MOVQ         d_base+136(FP), R11; \
	MOVQ         h_base+160(FP), SI; \
	VMOVAPS      Y12, Y4; \
	CALL         tl2send<>(SB)

// func forwardTruncLinear2AVX2(n, k int, u, msg, w, t, gamma, d, h []float32, astart, nbwd, aedge, ain, aout []int32)
// forwardTruncLinear2 in AVX2, bit for bit: nodes in order, D summed, a
// message to each later neighbour.
TEXT ·forwardTruncLinear2AVX2(SB), NOSPLIT, $24-304
	MOVQ         k+8(FP), DX
	XORQ         R8, R8

tl2fnode:
	CMPQ         R8, n+0(FP)
	JGE          tl2fdone
	CMPQ         DX, $16
	JEQ          tl2fsum16
	TL2SUM
	JMP          tl2fsummed

tl2fsum16:
	TL2SUM16

tl2fsummed:
	MOVQ         gamma_base+112(FP), AX
	VBROADCASTSS (AX)(R8*4), Y12
	MOVQ         astart_base+184(FP), R10
	MOVLQSX      (R10)(R8*4), CX
	MOVLQSX      4(R10)(R8*4), AX
	MOVQ         AX, end-16(SP)
	MOVQ         nbwd_base+208(FP), R10
	MOVLQSX      (R10)(R8*4), AX
	ADDQ         AX, CX // the later neighbours' edges: [CX, end)

tl2fedge:
	CMPQ         CX, end-16(SP)
	JGE          tl2fnext
	MOVQ         CX, a-8(SP)
	TL2EDGE
	MOVQ         k+8(FP), DX
	MOVQ         a-8(SP), CX
	INCQ         CX
	JMP          tl2fedge

tl2fnext:
	INCQ         R8
	JMP          tl2fnode

tl2fdone:
	VZEROUPPER
	RET

// func backwardTruncLinear2AVX2(n, k int, u, msg, w, t, gamma, d, h []float32, astart, nbwd, aedge, ain, aout []int32, dstride int) float64
// backwardTruncLinear2 in AVX2, bit for bit, without the offset: nodes in
// reverse order, D summed, a message to each earlier neighbour, the bound's
// float64 sum in the same order (lb += min D; per message lb += its
// normalisation − γ·min D, the product exact in float64). Node i's D is
// summed at d[i·dstride:]: one scratch for all (0), or each node's kept (k).
TEXT ·backwardTruncLinear2AVX2(SB), NOSPLIT, $32-320
	MOVQ         k+8(FP), DX
	MOVQ         n+0(FP), R8
	MOVQ         d_base+136(FP), AX
	MOVQ         AX, dall-24(SP)
	VXORPD       X13, X13, X13 // the bound

tl2bnode:
	DECQ         R8
	JL           tl2bdone
	MOVQ         R8, AX // node R8's D: d[R8·dstride:]
	IMULQ        dstride+304(FP), AX
	SHLQ         $2, AX
	ADDQ         dall-24(SP), AX
	MOVQ         AX, d_base+136(FP)
	CMPQ         DX, $16
	JEQ          tl2bsum16
	TL2SUM
	JMP          tl2bsummed

tl2bsum16:
	TL2SUM16

tl2bsummed:
	VCVTSS2SD    X7, X14, X14
	VADDSD       X14, X13, X13 // lb += float64(min D)
	MOVQ         gamma_base+112(FP), AX
	VBROADCASTSS (AX)(R8*4), Y12
	VCVTSS2SD    X12, X11, X11
	VMULSD       X14, X11, X14 // float64(γ)·float64(min D)
	MOVQ         astart_base+184(FP), R10
	MOVLQSX      (R10)(R8*4), CX
	MOVQ         nbwd_base+208(FP), R10
	MOVLQSX      (R10)(R8*4), AX
	ADDQ         CX, AX
	MOVQ         AX, end-16(SP) // the earlier neighbours' edges: [CX, end)

tl2bedge:
	CMPQ         CX, end-16(SP)
	JGE          tl2bnode
	MOVQ         CX, a-8(SP)
	TL2EDGE
	VCVTSS2SD    X8, X11, X11
	VSUBSD       X14, X11, X11
	VADDSD       X11, X13, X13
	MOVQ         k+8(FP), DX
	MOVQ         a-8(SP), CX
	INCQ         CX
	JMP          tl2bedge

tl2bdone:
	VMOVSD       X13, ret+312(FP)
	VZEROUPPER
	RET

// func scaleAVX2(dst, src []float32, w float32)
// dst[i] = w·src[i], len(dst) = len(src).
TEXT ·scaleAVX2(SB), NOSPLIT, $0-52
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), DX
	VMOVSS       w+48(FP), X6
	VBROADCASTSS X6, Y6
	MOVQ         DX, R9
	ANDQ         $-8, R9
	XORQ         AX, AX

scalevec:
	CMPQ    AX, R9
	JGE     scalescalar
	VMULPS  (SI)(AX*4), Y6, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     scalevec

scalescalar:
	CMPQ   AX, DX
	JGE    scaledone
	VMULSS (SI)(AX*4), X6, X0
	VMOVSS X0, (DI)(AX*4)
	INCQ   AX
	JMP    scalescalar

scaledone:
	VZEROUPPER
	RET

// Lane numbers 0…7 as floats: the labels of a chunk of eight, less its first.
DATA lanesf8<>+0(SB)/4, $0.0
DATA lanesf8<>+4(SB)/4, $1.0
DATA lanesf8<>+8(SB)/4, $2.0
DATA lanesf8<>+12(SB)/4, $3.0
DATA lanesf8<>+16(SB)/4, $4.0
DATA lanesf8<>+20(SB)/4, $5.0
DATA lanesf8<>+24(SB)/4, $6.0
DATA lanesf8<>+28(SB)/4, $7.0
GLOBL lanesf8<>(SB), RODATA|NOPTR, $32

// TLROW adds to Y0 the row w·min(|a − y|, t) of the labels y of Y1, with Y2 =
// a, Y5 = w and Y6 = t broadcast (pairRow's floats: |a − y| is exact). Uses Y9.
#define TLROW \
	VSUBPS Y1, Y2, Y9; \
	VANDPS Y13, Y9, Y9; \
	VMINPS Y6, Y9, Y9; \
	VMULPS Y5, Y9, Y9

// FIRSTMIN sets AX to the first index of the minimum of the k floats at (R9)
// (k = CX, a multiple of eight): check's argmin. Uses DX, Y7, Y8, X5.
#define FIRSTMIN \
	VMOVAPS      Y15, Y7; \
	XORQ         AX, AX; \
	VMINPS       (R9)(AX*4), Y7, Y7; \
	ADDQ         $8, AX; \
	CMPQ         AX, CX; \
	JL           -3(PC); \
	HMIN(Y7, X7, X5); \
	VBROADCASTSS X7, Y7; \
	XORQ         AX, AX; \
	VCMPPS       $0, (R9)(AX*4), Y7, Y8; \
	VMOVMSKPS    Y8, DX; \
	TESTL        DX, DX; \
	JNZ          3(PC); \
	ADDQ         $8, AX; \
	JMP          -5(PC); \
	BSFL         DX, DX; \
	ADDQ         DX, AX

// func checkTruncLinear2AVX2(lo, hi, k int, u, msg, w, t, gamma, d, p []float32, astart, nbwd, aedge, ain, tail, primal, argmin, cons []int32, tol float32)
// check for the stereo passes' models (trunclinear.go: every edge truncated
// linear, k labels at every node, a multiple of eight), its floats in its
// order: D, the rounded label, the unique argmin and the test of each edge to
// an earlier node, node after node, for the nodes [lo, hi) (every slice
// indexed by node from 0). Values are finite (penalties, not +Inf).
TEXT ·checkTruncLinear2AVX2(SB), NOSPLIT, $64-388
	MOVQ         u_base+24(FP), SI
	MOVQ         msg_base+48(FP), BX
	MOVQ         d_base+144(FP), DI
	MOVQ         astart_base+192(FP), R10
	MOVQ         nbwd_base+216(FP), R11
	MOVQ         aedge_base+240(FP), R12
	MOVQ         ain_base+264(FP), R13
	VMOVUPS      lanesf8<>(SB), Y14
	MOVL         $0x7f800000, AX
	VMOVD        AX, X15
	VBROADCASTSS X15, Y15 // +Inf
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X13
	VBROADCASTSS X13, Y13 // |·|
	MOVQ         lo+0(FP), R8
	MOVQ         k+16(FP), AX
	IMULQ        R8, AX
	LEAQ         (SI)(AX*4), SI // node lo's unary

cnode:
	CMPQ    R8, hi+8(FP)
	JGE     cdone
	MOVLQSX (R10)(R8*4), CX
	MOVQ    CX, a0-8(SP)
	MOVLQSX 4(R10)(R8*4), DX
	SUBQ    CX, DX
	MOVQ    DX, rows-16(SP)
	XORQ    AX, AX
	TESTQ   DX, DX
	JZ      2(PC)
	MOVLQSX (R13)(CX*4), AX
	MOVQ    AX, blk-24(SP) // the block's offset in msg

	// D = u + the block's rows, into d.
	XORQ AX, AX

cdchunk:
	VMOVUPS (SI)(AX*4), Y0
	MOVQ    blk-24(SP), CX
	ADDQ    AX, CX
	LEAQ    (BX)(CX*4), CX
	MOVQ    rows-16(SP), DX
	MOVQ    k+16(FP), R9
	SHLQ    $2, R9

cdrow:
	TESTQ  DX, DX
	JZ     cdstore
	VADDPS (CX), Y0, Y0
	ADDQ   R9, CX
	DECQ   DX
	JMP    cdrow

cdstore:
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, k+16(FP)
	JL      cdchunk

	// The rounded label: u + the rows to the earlier nodes' labels + the
	// messages from later nodes, into p; its first minimum.
	XORQ AX, AX

cpchunk:
	MOVQ       AX, c-32(SP)
	VMOVUPS    (SI)(AX*4), Y0
	VCVTSI2SSQ AX, X1, X1
	VBROADCASTSS X1, Y1
	VADDPS     Y14, Y1, Y1 // the chunk's labels
	MOVQ       a0-8(SP), CX
	MOVLQSX    (R11)(R8*4), DX
	ADDQ       CX, DX

cpearlier:
	CMPQ         CX, DX
	JGE          cplater
	MOVLQSX      (R12)(CX*4), AX // e
	MOVQ         w_base+72(FP), R9
	VBROADCASTSS (R9)(AX*4), Y5
	MOVQ         t_base+96(FP), R9
	VBROADCASTSS (R9)(AX*4), Y6
	MOVQ         tail_base+288(FP), R9
	MOVLQSX      (R9)(AX*4), AX
	MOVQ         primal_base+312(FP), R9
	MOVLQSX      (R9)(AX*4), AX
	VCVTSI2SSQ AX, X2, X2
	VBROADCASTSS X2, Y2
	TLROW
	VADDPS       Y9, Y0, Y0
	INCQ         CX
	JMP          cpearlier

cplater:
	MOVQ    rows-16(SP), AX
	MOVLQSX (R11)(R8*4), CX
	SUBQ    CX, AX          // rows from later nodes, from row CX
	JLE     cpstore
	MOVQ    k+16(FP), R9
	IMULQ   R9, CX
	ADDQ    blk-24(SP), CX
	ADDQ    c-32(SP), CX
	LEAQ    (BX)(CX*4), CX
	SHLQ    $2, R9

cplaterrow:
	VADDPS (CX), Y0, Y0
	ADDQ   R9, CX
	DECQ   AX
	JNZ    cplaterrow

cpstore:
	MOVQ    c-32(SP), AX
	MOVQ    p_base+168(FP), R9
	VMOVUPS Y0, (R9)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, k+16(FP)
	JL      cpchunk
	MOVQ    k+16(FP), CX
	FIRSTMIN
	MOVQ    primal_base+312(FP), R9
	MOVL    AX, (R9)(R8*4)

	// The unique argmin of D: its first minimum l, unique when no other
	// label is within tol·max(1, |D(l)|).
	MOVQ         DI, R9
	FIRSTMIN
	MOVQ         AX, l-40(SP)
	VMOVSS       (DI)(AX*4), X3
	VANDPS       X13, X3, X10
	MOVL         $0x3f800000, DX // 1
	VMOVD        DX, X11
	VMAXSS       X10, X11, X10
	VMULSS       tol+384(FP), X10, X10
	VBROADCASTSS X10, Y10
	VBROADCASTSS X3, Y3 // D(l)
	XORQ         AX, AX
	XORQ         R9, R9

cnear:
	VMOVUPS   (DI)(AX*4), Y0
	VSUBPS    Y3, Y0, Y0
	VCMPPS    $2, Y10, Y0, Y0
	VMOVMSKPS Y0, DX
	POPCNTL   DX, DX
	ADDQ      DX, R9
	ADDQ      $8, AX
	CMPQ      AX, k+16(FP)
	JL        cnear
	MOVQ      l-40(SP), AX
	CMPQ      R9, $1
	JEQ       2(PC)
	MOVQ      $-1, AX
	MOVQ      argmin_base+336(FP), R9
	MOVL      AX, (R9)(R8*4)
	MOVQ      cons_base+360(FP), R9
	MOVL      AX, (R9)(R8*4)
	TESTQ     AX, AX
	JL        cnext

	// The edges to earlier nodes with a label: h = γ·(D − D(l)) − m_{j→i},
	// tight when h(l) + θ(x_j, l) is within the tolerance of min h + θ(x_j, ·).
	MOVQ         gamma_base+120(FP), R9
	VBROADCASTSS (R9)(R8*4), Y4
	MOVQ         a0-8(SP), CX
	MOVLQSX      (R11)(R8*4), DX
	ADDQ         CX, DX
	MOVQ         DX, a1-48(SP)

ctedge:
	CMPQ         CX, a1-48(SP)
	JGE          cnext
	MOVQ         CX, a-56(SP)
	MOVLQSX      (R12)(CX*4), AX // e
	MOVQ         w_base+72(FP), R9
	VBROADCASTSS (R9)(AX*4), Y5
	MOVQ         t_base+96(FP), R9
	VBROADCASTSS (R9)(AX*4), Y6
	MOVQ         tail_base+288(FP), R9
	MOVLQSX      (R9)(AX*4), AX
	MOVQ         AX, j-64(SP)
	MOVQ         argmin_base+336(FP), R9
	MOVLQSX      (R9)(AX*4), AX
	TESTQ        AX, AX
	JL           ctnext
	CMPQ         AX, l-40(SP)
	JEQ          ctnext // the same label: tight (tight)
	VCVTSI2SSQ AX, X2, X2
	VBROADCASTSS X2, Y2 // x_j
	MOVLQSX      (R13)(CX*4), CX
	LEAQ         (BX)(CX*4), CX  // m_{j→i}
	VMOVAPS      Y15, Y7         // best
	XORQ         AX, AX

ctchunk:
	VCVTSI2SSQ AX, X1, X1
	VBROADCASTSS X1, Y1
	VADDPS       Y14, Y1, Y1
	VMOVUPS      (DI)(AX*4), Y0
	VSUBPS       Y3, Y0, Y0
	VMULPS       Y4, Y0, Y0
	VSUBPS       (CX)(AX*4), Y0, Y0 // h
	TLROW
	VADDPS       Y9, Y0, Y0
	VMINPS       Y0, Y7, Y7
	ADDQ         $8, AX
	CMPQ         AX, k+16(FP)
	JL           ctchunk
	HMIN(Y7, X7, X8)

	// val = h(l) + θ(x_j, l), in the same floats.
	MOVQ      l-40(SP), AX
	VMOVSS    (DI)(AX*4), X0
	VSUBSS    X3, X0, X0
	VMULSS    X4, X0, X0
	VSUBSS    (CX)(AX*4), X0, X0
	VCVTSI2SSQ AX, X1, X1
	VSUBSS    X1, X2, X9
	VANDPS    X13, X9, X9
	VMINSS    X6, X9, X9
	VMULSS    X5, X9, X9
	VADDSS    X9, X0, X0 // val
	VSUBSS    X7, X0, X9 // val − best
	VANDPS    X13, X0, X10
	MOVL      $0x3f800000, DX
	VMOVD      DX, X11
	VMAXSS    X10, X11, X10
	VMULSS    tol+384(FP), X10, X10
	VCMPSS    $2, X10, X9, X9
	VMOVD     X9, DX
	TESTL     DX, DX
	JNZ       ctnext
	MOVQ      cons_base+360(FP), R9
	MOVL      $-1, (R9)(R8*4)
	MOVQ      j-64(SP), AX
	MOVL      $-1, (R9)(AX*4)

ctnext:
	MOVQ a-56(SP), CX
	INCQ CX
	JMP  ctedge

cnext:
	MOVQ k+16(FP), AX
	LEAQ (SI)(AX*4), SI
	INCQ R8
	JMP  cnode

cdone:
	VZEROUPPER
	RET

// NANLANES16 sets AX to the mask of the lanes where a or b holds a NaN and
// the flags to its test (ZF: none). Uses t and u.
#define NANLANES16(a, b, t, u) \
	VCMPPS       $3, a, a, t; \
	VCMPPS       $3, b, b, u; \
	VORPS        u, t, t; \
	VMOVMSKPS    t, AX; \
	TESTL        AX, AX

// func minTwo16AVX2(d []float32) (l int32, best, next float32, ok bool)
// For sixteen labels: best = min d, l its first label, next the least of the
// others (best again when another label ties it); ok false when d holds a NaN
// (the caller's loop decides those).
TEXT ·minTwo16AVX2(SB), NOSPLIT, $0-37
	MOVQ         d_base+0(FP), SI
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	NANLANES16(Y0, Y1, Y2, Y3)
	JNZ          mt16nan
	VMINPS       Y1, Y0, Y2
	HMIN(Y2, X2, X3)
	VBROADCASTSS X2, Y2
	VCMPPS       $0, Y2, Y0, Y3 // the lanes equal to the minimum
	VCMPPS       $0, Y2, Y1, Y4
	VMOVMSKPS    Y3, AX
	VMOVMSKPS    Y4, BX
	SHLL         $8, BX
	ORL          BX, AX
	BSFL         AX, CX
	MOVL         CX, l+24(FP)
	VMOVSS       X2, best+28(FP)
	MOVL         AX, DX
	DECL         DX
	ANDL         AX, DX
	JNZ          mt16tie
	MOVL         $0x7f800000, DX
	VMOVD        DX, X5
	VBROADCASTSS X5, Y5
	VBLENDVPS    Y3, Y5, Y0, Y0 // the minimum's lane becomes +Inf
	VBLENDVPS    Y4, Y5, Y1, Y1
	VMINPS       Y1, Y0, Y0
	HMIN(Y0, X0, X6)
	VMOVSS       X0, next+32(FP)
	JMP          mt16ok

mt16tie:
	VMOVSS       X2, next+32(FP)

mt16ok:
	MOVB         $1, ok+36(FP)
	VZEROUPPER
	RET

mt16nan:
	MOVB         $0, ok+36(FP)
	VZEROUPPER
	RET

// func tightMin16AVX2(d, fwd, r []float32, dmin, gamma float32) (best float32, ok bool)
// For sixteen labels: best = min_y γ·(d[y] − dmin) − fwd[y] + r[y], each
// operation rounded as the loop rounds it; ok false when a sum is NaN (the
// caller's loop decides those).
TEXT ·tightMin16AVX2(SB), NOSPLIT, $0-85
	MOVQ         d_base+0(FP), SI
	MOVQ         fwd_base+24(FP), DI
	MOVQ         r_base+48(FP), R8
	VMOVSS       dmin+72(FP), X6
	VBROADCASTSS X6, Y6
	VMOVSS       gamma+76(FP), X7
	VBROADCASTSS X7, Y7
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VSUBPS       Y6, Y0, Y0
	VSUBPS       Y6, Y1, Y1
	VMULPS       Y0, Y7, Y0
	VMULPS       Y1, Y7, Y1
	VSUBPS       (DI), Y0, Y0
	VSUBPS       32(DI), Y1, Y1
	VADDPS       (R8), Y0, Y0
	VADDPS       32(R8), Y1, Y1
	NANLANES16(Y0, Y1, Y2, Y3)
	JNZ          tm16nan
	VMINPS       Y1, Y0, Y0
	HMIN(Y0, X0, X2)
	VMOVSS       X0, best+80(FP)
	MOVB         $1, ok+84(FP)
	VZEROUPPER
	RET

tm16nan:
	MOVB         $0, ok+84(FP)
	VZEROUPPER
	RET
