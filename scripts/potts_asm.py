#!/usr/bin/env python3
# Writes trws/potts_amd64.s: the uniform Potts passes (forward, forward with
# the check's rounding, backward with the check's unique argmins and edge
# tests) and the check's rounding in AVX2 for K = 2, 4, 8 and in AVX-512 (YMM
# under an opmask) for K = 3, 5, 6, 7, one shape for all, as the Go passes of
# potts*.go do them. Run from anywhere: python3 scripts/potts_asm.py; then
# go test ./trws -run AssemblyPotts.
import os
K_PARAMS = {
    8: dict(R='Y', stride=32, mask=None),
    4: dict(R='X', stride=16, mask='$15'),
    2: dict(R='X', stride=8, mask='$3'),
}
# K = 3, 5, 6, 7 (AVX-512VL): a YMM register a node, its first k lanes loaded
# and stored under the opmask K1, the others +Inf (Y15) from the loads on, so
# that sums, minima and messages there stay +Inf and are never stored.
for _k in (3, 5, 6, 7):
    K_PARAMS[_k] = dict(R='Y', stride=4 * _k, mask=f'${(1 << _k) - 1}', opmask=True)

def ops(k):
    p = K_PARAMS[k]
    R = p['R']
    def reg(n):
        return f'{R}{n}'
    om = p.get('opmask', False)
    def load(mem, dst):
        if k == 2:
            return [f'VMOVSD       {mem}, {dst}']
        if om:
            return [f'VMOVAPS      Y15, {dst}', f'VMOVUPS      {mem}, K1, {dst}']
        return [f'VMOVUPS      {mem}, {dst}']
    def addm(mem, dst, tmp):
        if k == 2:
            return [f'VMOVSD       {mem}, {tmp}', f'VADDPS       {tmp}, {dst}, {dst}']
        if om:
            return [f'VADDPS       {mem}, {dst}, K1, {dst}']
        return [f'VADDPS       {mem}, {dst}, {dst}']
    def subm(mem, dst, tmp):
        if k == 2:
            return [f'VMOVSD       {mem}, {tmp}', f'VSUBPS       {tmp}, {dst}, {dst}']
        if om:
            return [f'VSUBPS       {mem}, {dst}, K1, {dst}']
        return [f'VSUBPS       {mem}, {dst}, {dst}']
    def store(src, mem):
        if k == 2:
            return [f'VMOVSD       {src}, {mem}']
        if om:
            return [f'VMOVUPS      {src}, K1, {mem}']
        return [f'VMOVUPS      {src}, {mem}']
    def hmin(y, n, t):
        # leaves min of the k lanes of register number n in its low lane
        x, tx = f'X{n}', f'X{t}'
        out = []
        if R == 'Y':
            out += [f'VEXTRACTF128 $1, Y{n}, {tx}', f'VMINPS       {tx}, {x}, {x}']
        if k >= 3:
            out += [f'VMOVHLPS     {x}, {x}, {tx}', f'VMINPS       {tx}, {x}, {x}']
        out += [f'VSHUFPS      $0x55, {x}, {x}, {tx}', f'VMINSS       {tx}, {x}, {x}']
        return out
    def masked(r):
        return [f'ANDL         {p["mask"]}, {r}'] if p['mask'] else []
    return p, reg, load, addm, subm, store, hmin, masked

def sfx(k):
    return 'AVX512' if K_PARAMS[k].get('opmask') else 'AVX2'

def setup(k):
    # K = 3, 5, 6, 7: the opmask of the first k lanes (K1) and +Inf (Y15).
    if not K_PARAMS[k].get('opmask'):
        return []
    return [f'MOVL         {K_PARAMS[k]["mask"]}, AX', 'KMOVW        AX, K1', 'MOVL         $0x7f800000, AX', 'VMOVD        AX, X15', 'VBROADCASTSS X15, Y15 // +Inf']

