"""Typed input and output records of every tool, one module per group; `catalog` names them."""
