"""Benchmarks: side-by-side ratios against plain baselines, with JSON records in bench/results/."""