def send(k):
    p, reg, load, addm, subm, store, hmin, masked = ops(k)
    out = [f'VMULPS       {reg(4)}, {reg(0)}, {reg(1)}',
           'MOVLQSX      (R13)(CX*4), AX']
    out += subm('(BX)(AX*4)', reg(1), reg(5))
    out += [f'VMOVAPS      {reg(1)}, {reg(2)}']
    out += hmin(reg(2), 2, 3)
    out += [f'VBROADCASTSS X2, {reg(3)}', f'VSUBPS       {reg(3)}, {reg(1)}, {reg(1)}',
            'MOVLQSX      (R12)(CX*4), AX', f'VBROADCASTSS (DI)(AX*4), {reg(3)}',
            f'VMINPS       {reg(1)}, {reg(3)}, {reg(5)}', 'MOVLQSX      (R9)(CX*4), AX']
    out += store(reg(5), '(BX)(AX*4)')
    return out

def nodesum(k, pfx):
    p, reg, load, addm, subm, store, hmin, masked = ops(k)
    out = load('(SI)', reg(0))
    out += ['MOVLQSX      (R10)(R8*4), CX', 'MOVLQSX      4(R10)(R8*4), DX', 'MOVQ         DX, AX',
            'SUBQ         CX, AX', f'JLE          {pfx}sum', 'MOVLQSX      (R13)(CX*4), CX', 'LEAQ         (BX)(CX*4), CX',
            '', f'{pfx}row:']
    out += addm('(CX)', reg(0), reg(5))
    out += [f'ADDQ         ${p["stride"]}, CX', 'DECQ         AX', f'JNZ          {pfx}row', '', f'{pfx}sum:']
    return out

ARGS = 'MOVQ         w_base+{w}(FP), DI\n\tMOVQ         msg_base+{msg}(FP), BX\n\tMOVQ         astart_base+{astart}(FP), R10\n\tMOVQ         nbwd_base+{nbwd}(FP), R11\n\tMOVQ         aedge_base+{aedge}(FP), R12\n\tMOVQ         ain_base+{ain}(FP), R13'

def fmt(lines):
    res = []
    for l in lines:
        if l == '' or l.endswith(':'):
            res.append(l)
        else:
            res.append('\t' + l)
    return '\n'.join(res) + '\n'

def forward(k):
    p, reg, load, addm, subm, store, hmin, masked = ops(k)
    f = f'f{k}'
    out = [f'// func forwardPotts{k}{sfx(k)}(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout []int32)',
           f'// forwardPotts{k} in assembly, bit for bit.',
           f'TEXT ·forwardPotts{k}{sfx(k)}(SB), NOSPLIT, $0-224']
    body = setup(k) + ['XORQ         R8, R8', 'MOVQ         u_base+8(FP), SI']
    body += ARGS.format(w=32, msg=56, astart=104, nbwd=128, aedge=152, ain=176).replace('\t', '').split('\n')
    body += ['MOVQ         aout_base+200(FP), R9', '', f'{f}node:', 'CMPQ         R8, n+0(FP)', f'JGE          {f}done']
    body += nodesum(k, f)
    body += ['MOVQ         gamma_base+80(FP), AX', f'VBROADCASTSS (AX)(R8*4), {reg(4)}',
             'MOVLQSX      (R10)(R8*4), CX', 'MOVLQSX      (R11)(R8*4), AX',
             'ADDQ         AX, CX // the later neighbours\' edges: [CX, DX)', '', f'{f}edge:',
             'CMPQ         CX, DX', f'JGE          {f}next']
    body += send(k)
    body += ['INCQ         CX', f'JMP          {f}edge', '', f'{f}next:', f'ADDQ         ${p["stride"]}, SI', 'INCQ         R8',
             f'JMP          {f}node', '', f'{f}done:', 'VZEROUPPER', 'RET']
    return '\n'.join(out) + '\n' + fmt(body)

