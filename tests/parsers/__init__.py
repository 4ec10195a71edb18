"""Tests of shared/parsers: the one reader of each compiler and profiler artifact."""
