#!/usr/bin/env python3
"""Folds `perf script` output into stacks and draws them as a flame graph (SVG), no other tools needed.

    perf record -e cpu-clock -g -p PID -- sleep 10
    perf script | swift demangle --simplified | python3 bench/flamegraph.py --title "GET 304" > flame.svg
    perf script | swift demangle --simplified | python3 bench/flamegraph.py --folded > stacks.txt

Each sample's frames run from the root (bottom) to the leaf (top); a frame's width is its share of the samples.
Hover a frame for its name, samples and share. `--folded` prints Brendan Gregg's folded format instead
(`root;caller;callee count`), which `--top` summarises as the functions with the most samples under them.
"""
import argparse
import html
import re
import sys
from collections import defaultdict


def samples(lines):
    """Yields each sample of `perf script` output as its frames, leaf first: (function, module) pairs."""
    frames = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if frames:
                yield frames
            frames = []
            continue
        if not line.startswith((" ", "\t")):
            continue  # the sample's header line
        # "    7f3b2c1d4e5f  symbol+0x12 (/path/lib.so)"
        m = re.match(r"\s*[0-9a-f]+\s+(.*?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)\s*$", line)
        if m:
            module = m.group(2).rsplit("/", 1)[-1]
            name = m.group(1).strip()
            if name in ("[unknown]", ""):
                name = "[" + module + "]"
            frames.append((name.replace(";", ","), "kernel" if "kernel" in module else module))
    if frames:
        yield frames


def fold(lines):
    """Yields each sample's stack as a tuple of function names, root first."""
    for frames in samples(lines):
        yield tuple(name for name, _ in reversed(frames))


def modules(lines):
    """Share of samples by the module (kernel, library or executable) of the frame each sample was taken in."""
    counts = defaultdict(int)
    for frames in samples(lines):
        counts[frames[0][1]] += 1
    return counts


def build_tree(stacks):
    root = {"name": "all", "count": 0, "children": {}}
    for stack, count in stacks.items():
        root["count"] += count
        node = root
        for name in stack:
            node = node["children"].setdefault(name, {"name": name, "count": 0, "children": {}})
            node["count"] += count
    return root


def colour(name):
    h = sum(ord(c) for c in name) % 60
    if name.startswith("[") or "kernel" in name:
        return f"rgb(230,{120 + h},{60 + h // 2})"
    if "TabService" in name or "TabLayout" in name or "MicroHTTPD" in name or "TabStore" in name:
        return f"rgb({60 + h},{150 + h},{220})"
    return f"rgb(240,{140 + h},{50 + h // 3})"


def svg(root, title, width=1400, row=17):
    depth = 0

    def measure(node, level):
        nonlocal depth
        depth = max(depth, level)
        for child in node["children"].values():
            measure(child, level + 1)

    measure(root, 0)
    height = (depth + 1) * row + 60
    total = root["count"] or 1
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="11">',
        f'<rect width="100%" height="100%" fill="#fdfdf5"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15">{html.escape(title)} ({total} samples)</text>',
    ]

    def draw(node, x, level):
        w = node["count"] / total * (width - 20)
        if w < 0.3:
            return
        y = height - (level + 1) * row - 10
        share = 100 * node["count"] / total
        label = html.escape(node["name"])
        out.append(
            f'<g><title>{label} ({node["count"]} samples, {share:.2f}%)</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" fill="{colour(node["name"])}" rx="2"/>'
        )
        chars = int(w / 6.6)
        if chars >= 3:
            text = node["name"] if len(node["name"]) <= chars else node["name"][: chars - 2] + ".."
            out.append(f'<text x="{x + 3:.1f}" y="{y + row - 5}">{html.escape(text)}</text>')
        out.append("</g>")
        cx = x
        for child in sorted(node["children"].values(), key=lambda c: c["name"]):
            draw(child, cx, level + 1)
            cx += child["count"] / total * (width - 20)

    draw(root, 10, 0)
    out.append("</svg>")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--title", default="CPU samples")
    parser.add_argument("--folded", action="store_true", help="print folded stacks instead of SVG")
    parser.add_argument("--top", type=int, default=0, help="print the N functions with the most samples under them")
    parser.add_argument("--modules", action="store_true", help="print the share of samples by module")
    args = parser.parse_args()
    lines = sys.stdin.readlines()
    if args.modules:
        counts = modules(lines)
        total = sum(counts.values()) or 1
        for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
            if count / total >= 0.005:
                print(f"{100 * count / total:6.2f}%  {name}")
        return
    stacks = defaultdict(int)
    for stack in fold(lines):
        stacks[stack] += 1
    if args.top:
        total = sum(stacks.values()) or 1
        inclusive, own = defaultdict(int), defaultdict(int)
        for stack, count in stacks.items():
            for name in set(stack):
                inclusive[name] += count
            own[stack[-1]] += count
        for name, count in sorted(inclusive.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"{100 * count / total:6.2f}% {100 * own[name] / total:6.2f}%  {name}")
    elif args.folded:
        for stack, count in sorted(stacks.items()):
            print(";".join(stack), count)
    else:
        print(svg(build_tree(stacks), args.title))


if __name__ == "__main__":
    main()