def backward(k):
    p, reg, load, addm, subm, store, hmin, masked = ops(k)
    b = f'b{k}'
    out = [f'// func backwardPotts{k}{sfx(k)}(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, head, argmin, cons []int32, tol float32, check bool) float64',
           f'// backwardPotts{k} in assembly, bit for bit, without the offset: the bound\'s float64',
           '// sum in the same order; with check, D\'s unique argmin (within tol·max(1,',
           '// |min D|)) or −1 in argmin and cons, and testEdges\' test of the edges to',
           '// later nodes (labelled already) across a change of label.',
           f'TEXT ·backwardPotts{k}{sfx(k)}(SB), NOSPLIT, $64-312']
    body = setup(k) + ['MOVQ         n+0(FP), R8', 'MOVQ         u_base+8(FP), SI', 'MOVQ         R8, AX', f'IMULQ        ${p["stride"]}, AX', 'ADDQ         AX, SI']
    body += ARGS.format(w=32, msg=56, astart=104, nbwd=128, aedge=152, ain=176).replace('\t', '').split('\n')
    body += ['MOVQ         aout_base+200(FP), R9', 'VXORPD       X8, X8, X8 // the bound', f'VMOVDQU      lanes8<>(SB), {reg(14)}', '', f'{b}node:', 'DECQ         R8', f'JL           {b}done',
             f'SUBQ         ${p["stride"]}, SI']
    body += nodesum(k, b)
    body += [f'VMOVAPS      {reg(0)}, {reg(6)}'] + hmin(reg(6), 6, 7)
    body += ['VCVTSS2SD    X6, X9, X9', 'VADDSD       X9, X8, X8 // lb += float64(min D)', 'CMPB         check+300(FP), $0', f'JEQ          {b}send', '',
             '// D\'s unique argmin: the lanes with D − min D ≤ tol·max(1, |min D|).',
             'MOVL         $0x7fffffff, AX', 'VMOVD        AX, X10', 'VANDPS       X10, X6, X10', 'MOVL         $0x3f800000, AX // 1',
             'VMOVD        AX, X11', 'VMAXSS       X10, X11, X10', 'VMULSS       tol+296(FP), X10, X10', f'VBROADCASTSS X10, {reg(10)}',
             f'VBROADCASTSS X6, {reg(11)}', f'VSUBPS       {reg(11)}, {reg(0)}, {reg(11)}', f'VCMPPS       $2, {reg(10)}, {reg(11)}, {reg(11)}',
             f'VMOVMSKPS    {reg(11)}, AX'] + masked('AX') + [
             'MOVL         $-1, CX', 'TESTL        AX, AX', f'JZ           {b}store // none (a NaN)', 'LEAL         -1(AX), DX',
             'TESTL        AX, DX', f'JNZ          {b}store // two or more', 'BSFL         AX, CX', '', f'{b}store:',
             'MOVQ         argmin_base+248(FP), AX', 'MOVL         CX, (AX)(R8*4)', 'MOVQ         cons_base+272(FP), AX', 'MOVL         CX, (AX)(R8*4)', ''] + crossing(k) + ['',
             f'{b}send:', 'MOVQ         gamma_base+80(FP), AX', f'VBROADCASTSS (AX)(R8*4), {reg(4)}', 'VMULSS       X4, X6, X13 // γ·min D',
             'MOVLQSX      (R10)(R8*4), CX', 'MOVLQSX      (R11)(R8*4), DX', 'ADDQ         CX, DX // the earlier neighbours\' edges: [CX, DX)', '',
             f'{b}edge:', 'CMPQ         CX, DX', f'JGE          {b}node']
    body += send(k)
    body += ['VSUBSS       X13, X2, X12', 'VCVTSS2SD    X12, X12, X12', 'VADDSD       X12, X8, X8 // lb += float64(min h − γ·min D)',
             'INCQ         CX', f'JMP          {b}edge', '', f'{b}done:', 'VMOVSD       X8, ret+304(FP)', 'VZEROUPPER', 'RET']
    return '\n'.join(out) + '\n' + fmt(body)

