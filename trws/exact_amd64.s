//go:build !purego

#include "textflag.h"

// The float64 table loops of the exact passes (polish) and the certificate's
// check, four labels an instruction. A minimum is taken as fmin takes it
// (b < a ? b : a, VMINPD's rule with b the first source), each clamp as fmin(t,
// big), each sum as one addition: the Go loops' floats, bit for bit.

// func minPlus64FromTailAVX2(h, out, tab []float64, big float64)
// out[y] = min_x h[x] + fmin(tab[x*n + y], big), n = len(out), for y below n
// rounded down to a multiple of four; the caller does the rest. The minima stay
// in registers while the rows go by (sixteen labels, then four), so out is
// stored once.
TEXT ·minPlus64FromTailAVX2(SB), NOSPLIT, $0-80
	MOVQ         h_base+0(FP), SI
	MOVQ         h_len+8(FP), CX
	MOVQ         out_base+24(FP), DI
	MOVQ         out_len+32(FP), DX
	MOVQ         tab_base+48(FP), BX
	VBROADCASTSD big+72(FP), Y14
	LEAQ         (DX*8), R10 // bytes in a row
	MOVQ         DX, R8
	ANDQ         $-16, R8
	MOVQ         DX, R9
	ANDQ         $-4, R9
	MOVQ         $0x7ff0000000000000, AX // +Inf
	VMOVQ        AX, X15
	VBROADCASTSD X15, Y15
	XORQ         AX, AX

tail16:
	CMPQ    AX, R8
	JGE     tail4
	VMOVAPD Y15, Y0
	VMOVAPD Y15, Y1
	VMOVAPD Y15, Y2
	VMOVAPD Y15, Y3
	LEAQ    (BX)(AX*8), R11
	XORQ    R12, R12

tail16rows:
	CMPQ         R12, CX
	JGE          tail16store
	VBROADCASTSD (SI)(R12*8), Y4
	VMINPD       (R11), Y14, Y5
	VMINPD       32(R11), Y14, Y6
	VMINPD       64(R11), Y14, Y7
	VMINPD       96(R11), Y14, Y8
	VADDPD       Y5, Y4, Y5
	VADDPD       Y6, Y4, Y6
	VADDPD       Y7, Y4, Y7
	VADDPD       Y8, Y4, Y8
	VMINPD       Y0, Y5, Y0
	VMINPD       Y1, Y6, Y1
	VMINPD       Y2, Y7, Y2
	VMINPD       Y3, Y8, Y3
	ADDQ         R10, R11
	INCQ         R12
	JMP          tail16rows

tail16store:
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	VMOVUPD Y2, 64(DI)(AX*8)
	VMOVUPD Y3, 96(DI)(AX*8)
	ADDQ    $16, AX
	JMP     tail16

tail4:
	CMPQ    AX, R9
	JGE     taildone
	VMOVAPD Y15, Y0
	LEAQ    (BX)(AX*8), R11
	XORQ    R12, R12

tail4rows:
	CMPQ         R12, CX
	JGE          tail4store
	VBROADCASTSD (SI)(R12*8), Y4
	VMINPD       (R11), Y14, Y5
	VADDPD       Y5, Y4, Y5
	VMINPD       Y0, Y5, Y0
	ADDQ         R10, R11
	INCQ         R12
	JMP          tail4rows

tail4store:
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     tail4

taildone:
	VZEROUPPER
	RET

// func minPlus64FromHeadAVX2(h, out, tab []float64, big float64)
// out[y] = min_x h[x] + fmin(tab[y*m + x], big), m = len(h), over x below m
// rounded down to a multiple of four (+Inf when that is none); the caller takes
// the rest of each row. Two chains of eight labels, then four, then the four
// lanes' minimum.
TEXT ·minPlus64FromHeadAVX2(SB), NOSPLIT, $0-80
	MOVQ         h_base+0(FP), SI
	MOVQ         h_len+8(FP), CX
	MOVQ         out_base+24(FP), DI
	MOVQ         out_len+32(FP), DX
	MOVQ         tab_base+48(FP), BX
	VBROADCASTSD big+72(FP), Y14
	LEAQ         (CX*8), R10 // bytes in a row
	MOVQ         CX, R8
	ANDQ         $-4, R8
	MOVQ         CX, R9
	ANDQ         $-8, R9
	MOVQ         $0x7ff0000000000000, AX // +Inf
	VMOVQ        AX, X15
	VBROADCASTSD X15, Y15
	XORQ         AX, AX

