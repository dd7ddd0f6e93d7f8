"""Unit tests of cmake/opgen (the CTest opgen.unit): from cmake/,

    python3 -B -m unittest discover -s opgen/tests -t .

OPGEN_UPDATE_GOLDEN=1 rewrites the golden files under golden/ from the generator's output
(then read the diff: it is the change to the generated code).
"""
