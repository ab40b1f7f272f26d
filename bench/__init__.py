"""Benchmarks for pi_notebook (run by hand, never as tests). See ``bench/README.md``."""
