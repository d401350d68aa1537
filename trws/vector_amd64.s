//go:build !purego

#include "textflag.h"

// func minPlusFromTailAVX2(h, out, tab []float32)
// For each row x: out[y] = min(out[y], h[x] + tab[x*n + y]), n = len(out).
TEXT ·minPlusFromTailAVX2(SB), NOSPLIT, $0-72
	MOVQ h_base+0(FP), SI
	MOVQ h_len+8(FP), CX
	MOVQ out_base+24(FP), DI
	MOVQ out_len+32(FP), DX
	MOVQ tab_base+48(FP), BX
	MOVQ DX, R8
	ANDQ $-16, R8 // labels done sixteen at a time
	MOVQ DX, R9
	ANDQ $-8, R9 // then eight
	LEAQ (DX*4), R10 // bytes in a row

tailrow:
	TESTQ CX, CX
	JZ    taildone
	VBROADCASTSS (SI), Y0
	XORQ  AX, AX

tail16:
	CMPQ    AX, R8
	JGE     tail8
	VADDPS  (BX)(AX*4), Y0, Y1
	VADDPS  32(BX)(AX*4), Y0, Y2
	VMINPS  (DI)(AX*4), Y1, Y1
	VMINPS  32(DI)(AX*4), Y2, Y2
	VMOVUPS Y1, (DI)(AX*4)
	VMOVUPS Y2, 32(DI)(AX*4)
	ADDQ    $16, AX
	JMP     tail16

tail8:
	CMPQ    AX, R9
	JGE     tail1
	VADDPS  (BX)(AX*4), Y0, Y1
	VMINPS  (DI)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX

tail1:
	CMPQ   AX, DX
	JGE    tailnext
	VADDSS (BX)(AX*4), X0, X1
	VMINSS (DI)(AX*4), X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ   AX
	JMP    tail1

tailnext:
	ADDQ R10, BX
	ADDQ $4, SI
	DECQ CX
	JMP  tailrow

taildone:
	VZEROUPPER
	RET

// func minPlusFromHeadAVX2(h, out, tab []float32)
// For each row x: out[x] = min_y h[y] + tab[x*n + y], n = len(h).
TEXT ·minPlusFromHeadAVX2(SB), NOSPLIT, $0-72
	MOVQ h_base+0(FP), SI
	MOVQ h_len+8(FP), DX
	MOVQ out_base+24(FP), DI
	MOVQ out_len+32(FP), CX
	MOVQ tab_base+48(FP), BX
	MOVQ DX, R8
	ANDQ $-16, R8
	MOVQ DX, R9
	ANDQ $-8, R9
	LEAQ (DX*4), R10
	MOVL $0x7f800000, AX // +Inf
	MOVL AX, X5
	VBROADCASTSS X5, Y5

headrow:
	TESTQ   CX, CX
	JZ      headdone
	VMOVAPS Y5, Y2 // two running minima: one chain of VMINPS is latency-bound
	VMOVAPS Y5, Y3
	XORQ    AX, AX

head16:
	CMPQ    AX, R8
	JGE     head8
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VADDPS  (BX)(AX*4), Y0, Y0
	VADDPS  32(BX)(AX*4), Y1, Y1
	VMINPS  Y0, Y2, Y2
	VMINPS  Y1, Y3, Y3
	ADDQ    $16, AX
	JMP     head16

head8:
	CMPQ    AX, R9
	JGE     headreduce
	VMOVUPS (SI)(AX*4), Y0
	VADDPS  (BX)(AX*4), Y0, Y0
	VMINPS  Y0, Y2, Y2
	ADDQ    $8, AX

headreduce:
	VMINPS       Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VMINPS       X3, X2, X2
	VMOVHLPS     X2, X2, X3
	VMINPS       X3, X2, X2
	VSHUFPS      $0x55, X2, X2, X3
	VMINSS       X3, X2, X2

head1:
	CMPQ   AX, DX
	JGE    headstore
	VMOVSS (SI)(AX*4), X0
	VADDSS (BX)(AX*4), X0, X0
	VMINSS X0, X2, X2
	INCQ   AX
	JMP    head1

headstore:
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
	MOVL AX, X7
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
	VEXTRACTF128 $1, Y7, X6
	VMINPS       X6, X7, X7
	VMOVHLPS     X7, X7, X6
	VMINPS       X6, X7, X7
	VSHUFPS      $0x55, X7, X7, X6
	VMINSS       X6, X7, X7

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
	MOVSS        gamma+72(FP), X6
	VBROADCASTSS X6, Y6
	MOVQ         DX, R9
	ANDQ         $-8, R9
	MOVL         $0x7f800000, AX
	MOVL         AX, X7
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
	VEXTRACTF128 $1, Y7, X5
	VMINPS       X5, X7, X7
	VMOVHLPS     X7, X7, X5
	VMINPS       X5, X7, X7
	VSHUFPS      $0x55, X7, X7, X5
	VMINSS       X5, X7, X7

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
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	XORQ         AX, AX

normvec:
	CMPQ   AX, R9
	JGE    normreduce
	VMINPS (DI)(AX*4), Y7, Y7
	ADDQ   $8, AX
	JMP    normvec

normreduce:
	VEXTRACTF128 $1, Y7, X5
	VMINPS       X5, X7, X7
	VMOVHLPS     X7, X7, X5
	VMINPS       X5, X7, X7
	VSHUFPS      $0x55, X7, X7, X5
	VMINSS       X5, X7, X7

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

// func truncLinear2AVX2(h, out []float32, w, top float32)
// out[y] = min(h[y], top, min(h[y−1], h[y+1]) + w) for 0 < y < len(h)−1, eight
// labels at a time; the last eight overlap the ones before when len(h)−2 is not a
// multiple of eight. len(h) ≥ 10.
TEXT ·truncLinear2AVX2(SB), NOSPLIT, $0-56
	MOVQ         h_base+0(FP), SI
	MOVQ         h_len+8(FP), DX
	MOVQ         out_base+24(FP), DI
	MOVSS        w+48(FP), X6
	VBROADCASTSS X6, Y6
	MOVSS        top+52(FP), X7
	VBROADCASTSS X7, Y7
	LEAQ         -1(DX), R9
	MOVQ         $1, AX

tl2loop:
	LEAQ    8(AX), R10
	CMPQ    R10, R9
	JG      tl2last
	VMOVUPS -4(SI)(AX*4), Y0
	VMINPS  4(SI)(AX*4), Y0, Y0
	VADDPS  Y6, Y0, Y0
	VMINPS  (SI)(AX*4), Y0, Y0
	VMINPS  Y7, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	MOVQ    R10, AX
	JMP     tl2loop

tl2last:
	CMPQ    AX, R9
	JGE     tl2done
	LEAQ    -9(DX), AX
	VMOVUPS -4(SI)(AX*4), Y0
	VMINPS  4(SI)(AX*4), Y0, Y0
	VADDPS  Y6, Y0, Y0
	VMINPS  (SI)(AX*4), Y0, Y0
	VMINPS  Y7, Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)

tl2done:
	VZEROUPPER
	RET
