; pairscan_avx2.asm -- every position i with tok[i] == a and tok[i+1] == b.
;
; size_t mnemo_pairscan_avx2(const uint16_t *tok, size_t n, uint32_t a, uint32_t b,
;                            int64_t *out, size_t cap);
;   rdi = tok, rsi = n, edx = a, ecx = b, r8 = out, r9 = cap;  returns rax = hits written.
;
; Positions i in [0, n-1) are reported in increasing order.  The scan stops as soon as
; `cap` positions have been written; the caller resumes from out[cap-1] + 1.
; Nothing is allocated and no byte outside tok[0..n) or out[0..cap) is touched: the vector
; loop needs tok[i .. i+16] (17 tokens, because the second load is shifted by one token),
; so it runs while i + 17 <= n and the rest is done one token at a time.
;
; Per block of 16 tokens: vpcmpeqw against a, vpcmpeqw of the block shifted by one token
; against b, vpand, vpmovmskb.  vpmovmskb yields two mask bits per 16-bit lane; keeping
; only the even bits (0x5555...) leaves one bit per token, so tzcnt/2 is the lane index.

default rel
section .text
global mnemo_pairscan_avx2:function hidden

mnemo_pairscan_avx2:
        push    rbx
        push    r12
        xor     eax, eax                ; hits written
        test    r9, r9
        jz      .ret
        cmp     rsi, 2
        jb      .ret
        movzx   edx, dx                 ; the C side passes uint16 values; be sure anyway
        movzx   ecx, cx
        vmovd   xmm0, edx
        vpbroadcastw ymm0, xmm0         ; ymm0 = a in every lane
        vmovd   xmm1, ecx
        vpbroadcastw ymm1, xmm1         ; ymm1 = b in every lane
        xor     r10d, r10d              ; i

        ; -- 32 tokens per iteration while i + 33 <= n -----------------------------------
        cmp     rsi, 33
        jb      .one
        lea     r11, [rsi - 32]         ; loop while i < n - 32
.two:
        vpcmpeqw ymm2, ymm0, [rdi + r10*2]
        vpcmpeqw ymm3, ymm1, [rdi + r10*2 + 2]
        vpcmpeqw ymm4, ymm0, [rdi + r10*2 + 32]
        vpcmpeqw ymm5, ymm1, [rdi + r10*2 + 34]
        vpand   ymm2, ymm2, ymm3
        vpand   ymm4, ymm4, ymm5
        vpor    ymm3, ymm2, ymm4
        vptest  ymm3, ymm3
        jnz     .two_hits
.two_next:
        add     r10, 32
        cmp     r10, r11
        jb      .two
        jmp     .one

.two_hits:
        vpmovmskb ebx, ymm2
        and     ebx, 0x55555555
        jz      .two_high
.two_low_loop:
        tzcnt   r12d, ebx
        shr     r12d, 1
        add     r12, r10
        mov     [r8 + rax*8], r12
        inc     rax
        cmp     rax, r9
        je      .ret_vz
        blsr    ebx, ebx
        jnz     .two_low_loop
.two_high:
        vpmovmskb ebx, ymm4
        and     ebx, 0x55555555
        jz      .two_next
.two_high_loop:
        tzcnt   r12d, ebx
        shr     r12d, 1
        add     r12, r10
        add     r12, 16
        mov     [r8 + rax*8], r12
        inc     rax
        cmp     rax, r9
        je      .ret_vz
        blsr    ebx, ebx
        jnz     .two_high_loop
        jmp     .two_next

        ; -- 16 tokens per iteration while i + 17 <= n -----------------------------------
.one:
        lea     r11, [rsi - 16]         ; loop while i < n - 16  (n >= 2, so no wrap
        cmp     rsi, 17                 ;  matters: the compare below guards n < 17)
        jb      .tail
.one_loop:
        cmp     r10, r11
        jae     .tail
        vpcmpeqw ymm2, ymm0, [rdi + r10*2]
        vpcmpeqw ymm3, ymm1, [rdi + r10*2 + 2]
        vpand   ymm2, ymm2, ymm3
        vpmovmskb ebx, ymm2
        and     ebx, 0x55555555
        jz      .one_next
.one_hit_loop:
        tzcnt   r12d, ebx
        shr     r12d, 1
        add     r12, r10
        mov     [r8 + rax*8], r12
        inc     rax
        cmp     rax, r9
        je      .ret_vz
        blsr    ebx, ebx
        jnz     .one_hit_loop
.one_next:
        add     r10, 16
        jmp     .one_loop

        ; -- the last tokens, one at a time: i < n - 1 ------------------------------------
.tail:
        lea     r11, [rsi - 1]
.tail_loop:
        cmp     r10, r11
        jae     .ret_vz
        movzx   ebx, word [rdi + r10*2]
        cmp     ebx, edx
        jne     .tail_next
        movzx   ebx, word [rdi + r10*2 + 2]
        cmp     ebx, ecx
        jne     .tail_next
        mov     [r8 + rax*8], r10
        inc     rax
        cmp     rax, r9
        je      .ret_vz
.tail_next:
        inc     r10
        jmp     .tail_loop

.ret_vz:
        vzeroupper
.ret:
        pop     r12
        pop     rbx
        ret

section .note.GNU-stack noalloc noexec nowrite progbits
