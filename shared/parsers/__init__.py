"""Parsers of compiler and profiler artifacts (ptxas -v, ...), one module per artifact. Pure text in,
records of shared/tools/ out: the toolrunner's tools and the decomposer read the same artifact the same way."""
