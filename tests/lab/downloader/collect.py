# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Copy into an output root what the stand-in's download-to-cache needs to run, and nothing else:
the python3 binary, the shared libraries it and the imported extension modules link, and the
standard library modules the downloader imports (found by importing it). Used by the first stage
of tests/lab/downloader/Dockerfile.

    python3 collect.py SOURCE_DIR OUT_DIR
"""

import contextlib
import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading


def exercise(download_to_cache):
    """Run the downloader's every path once (help, check, a whole download from a local server),
    so that the modules it loads lazily are imported too; fail when the download fails."""
    work = tempfile.mkdtemp()
    source = os.path.join(work, 'source')
    os.makedirs(source)
    payload = b'collect.py' * 1000
    with open(os.path.join(source, 'weights.bin'), 'wb') as handle:
        handle.write(payload)
    manifest = {'name': 'collect', 'files': [{'name': 'weights.bin', 'size': len(payload),
                                              'sha256': hashlib.sha256(payload).hexdigest()}]}
    with open(os.path.join(source, 'manifest.json'), 'w') as handle:
        json.dump(manifest, handle)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=source)
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ['NIM_CACHE_PATH'] = os.path.join(work, 'cache')
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                download_to_cache.main(['--help'])
            except SystemExit:
                pass
        download_to_cache.main(['--check'])
        url = 'http://127.0.0.1:%d' % server.server_address[1]
        if download_to_cache.main(['--model-url', url]) != 0 or download_to_cache.main(['--check']) != 0:
            raise RuntimeError('the downloader failed on a local source')
    finally:
        server.shutdown()
        shutil.rmtree(work)


def needed_files(source_dir):
    """Return the absolute paths the downloader needs, by importing and running it."""
    sys.path.insert(0, source_dir)
    import download_to_cache  # pylint: disable=import-outside-toplevel
    exercise(download_to_cache)
    # Codecs that urllib and the text I/O may load lazily.
    import encodings.ascii  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    import encodings.idna  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    import encodings.latin_1  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    import encodings.utf_8  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    paths = {os.path.realpath(sys.executable)}
    for module in list(sys.modules.values()):
        path = getattr(module, '__file__', None)
        if path and path.startswith(sys.base_prefix + '/lib/python3'):
            paths.add(path)
    linked = [p for p in paths if p.endswith('.so')] + [os.path.realpath(sys.executable)]
    ldd = subprocess.run(['ldd'] + linked, capture_output=True, text=True, check=True).stdout
    for word in ldd.split():
        if word.startswith('/') and os.path.exists(word):
            paths.add(word)
            paths.add(os.path.realpath(word))
    return sorted(paths)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    source_dir, out = argv
    paths = needed_files(source_dir)
    for path in paths:
        dest = out + path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(path, dest)
    print('collect.py: %d files' % len(paths))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
