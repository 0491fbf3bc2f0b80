"""weft: Python helpers for the weft distributed-training compiler.

`weft.examples` holds the generator scripts of the example models.
"""
