"""Parsers of compiler and profiler artifacts, one module per artifact: ttgir (TTGIR modules, layouts),
ttgir_memops (its global memory ops), ptx (PTX entries, access widths), sass, ptxas (ptxas -v), ncu
(ncu --csv --page raw), sanitizer (compute-sanitizer text). Pure text in, records out: the toolrunner's
tools, the decomposer and the benchmarks read the same artifact the same way."""