def crossing(k):
    # After node i's label (CX, or −1) is stored: testEdges' test of each edge
    # to a later node j whose label differs, with D_j summed again from j's
    # block (final: the backward pass sends only to earlier nodes). Keeps Y0,
    # X6, X8 and the base registers; R9 is reloaded at the end.
    p, reg, load, addm, subm, store, hmin, masked = ops(k)
    c = f'c{k}'
    st = p['stride']
    out = ['// The edges to later nodes across a change of label (testEdges).',
           'TESTL        CX, CX', f'JL           {c}end', 'MOVL         CX, l-60(SP)',
           'MOVLQSX      4(R10)(R8*4), DX', 'MOVLQSX      (R10)(R8*4), CX', 'MOVLQSX      (R11)(R8*4), AX', 'ADDQ         AX, CX // the later neighbours\' edges: [CX, DX)', '',
           f'{c}edge:', 'CMPQ         CX, DX', f'JGE          {c}end', 'MOVLQSX      (R12)(CX*4), AX // e',
           'MOVQ         head_base+224(FP), R9', 'MOVLQSX      (R9)(AX*4), AX // j', 'MOVQ         argmin_base+248(FP), R9', 'MOVL         (R9)(AX*4), R9 // its label',
           'TESTL        R9, R9', f'JL           {c}next', 'CMPL         R9, l-60(SP)', f'JEQ          {c}next', '',
           '// D_j, its value at j\'s label, h = γ_j·(D_j − D_j(l_j)) − m_{i→j}.',
           'MOVQ         CX, a-48(SP)', 'MOVQ         DX, a1-56(SP)', 'MOVQ         AX, j-40(SP)',
           'MOVQ         u_base+8(FP), DX', 'MOVQ         AX, CX', f'IMULQ        ${p["stride"]}, CX']
    out += load('(DX)(CX*1)', reg(9))
    out += ['MOVLQSX      (R10)(AX*4), CX', 'MOVLQSX      4(R10)(AX*4), DX', 'SUBQ         CX, DX', f'JLE          {c}sum', 'MOVLQSX      (R13)(CX*4), CX', 'LEAQ         (BX)(CX*4), CX', '', f'{c}row:']
    out += addm('(CX)', reg(9), reg(5))
    out += [f'ADDQ         ${st}, CX', 'DECQ         DX', f'JNZ          {c}row', '', f'{c}sum:', 'LEAQ         buf-32(SP), DX']
    out += store(reg(9), '(DX)')
    out += [f'VBROADCASTSS (DX)(R9*4), {reg(10)}', f'VSUBPS       {reg(10)}, {reg(9)}, {reg(9)}', 'MOVQ         gamma_base+80(FP), CX',
            f'VBROADCASTSS (CX)(AX*4), {reg(11)}', f'VMULPS       {reg(11)}, {reg(9)}, {reg(9)}', 'MOVQ         a-48(SP), CX', 'MOVQ         aout_base+200(FP), AX',
            'MOVLQSX      (AX)(CX*4), AX']
    out += subm('(BX)(AX*4)', reg(9), reg(5))
    out += ['', '// best = min_y h(y) + θ(l_i, y); the value h(l_j) + w; the tolerance test.',
            'MOVLQSX      (R12)(CX*4), AX', f'VBROADCASTSS (DI)(AX*4), {reg(12)} // w', f'VPBROADCASTD l-60(SP), {reg(13)}', f'VPCMPEQD     {reg(13)}, {reg(14)}, {reg(13)}',
            f'VANDNPS      {reg(12)}, {reg(13)}, {reg(13)}', f'VADDPS       {reg(9)}, {reg(13)}, {reg(13)}']
    out += hmin(reg(13), 13, 10)
    out += store(reg(9), '(DX)')
    out += ['VMOVSS       (DX)(R9*4), X9', 'VADDSS       X12, X9, X9 // val', 'VSUBSS       X13, X9, X10 // val − best',
            'MOVL         $0x7fffffff, AX', 'VMOVD        AX, X11', 'VANDPS       X11, X9, X11', 'MOVL         $0x3f800000, AX // 1', 'VMOVD        AX, X12',
            'VMAXSS       X11, X12, X11', 'VMULSS       tol+296(FP), X11, X11', 'VCMPSS       $2, X11, X10, X10 // val − best ≤ tol·max(1, |val|)',
            'VMOVD        X10, AX', 'TESTL        AX, AX', f'JNZ          {c}tight', 'MOVQ         cons_base+272(FP), AX', 'MOVL         $-1, (AX)(R8*4)',
            'MOVQ         j-40(SP), CX', 'MOVL         $-1, (AX)(CX*4)', '', f'{c}tight:', 'MOVQ         a-48(SP), CX', 'MOVQ         a1-56(SP), DX', '',
            f'{c}next:', 'INCQ         CX', f'JMP          {c}edge', '', f'{c}end:', 'MOVQ         aout_base+200(FP), R9']
    return out

