# NaN makes '<' inconsistent, so the result depends on the exact sequence of
# comparisons: it matches CPython's timsort (binary insertion, merges,
# galloping), not just any stable sort.
n = float("nan")
small = sorted([5.0, n, 3.0, 1.0, 4.0, n, 2.0])
mixed = sorted([3, n, 1, 2, 0.5, n, -1, 7, 2.5])
xs = [float((i * 37) % 101) for i in range(300)]
for i in range(0, 300, 13):
    xs[i] = n
runs = [float(i // 3) for i in range(200)] + [float(i) for i in range(150, 0, -1)]
runs[77] = n
runs[260] = n
[small, mixed, sorted(xs), sorted(xs, reverse=True), sorted(runs), sorted(runs, key=lambda v: -v)]
