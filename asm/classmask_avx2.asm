; classmask_avx2.asm -- per 64-byte block of a text, one 64-bit mask per property bit.
;
; void mnemo_classmask_avx2(const uint8_t *text, size_t n, const uint8_t *table,
;                           uint64_t *out);
;   rdi = text, rsi = n, rdx = table (256 bytes), rcx = out;  returns nothing.
;
; table[b] is a byte of up to 8 property bits for the byte value b (the caller decides what they
; mean: letter, digit, space, ...).  For block k = the bytes text[64k .. 64k+63]:
;     out[8k + p] bit j = bit p of table[text[64k + j]]
; for the ceil(n / 64) blocks; bits of a last, partial block past n are 0 in every mask.
; Nothing is allocated; no byte outside text[0..n), table[0..256) or out[0 .. 8*ceil(n/64)) is
; touched: the last partial block is copied into a zeroed 64-byte buffer on the stack first.
;
; Per 32 bytes: the lookup table[b] is 16 vpshufb, one per high nibble h, each on the 16 table
; entries of row h (vbroadcasti128: the same row in both lanes) indexed by the low nibble, kept
; where the byte's high nibble is h (vpcmpeqb) and OR-ed together.  Then bit p of every byte goes
; to the top (vpsllw by 7 - p: the top bit of each byte of a 16-bit lane comes from that byte
; itself for shifts of 0..7) and vpmovmskb gathers the 32 top bits.  Two halves make a block.

default rel
section .text
global mnemo_classmask_avx2:function hidden

; props ymm_dst <- table[bytes of ymm_src]; clobbers ymm12-ymm15.  ymm11 = 0x0F in every byte.
%macro LOOKUP 2
        vpand   ymm13, %2, ymm11            ; low nibbles
        vpsrlw  ymm14, %2, 4
        vpand   ymm14, ymm14, ymm11         ; high nibbles
        vpxor   %1, %1, %1
%assign h 0
%rep 16
        vbroadcasti128 ymm12, [rdx + 16*h]  ; row h of the table, both lanes
        vpshufb ymm12, ymm12, ymm13         ; row h at each byte's low nibble
        vmovdqa ymm15, [rel nibble_h + 32*h]
        vpcmpeqb ymm15, ymm15, ymm14        ; bytes whose high nibble is h
        vpand   ymm12, ymm12, ymm15
        vpor    %1, %1, ymm12
%assign h h+1
%endrep
%endmacro

; out[p] (8 uint64 at r8) <- masks of ymm_lo (bytes 0..31) and ymm_hi (bytes 32..63).
%macro MASKS 2
%assign p 0
%rep 8
%if p == 7
        vpmovmskb eax, %1
        vpmovmskb r9d, %2
%else
        vpsllw  ymm12, %1, 7 - p
        vpmovmskb eax, ymm12
        vpsllw  ymm12, %2, 7 - p
        vpmovmskb r9d, ymm12
%endif
        shl     r9, 32
        or      rax, r9
        mov     [r8 + 8*p], rax
%assign p p+1
%endrep
%endmacro

mnemo_classmask_avx2:
        push    rbp
        mov     rbp, rsp
        sub     rsp, 64
        and     rsp, -32                    ; a 64-byte, 32-aligned buffer for the last block
        mov     r10, rdi                    ; r10 = the next block's bytes
        mov     r8, rcx                     ; r8 = the next block's 8 masks
        mov     r11, rsi                    ; r11 = bytes left
        mov     eax, 0x0F0F0F0F
        vmovd   xmm11, eax
        vpbroadcastd ymm11, xmm11
.block:
        cmp     r11, 64
        jb      .last
        vmovdqu ymm0, [r10]
        vmovdqu ymm1, [r10 + 32]
        LOOKUP  ymm2, ymm0
        LOOKUP  ymm3, ymm1
        MASKS   ymm2, ymm3
        add     r10, 64
        add     r8, 64
        sub     r11, 64
        jmp     .block

.last:
        test    r11, r11
        jz      .done
        ; copy the r11 (1..63) remaining bytes to the zeroed stack buffer, then one block as
        ; above, then clear the bits from r11 on (the zero bytes' properties are table[0]'s)
        vpxor   ymm0, ymm0, ymm0
        vmovdqa [rsp], ymm0
        vmovdqa [rsp + 32], ymm0
        xor     ecx, ecx
.copy:
        movzx   eax, byte [r10 + rcx]
        mov     [rsp + rcx], al
        inc     rcx
        cmp     rcx, r11
        jb      .copy
        vmovdqa ymm0, [rsp]
        vmovdqa ymm1, [rsp + 32]
        LOOKUP  ymm2, ymm0
        LOOKUP  ymm3, ymm1
        MASKS   ymm2, ymm3
        mov     ecx, r11d                   ; keep = (1 << r11) - 1, r11 in 1..63
        mov     rax, 1
        shl     rax, cl
        dec     rax
%assign p 0
%rep 8
        and     [r8 + 8*p], rax
%assign p p+1
%endrep

.done:
        vzeroupper
        mov     rsp, rbp
        pop     rbp
        ret

section .rodata
align 32
nibble_h:                                   ; 16 rows of 32 bytes: row h is h in every byte
%assign h 0
%rep 16
        times 32 db h
%assign h h+1
%endrep

section .note.GNU-stack noalloc noexec nowrite progbits
