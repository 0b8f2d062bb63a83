#!/usr/bin/env python3
"""Reads a kernel's instruction stream from a cubin without a disassembler.

This machine's CUDA toolkit has nvcc and ptxas but no cuobjdump or nvdisasm; the lent GPU
machine has both. On sm_90 the low 12 bits of an instruction's first 64-bit word name its
opcode, so a table learnt once from a cuobjdump text there (scripts/sass_opcodes_sm90.tsv)
names the base mnemonic of every instruction of a cubin built here: enough to count what a
hot loop issues between its products (perf-notes G27). Modifiers and operands are not
decoded; an opcode the table lacks prints as ?XXX (learn it from a dump that has it).

  sass_mnemonics.py CUBIN FUNCTION [--from HEX] [--to HEX] [--count]
      list FUNCTION's instructions (byte offset, mnemonic), or with --count a histogram
  sass_mnemonics.py --learn DUMP.sass [DUMP.sass ...]
      add the opcodes of cuobjdump -sass texts to the table (a conflict is an error)

Build a cubin of one variant with nvcc -cubin -arch=sm_90a from build/gen/OP.cu.
"""
import argparse
import collections
import os
import re
import struct
import sys

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sass_opcodes_sm90.tsv")
HEADER = """# sm_90 SASS: the low 12 bits of an instruction's first 64-bit word -> its mnemonic (the
# base name; modifiers live in other bits). Learnt by scripts/sass_mnemonics.py --learn from
# cuobjdump -sass texts (CUDA 13.0).
"""
LINE = re.compile(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)[^;]*;\s*/\* 0x([0-9a-f]{16}) \*/")


def read_table():
    table = {}
    with open(TABLE) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            opcode, name = line.split()
            table[int(opcode, 16)] = name
    return table


def learn(dumps):
    table = read_table()
    for path in dumps:
        with open(path) as f:
            for line in f:
                match = LINE.match(line)
                if not match:
                    continue
                opcode, name = int(match.group(2), 16) & 0xFFF, match.group(1).split(".")[0]
                if table.get(opcode, name) != name:
                    sys.exit("%s: opcode %03x is %s here but %s in the table" % (path, opcode, name, table[opcode]))
                table[opcode] = name
    with open(TABLE, "w") as f:
        f.write(HEADER)
        for opcode in sorted(table):
            f.write("%03x\t%s\n" % (opcode, table[opcode]))
    print("%d opcodes in %s" % (len(table), TABLE))


def function_text(cubin, function):
    data = open(cubin, "rb").read()
    if data[:4] != b"\x7fELF":
        sys.exit("%s is not an ELF cubin" % cubin)
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]
    for name, _type, _flags, _addr, offset, size in sections:
        end = data.index(b"\0", names_at + name)
        if data[names_at + name:end].decode() == ".text." + function:
            return data[offset:offset + size]
    sys.exit("%s has no .text.%s" % (cubin, function))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cubin", nargs="?")
    parser.add_argument("function", nargs="?")
    parser.add_argument("--from", dest="start", default="0", help="first byte offset, hex")
    parser.add_argument("--to", dest="stop", default="ffffffff", help="last byte offset, hex")
    parser.add_argument("--count", action="store_true", help="a histogram of the mnemonics")
    parser.add_argument("--learn", nargs="+", metavar="DUMP", help="cuobjdump -sass texts to learn from")
    args = parser.parse_args()
    if args.learn:
        return learn(args.learn)
    if not args.cubin or not args.function:
        parser.error("give CUBIN and FUNCTION, or --learn")
    table, text = read_table(), function_text(args.cubin, args.function)
    start, stop = int(args.start, 16), int(args.stop, 16)
    names = []
    for at in range(0, len(text), 16):  # sm_90 instructions are 16 bytes
        if start <= at <= stop:
            (word,) = struct.unpack_from("<Q", text, at)
            names.append((at, table.get(word & 0xFFF, "?%03x" % (word & 0xFFF))))
    if args.count:
        for name, n in collections.Counter(name for _, name in names).most_common():
            print("%6d %s" % (n, name))
        print("%6d in all" % len(names))
    else:
        for at, name in names:
            print("%05x %s" % (at, name))


if __name__ == "__main__":
    main()
