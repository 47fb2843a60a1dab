"""The test suite's bytecode cache for module runs (tests/lab/pyc/lab_pyc.py): each file of a zip is
compiled once, the cached code runs under the name of the zip it came from, a changed source is
compiled anew, and a cache that cannot be read or written only costs the compile."""

import os
import subprocess
import sys
import zipfile

PYC = os.path.join(os.path.dirname(__file__), '..', 'lab', 'pyc')
# Imports the module from the zip given first, prints its answer, then the file its function's
# code names (as a traceback would).
PROBE = ('import sys; sys.path.insert(0, sys.argv[1]); import probe_mod; '
         'print(probe_mod.answer()); print(probe_mod.answer.__code__.co_filename)')


def _zip(path, value):
    with zipfile.ZipFile(path, 'w') as archive:
        archive.writestr('probe_mod.py', 'def answer():\n    return %r\n' % value)
    return path


def _run(archive, cache):
    env = dict(os.environ, PYTHONPATH=PYC, LAB_PYC_DIR=cache)
    proc = subprocess.run([sys.executable, '-c', PROBE, archive], env=env, capture_output=True, text=True, check=True)
    return proc.stdout.split()


def test_compiled_once_and_named_after_the_zip_that_ran(tmp_path):
    cache = str(tmp_path / 'cache')
    first = _zip(str(tmp_path / 'a.zip'), 'one')
    assert _run(first, cache) == ['one', os.path.join(first, 'probe_mod.py')]
    assert len(os.listdir(cache)) == 1
    # The same source in another zip (each module run has its own): read from the cache, named anew.
    second = _zip(str(tmp_path / 'b.zip'), 'one')
    assert _run(second, cache) == ['one', os.path.join(second, 'probe_mod.py')]
    assert len(os.listdir(cache)) == 1


def test_a_changed_source_is_compiled_anew(tmp_path):
    cache = str(tmp_path / 'cache')
    assert _run(_zip(str(tmp_path / 'a.zip'), 'one'), cache)[0] == 'one'
    assert _run(_zip(str(tmp_path / 'b.zip'), 'two'), cache)[0] == 'two'
    assert len(os.listdir(cache)) == 2


def test_a_broken_or_unwritable_cache_only_costs_the_compile(tmp_path):
    cache = tmp_path / 'cache'
    _run(_zip(str(tmp_path / 'a.zip'), 'one'), str(cache))
    # Bytes that are no marshal data, and marshal data that is no code (None).
    for garbage, name in ((b'not marshal data', 'b.zip'), (b'N', 'c.zip')):
        for entry in cache.iterdir():
            entry.write_bytes(garbage)
        assert _run(_zip(str(tmp_path / name), 'one'), str(cache))[0] == 'one'
    blocked = tmp_path / 'file'
    blocked.write_text('a file where the cache directory would be')
    assert _run(_zip(str(tmp_path / 'd.zip'), 'one'), str(blocked / 'cache'))[0] == 'one'