def forward_round(k):
    # The forward pass of a check iteration, rounding as it goes: before node i
    # sends, its label is rounded as primal(k) rounds it (the messages from later
    # nodes are the backward pass's still: the forward pass writes only into
    # later nodes).
    p, reg, load, addm, subm, store, hmin, masked = ops(k)
    f = f'r{k}'
    st = p['stride']
    out = [f'// func forwardRoundPotts{k}{sfx(k)}(n int, u, w, msg, gamma []float32, astart, nbwd, aedge, ain, aout, tail, primal []int32) (failed int)',
           f'// forwardPotts{k}{sfx(k)} and, before each node sends, primalPotts{k}{sfx(k)}\'s rounding of',
           '// the node. failed is the first node no lane of whose sum equals its',
           '// minimum (a NaN; labelled 0 here, for the caller to round again from',
           '// there), n if none.',
           f'TEXT ·forwardRoundPotts{k}{sfx(k)}(SB), NOSPLIT, $8-280']
    body = setup(k) + ['XORQ         R8, R8', 'MOVQ         u_base+8(FP), SI']
    body += ARGS.format(w=32, msg=56, astart=104, nbwd=128, aedge=152, ain=176).replace('\t', '').split('\n')
    body += [f'VMOVDQU      lanes8<>(SB), {reg(14)}',
             'MOVQ         n+0(FP), AX', 'MOVQ         AX, fail-8(SP)', '', f'{f}node:', 'CMPQ         R8, n+0(FP)', f'JGE          {f}done']
    body += load('(SI)', reg(0))
    body += [f'VMOVAPS      {reg(0)}, {reg(8)} // D and the rounding\'s sum p', 'MOVLQSX      (R10)(R8*4), CX', 'MOVLQSX      4(R10)(R8*4), DX',
             'CMPQ         CX, DX', f'JGE          {f}argmin', 'MOVLQSX      (R13)(CX*4), R14', 'LEAQ         (BX)(R14*4), R14 // node i\'s block of messages',
             'MOVLQSX      (R11)(R8*4), DX', 'ADDQ         CX, DX // the earlier neighbours\' edges end at DX', '',
             f'{f}earlier:', 'CMPQ         CX, DX', f'JGE          {f}later']
    body += addm('(R14)', reg(0), reg(5))
    body += ['MOVLQSX      (R12)(CX*4), AX // e', f'VBROADCASTSS (DI)(AX*4), {reg(1)} // w[e]', 'MOVQ         tail_base+224(FP), R9',
             'MOVLQSX      (R9)(AX*4), AX // tail[e]', 'MOVQ         primal_base+248(FP), R9', f'VPBROADCASTD (R9)(AX*4), {reg(2)} // its label',
             f'VPCMPEQD     {reg(2)}, {reg(14)}, {reg(3)}', f'VANDNPS      {reg(1)}, {reg(3)}, {reg(3)} // w but at the label', f'VADDPS       {reg(3)}, {reg(8)}, {reg(8)}',
             f'ADDQ         ${st}, R14', 'INCQ         CX', f'JMP          {f}earlier', '', f'{f}later:', 'MOVLQSX      4(R10)(R8*4), DX', '', f'{f}laterrow:',
             'CMPQ         CX, DX', f'JGE          {f}argmin']
    body += load('(R14)', reg(5))
    body += [f'VADDPS       {reg(5)}, {reg(0)}, {reg(0)}', f'VADDPS       {reg(5)}, {reg(8)}, {reg(8)}',
             f'ADDQ         ${st}, R14', 'INCQ         CX', f'JMP          {f}laterrow', '', f'{f}argmin:', f'VMOVAPS      {reg(8)}, {reg(6)}']
    body += hmin(reg(6), 6, 7)
    body += [f'VBROADCASTSS X6, {reg(6)}', f'VCMPPS       $0, {reg(6)}, {reg(8)}, {reg(7)} // lanes equal to the minimum', f'VMOVMSKPS    {reg(7)}, AX']
    body += masked('AX')
    body += ['TESTL        AX, AX', f'JNZ          {f}found', 'MOVQ         fail-8(SP), CX', 'CMPQ         CX, n+0(FP)', f'JL           {f}label',
             'MOVQ         R8, fail-8(SP)', f'JMP          {f}label', '', f'{f}found:', 'BSFL         AX, AX', '', f'{f}label:',
             'MOVQ         primal_base+248(FP), R9', 'MOVL         AX, (R9)(R8*4)', '',
             f'{f}sum:', 'MOVQ         aout_base+200(FP), R9',
             'MOVQ         gamma_base+80(FP), AX', f'VBROADCASTSS (AX)(R8*4), {reg(4)}',
             'MOVLQSX      (R10)(R8*4), CX', 'MOVLQSX      (R11)(R8*4), AX', 'MOVLQSX      4(R10)(R8*4), DX',
             'ADDQ         AX, CX // the later neighbours\' edges: [CX, DX)', '', f'{f}edge:',
             'CMPQ         CX, DX', f'JGE          {f}next']
    body += send(k)
    body += ['INCQ         CX', f'JMP          {f}edge', '', f'{f}next:', f'ADDQ         ${st}, SI', 'INCQ         R8',
             f'JMP          {f}node', '', f'{f}done:', 'MOVQ         fail-8(SP), AX', 'MOVQ         AX, failed+272(FP)', 'VZEROUPPER', 'RET']
    return '\n'.join(out) + '\n' + fmt(body)

