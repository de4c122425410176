; memeq_avx2.asm -- equality of two byte ranges.
;
; int mnemo_memeq_avx2(const uint8_t *a, const uint8_t *b, size_t n, size_t room);
;   rdi = a, rsi = b, rdx = n, rcx = room;  returns eax = 1 if equal, 0 if not.
;
; `room` is how many bytes may be read immediately BEFORE both a and b (the smaller of the
; two offsets into their buffers).  No byte after a[n-1] or b[n-1] is ever read:
;   n >= 32       32-byte vpcmpeqb blocks, then one last block that ends exactly at n
;                 (it may overlap the previous block; overlapping is harmless for equality);
;   8 <= n < 32   8-byte words, then one last word that ends exactly at n;
;   1 <= n < 8    one 8-byte load that ENDS where the range ends, when room >= 8 - n;
;                 otherwise (a range near the very start of its buffer, where that load
;                 would reach before the buffer) a plain byte loop;
;   n == 0        equal.

default rel
section .text
global mnemo_memeq_avx2:function hidden

mnemo_memeq_avx2:
        cmp     rdx, 8
        jb      .short
        cmp     rdx, 32
        jb      .words

        ; -- n >= 32 -------------------------------------------------------------------
        xor     r8d, r8d
        lea     r9, [rdx - 32]          ; the last block starts here
.block:
        vmovdqu ymm0, [rdi + r8]
        vpcmpeqb ymm0, ymm0, [rsi + r8]
        vpmovmskb eax, ymm0
        cmp     eax, -1
        jne     .ne_vz
        add     r8, 32
        cmp     r8, r9
        jb      .block                  ; blocks while they end before n - 32 + 32
        vmovdqu ymm0, [rdi + r9]
        vpcmpeqb ymm0, ymm0, [rsi + r9]
        vpmovmskb eax, ymm0
        vzeroupper
        cmp     eax, -1
        jne     .ne
        mov     eax, 1
        ret
.ne_vz:
        vzeroupper
.ne:
        xor     eax, eax
        ret

        ; -- 8 <= n < 32 ---------------------------------------------------------------
.words:
        xor     r8d, r8d
        lea     r9, [rdx - 8]           ; the last word starts here
.word:
        cmp     r8, r9
        jae     .last_word
        mov     rax, [rdi + r8]
        xor     rax, [rsi + r8]
        jnz     .ne
        add     r8, 8
        jmp     .word
.last_word:
        mov     rax, [rdi + r9]
        xor     rax, [rsi + r9]
        jnz     .ne
        mov     eax, 1
        ret

        ; -- n < 8 ---------------------------------------------------------------------
.short:
        test    rdx, rdx
        jz      .eq
        mov     r8d, 8
        sub     r8, rdx                 ; r8 = 8 - n = bytes of the load that lie before the range
        cmp     rcx, r8
        jb      .bytes
        mov     rax, [rdi + rdx - 8]    ; the 8 bytes that end where the range ends
        xor     rax, [rsi + rdx - 8]
        ; Shift RIGHT.  x86 is little-endian: the byte at the lowest address, i.e. the first
        ; of the 8 - n bytes that precede the range, lands in the LOW bits of rax, and the
        ; range itself is the HIGH n bytes.  Shifting right by 8*(8-n) drops exactly the bytes
        ; before the range.  Shifting left (the original bug) dropped the range's own bytes and
        ; kept the ones before it, so " the" after "of" and " the" after "in" compared unequal.
        lea     ecx, [r8*8]
        shr     rax, cl
        test    rax, rax
        jnz     .ne
.eq:
        mov     eax, 1
        ret
.bytes:
        xor     r8d, r8d
.byte:
        movzx   eax, byte [rdi + r8]
        cmp     al, [rsi + r8]
        jne     .ne
        inc     r8
        cmp     r8, rdx
        jb      .byte
        mov     eax, 1
        ret

section .note.GNU-stack noalloc noexec nowrite progbits
