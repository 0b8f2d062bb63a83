#!/usr/bin/env python3
"""Merges `fusedops tune` output into a tuned table (docs/tuning.md, "Compiled tables").

    python3 scripts/merge_tuning.py TABLE NEW.tsv [NEW.tsv ...] [--tag] [--note TEXT] [--check]

Each NEW file's lines replace the table's lines of the same key (arch column, op, dtype,
bucket): a bucket's lines come as a set (its winner, then one line per narrower alignment), so
every table line of a key a NEW file names goes, and the NEW lines of that key take the place
of the first one (new keys go after the last line of their arch column and op, or at the end).
--tag writes each NEW file's lines with the tag of the device it was measured on, from the
comment line tune writes first (`# NAME: sm_90, ... (tag: sm_90@4814)`), so they hold on that
memory system alone. --note adds TEXT (one or more lines) to the table's header comments,
after their first line that ends in a full stop. --check prints what would change and writes
nothing. Lines the library's parser would reject are not checked here: the build (the
generator) does that.
"""
import argparse
import re
import sys

TAG = re.compile(r"\(tag: (sm_\d+@[1-9]\d*)\)")


def key(line):
    cols = line.split("\t")
    return tuple(cols[:4]) if len(cols) >= 5 else None


def read_new(path, tag):
    """The entry lines of one tune output, with its device tag in the arch column if asked."""
    with open(path) as f:
        text = f.read().splitlines()
    device_tag = None
    for line in text:
        if line.startswith("#"):
            m = TAG.search(line)
            if m:
                device_tag = m.group(1)
                break
    if tag and not device_tag:
        sys.exit(f"merge_tuning: {path}: no '(tag: sm_NN@GBPS)' comment line (tune writes one "
                 "first); cannot --tag")
    lines = []
    for line in text:
        if not line or line.startswith("#") or line.startswith("arch\t"):
            continue
        if key(line) is None:
            sys.exit(f"merge_tuning: {path}: not a table line: {line!r}")
        if tag:
            arch, rest = line.split("\t", 1)
            if "@" in arch:
                sys.exit(f"merge_tuning: {path}: line already tagged: {line!r}")
            line = f"{device_tag}\t{rest}"
        lines.append(line)
    return lines


def merge(table_lines, new_lines, note=None):
    """(merged lines, replaced, added): table_lines and the result as lists of lines."""
    header = []
    i = 0
    while i < len(table_lines) and table_lines[i].startswith("#"):
        header.append(table_lines[i])
        i += 1
    body = [line for line in table_lines[i:] if line]
    if note:
        # after the header's first sentence-ending line (the format's description), so the
        # newest part of the table is described first
        at = next((j + 1 for j, h in enumerate(header) if h.rstrip().endswith(".")),
                  len(header))
        header[at:at] = ["# " + t if t else "#" for t in note.splitlines()]
    new_by_key = {}
    order = []
    for line in new_lines:
        k = key(line)
        if k not in new_by_key:
            new_by_key[k] = []
            order.append(k)
        new_by_key[k].append(line)
    out, placed, replaced = [], set(), 0
    for line in body:
        k = key(line)
        if k in new_by_key:
            replaced += 1
            if k not in placed:
                out.extend(new_by_key[k])
                placed.add(k)
            continue
        out.append(line)
    added = 0
    for k in order:
        if k in placed:
            continue
        # after the last line of the same arch column and op, else at the end
        last = max((j for j, line in enumerate(out) if key(line)[:2] == k[:2]), default=None)
        at = len(out) if last is None else last + 1
        out[at:at] = new_by_key[k]
        added += len(new_by_key[k])
        placed.add(k)
    return header + out, replaced, added


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("new", nargs="+")
    ap.add_argument("--tag", action="store_true",
                    help="keep the new lines to the memory system they were measured on")
    ap.add_argument("--note", help="header comment text to add")
    ap.add_argument("--check", action="store_true", help="report only, write nothing")
    args = ap.parse_args(argv)
    with open(args.table) as f:
        table = f.read().splitlines()
    new = []
    for path in args.new:
        new.extend(read_new(path, args.tag))
    merged, replaced, added = merge(table, new, args.note)
    print(f"merge_tuning: {len(new)} new lines: {replaced} table lines replaced, {added} lines "
          f"in new buckets; {sum(1 for line in merged if not line.startswith('#'))} entries")
    if not args.check:
        with open(args.table, "w") as f:
            f.write("\n".join(merged) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