def primal(k):
    p, reg, load, addm, subm, store, hmin, masked = ops(k)
    q = f'p{k}'
    out = [f'// func primalPotts{k}{sfx(k)}(from, n int, u, w, msg []float32, astart, nbwd, aedge, ain, tail, primal []int32) int',
           f'// primalPotts{k}\'s rounding from node from on: p = u(i), then p += w at every',
           '// lane but the earlier neighbour\'s label (+0 there: the same sum), edge by edge',
           '// in adjacency order, then p += the messages from later neighbours, in order;',
           '// the label is the first lane equal to min p. It returns the node it stopped',
           '// at: n, or a node where no lane equals the minimum (a NaN), for the caller.',
           f'TEXT ·primalPotts{k}{sfx(k)}(SB), NOSPLIT, $0-240']
    body = setup(k) + ['MOVQ         from+0(FP), R8', 'MOVQ         u_base+16(FP), SI', 'MOVQ         R8, AX', f'IMULQ        ${p["stride"]}, AX', 'ADDQ         AX, SI // u(i)']
    body += ARGS.format(w=40, msg=64, astart=88, nbwd=112, aedge=136, ain=160).replace('\t', '').split('\n')
    body += [f'VMOVDQU      lanes8<>(SB), {reg(14)}', '', f'{q}node:', 'CMPQ         R8, n+8(FP)', f'JGE          {q}done']
    body += load('(SI)', reg(0))
    body += ['MOVLQSX      (R10)(R8*4), CX // a = astart[i]', 'MOVLQSX      (R11)(R8*4), DX', 'ADDQ         CX, DX // the earlier neighbours\' edges end at DX', '',
             f'{q}earlier:', 'CMPQ         CX, DX', f'JGE          {q}later', 'MOVLQSX      (R12)(CX*4), AX // e',
             f'VBROADCASTSS (DI)(AX*4), {reg(1)} // w[e]', 'MOVQ         tail_base+184(FP), R9', 'MOVLQSX      (R9)(AX*4), AX // tail[e]',
             'MOVQ         primal_base+208(FP), R9', f'VPBROADCASTD (R9)(AX*4), {reg(2)} // its label', f'VPCMPEQD     {reg(2)}, {reg(14)}, {reg(3)}',
             f'VANDNPS      {reg(1)}, {reg(3)}, {reg(3)} // w but at the label', f'VADDPS       {reg(3)}, {reg(0)}, {reg(0)}', 'INCQ         CX',
             f'JMP          {q}earlier', '', f'{q}later:', 'MOVLQSX      4(R10)(R8*4), AX // astart[i+1]', 'SUBQ         DX, AX // messages from later neighbours',
             f'JLE          {q}argmin', 'MOVLQSX      (R13)(DX*4), CX', 'LEAQ         (BX)(CX*4), CX', '', f'{q}laterrow:']
    body += addm('(CX)', reg(0), reg(5))
    body += [f'ADDQ         ${p["stride"]}, CX', 'DECQ         AX', f'JNZ          {q}laterrow', '', f'{q}argmin:', f'VMOVAPS      {reg(0)}, {reg(6)}']
    body += hmin(reg(6), 6, 7)
    body += [f'VBROADCASTSS X6, {reg(6)}', f'VCMPPS       $0, {reg(6)}, {reg(0)}, {reg(7)} // lanes equal to the minimum', f'VMOVMSKPS    {reg(7)}, AX']
    body += masked('AX')
    body += ['TESTL        AX, AX', f'JZ           {q}done', 'BSFL         AX, AX', 'MOVQ         primal_base+208(FP), R9', 'MOVL         AX, (R9)(R8*4)',
             f'ADDQ         ${p["stride"]}, SI', 'INCQ         R8', f'JMP          {q}node', '', f'{q}done:', 'MOVQ         R8, ret+232(FP)', 'VZEROUPPER', 'RET']
    return '\n'.join(out) + '\n' + fmt(body)