headrows:
	CMPQ    AX, DX
	JGE     headdone
	VMOVAPD Y15, Y0
	VMOVAPD Y15, Y1
	XORQ    R12, R12

head8:
	CMPQ   R12, R9
	JGE    head4
	VMINPD (BX)(R12*8), Y14, Y5
	VMINPD 32(BX)(R12*8), Y14, Y6
	VADDPD (SI)(R12*8), Y5, Y5
	VADDPD 32(SI)(R12*8), Y6, Y6
	VMINPD Y0, Y5, Y0
	VMINPD Y1, Y6, Y1
	ADDQ   $8, R12
	JMP    head8

head4:
	CMPQ   R12, R8
	JGE    headreduce
	VMINPD (BX)(R12*8), Y14, Y5
	VADDPD (SI)(R12*8), Y5, Y5
	VMINPD Y0, Y5, Y0

headreduce:
	VMINPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMINPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VMINPD       X1, X0, X0
	VMOVSD       X0, (DI)(AX*8)
	ADDQ         R10, BX
	INCQ         AX
	JMP          headrows

headdone:
	VZEROUPPER
	RET

// func extentAVX2(t []float64) (lo, hi float64)
// lo = min t[i], hi = max of the t[i] below +Inf, over i below len(t) rounded
// down to a multiple of eight (lo +Inf, hi −Inf when that is none); the caller
// takes the rest. Two chains of four lanes each.
TEXT ·extentAVX2(SB), NOSPLIT, $0-40
	MOVQ         t_base+0(FP), SI
	MOVQ         t_len+8(FP), CX
	ANDQ         $-8, CX
	MOVQ         $0x7ff0000000000000, AX // +Inf
	VMOVQ        AX, X15
	VBROADCASTSD X15, Y15
	MOVQ         $0xfff0000000000000, AX // −Inf
	VMOVQ        AX, X14
	VBROADCASTSD X14, Y14
	VMOVAPD      Y15, Y0 // the minima
	VMOVAPD      Y15, Y1
	VMOVAPD      Y14, Y2 // the finite maxima
	VMOVAPD      Y14, Y3
	XORQ         AX, AX

extent8:
	CMPQ      AX, CX
	JGE       extentreduce
	VMOVUPD   (SI)(AX*8), Y4
	VMOVUPD   32(SI)(AX*8), Y5
	VMINPD    Y4, Y0, Y0
	VMINPD    Y5, Y1, Y1
	VCMPPD    $0, Y15, Y4, Y6 // +Inf lanes
	VCMPPD    $0, Y15, Y5, Y7
	VBLENDVPD Y6, Y14, Y4, Y4 // −Inf there
	VBLENDVPD Y7, Y14, Y5, Y5
	VMAXPD    Y4, Y2, Y2
	VMAXPD    Y5, Y3, Y3
	ADDQ      $8, AX
	JMP       extent8

extentreduce:
	VMINPD       Y1, Y0, Y0
	VMAXPD       Y3, Y2, Y2
	VEXTRACTF128 $1, Y0, X1
	VMINPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VMINPD       X1, X0, X0
	VEXTRACTF128 $1, Y2, X3
	VMAXPD       X3, X2, X2
	VPERMILPD    $1, X2, X3
	VMAXPD       X3, X2, X2
	VMOVSD       X0, lo+24(FP)
	VMOVSD       X2, hi+32(FP)
	VZEROUPPER
	RET
