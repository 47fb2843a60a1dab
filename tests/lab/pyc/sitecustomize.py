# Python imports this at start where tests/lab/pyc is on PYTHONPATH (test-labs.sh): lab_pyc.py.
import lab_pyc  # noqa: F401  pylint: disable=unused-import