header = '''//go:build !purego

#include "textflag.h"

// The uniform Potts passes (potts*.go) and their check's rounding for K = 8
// (one YMM register a node), 4 (one XMM), 2 (the low half of one) and, with
// AVX-512, 3, 5, 6, 7 (one YMM register under the opmask K1, +Inf in the other
// lanes): the same operations on the same values in the same order as the Go
// passes, so bit for bit their results (TestAssemblyPottsPassesEqualTheGoOnes).
// Generated by scripts/potts_asm.py, one shape for all the label counts:
// change the script, not this file.

// Lane numbers 0…7: which lane is an earlier neighbour's label.
DATA lanes8<>+0(SB)/4, $0
DATA lanes8<>+4(SB)/4, $1
DATA lanes8<>+8(SB)/4, $2
DATA lanes8<>+12(SB)/4, $3
DATA lanes8<>+16(SB)/4, $4
DATA lanes8<>+20(SB)/4, $5
DATA lanes8<>+24(SB)/4, $6
DATA lanes8<>+28(SB)/4, $7
GLOBL lanes8<>(SB), RODATA|NOPTR, $32
'''
parts = [header]
for k in (8, 4, 2, 3, 5, 6, 7):
    parts += ['', forward(k), forward_round(k), backward(k), primal(k)]
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'trws', 'potts_amd64.s'), 'w').write('\n'.join(parts))
