/* Embeds the fatbinary (every kernel variant, every target architecture) in the library.
 * The symbol is hidden, so only tile_* is exported. */
    .section .rodata.tile_fatbin, "a"
    .balign 64
    .globl tile_fatbin_start
    .hidden tile_fatbin_start
    .type tile_fatbin_start, @object
tile_fatbin_start:
    .incbin "kernels.fatbin" /* found through the assembler include path -I<build dir> */
    .size tile_fatbin_start, . - tile_fatbin_start
    .section .note.GNU-stack, "", @progbits
