# A bytecode cache for Ansible's module runs in the test suite. Ansible sends each module as a zip
# of its source (AnsiballZ), and Python's zipimport compiles every file of it at every run, reading
# and writing no bytecode: on Debian 12's python3.11, 0.12 of the 0.41 CPU-s of a `stat` run on a
# lab host, and about 0.2 of a Kubernetes module's run on the controller. Here each compiled file
# is kept by the hash of the interpreter's bytecode version, its path inside the zip and its
# source, so each file is compiled once: the same source gives the same code; only its file name
# is set again to the zip it came from (tracebacks name the file that ran). Loaded at every python3
# start on a lab host (lab-pyc.pth, host.Dockerfile) and, as sitecustomize, by the lab streams'
# controller processes (test-labs.sh); LAB_PYC_DIR says where the cache is. Tests only: the
# collection never installs it, and python without it runs the same modules, slower.
import marshal
import os
import sys
import zipimport

_DIR = os.environ.get('LAB_PYC_DIR') or '/var/cache/lab-pyc'
_compile = zipimport._compile_source  # pylint: disable=protected-access


def _renamed(code, filename):
    consts = tuple(_renamed(c, filename) if isinstance(c, _CODE) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


_CODE = type(_renamed.__code__)  # types.CodeType, without importing types at every python3 start


def _compile_cached(pathname, source):
    # Imported here, not at every python3 start: only a module run compiles from a zip.
    import hashlib  # pylint: disable=import-outside-toplevel
    from importlib.util import MAGIC_NUMBER  # pylint: disable=import-outside-toplevel
    inside = pathname.rpartition('.zip' + os.sep)[2]
    # The interpreter's bytecode version and optimisation level are part of the key: two Pythons
    # may share a cache directory, and neither may read the other's code.
    key = b'\0'.join([MAGIC_NUMBER, str(sys.flags.optimize).encode(), inside.encode(), source])
    path = os.path.join(_DIR, hashlib.sha256(key).hexdigest())
    try:
        with open(path, 'rb') as f:
            cached = marshal.load(f)
        if isinstance(cached, _CODE):
            return _renamed(cached, pathname)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = _compile(pathname, source)
    try:
        os.makedirs(_DIR, mode=0o700, exist_ok=True)
        tmp = '%s.%d' % (path, os.getpid())
        with open(tmp, 'wb') as f:
            marshal.dump(code, f)
        os.replace(tmp, path)
    except OSError:
        pass
    return code


zipimport._compile_source = _compile_cached  # pylint: disable=protected-access
