"""download-to-cache of the lab's stand-in NIM: put the model into NIM_CACHE_PATH once.

The model comes from NIM_STANDIN_MODEL_URL (a directory serving manifest.json and the files it
lists, each with its sha256). The cache is complete when its marker names the sha256 of the
cached manifest and every listed file has the listed size and sha256; then nothing is fetched.
A lock in the cache keeps concurrent callers (the launcher's one-shot run and the server's own
start) from downloading twice. Exit status: 0 complete, 1 failed, 2 usage.

    download-to-cache [--check] [--profile ID] [--model-url URL]
"""

import argparse
import fcntl
import hashlib
import http.client
import json
import os
import sys
import time
import urllib.request

SUBDIR = 'nimstack-standin'
MARKER = '.complete'
CHUNK = 1 << 16


def log(message):
    sys.stderr.write('download-to-cache: %s\n' % message)
    sys.stderr.flush()


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(CHUNK), b''):
            digest.update(block)
    return digest.hexdigest()


def model_dir(cache_path):
    return os.path.join(cache_path, SUBDIR)


def complete(directory):
    """Return the manifest when the cache holds the whole model, else None."""
    try:
        with open(os.path.join(directory, 'manifest.json'), 'rb') as handle:
            raw = handle.read()
        with open(os.path.join(directory, MARKER)) as handle:
            marker = handle.read().strip()
        if marker != hashlib.sha256(raw).hexdigest():
            return None
        manifest = json.loads(raw.decode('utf-8'))
        for item in manifest['files']:
            path = os.path.join(directory, item['name'])
            if os.path.getsize(path) != item['size'] or sha256_file(path) != item['sha256']:
                return None
        return manifest
    except (OSError, ValueError, KeyError, TypeError):
        return None


def fetch(url, dest, deadline, expect_sha=None, expect_size=None):
    """Stream url into dest (via a temporary name, dest.part); return its sha256. A file with a
    known sha256 whose dest.part an earlier download left is resumed from where it stopped (an
    HTTP Range request); a source that answers with the whole file starts it again. Nothing but
    the whole file, with the sha256 the manifest names, ever takes dest's name."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise RuntimeError('download deadline passed before %s' % url)
    digest = hashlib.sha256()
    tmp = dest + '.part'
    have = os.path.getsize(tmp) if expect_sha is not None and os.path.exists(tmp) else 0
    request = urllib.request.Request(url, headers={'Range': 'bytes=%d-' % have} if have else {})
    with urllib.request.urlopen(request, timeout=min(30.0, remaining)) as response:
        resumed = have and response.status == 206
        if resumed:
            with open(tmp, 'rb') as handle:
                for block in iter(lambda: handle.read(CHUNK), b''):
                    digest.update(block)
            log('resuming %s from byte %d' % (os.path.basename(dest), have))
        with open(tmp, 'ab' if resumed else 'wb') as out:
            try:
                for block in iter(lambda: response.read(CHUNK), b''):
                    if time.monotonic() > deadline:
                        raise RuntimeError('download of %s exceeded NIM_STANDIN_DOWNLOAD_TIMEOUT' % url)
                    digest.update(block)
                    out.write(block)
            except http.client.HTTPException as exc:
                raise RuntimeError('%s: the transfer broke: %r' % (url, exc))
    if expect_size is not None and os.path.getsize(tmp) < expect_size:
        # Kept: the next download resumes from here.
        raise RuntimeError('%s cut short after %d of %d bytes (kept in %s; the next download resumes from there)'
                           % (url, os.path.getsize(tmp), expect_size, os.path.basename(tmp)))
    if expect_sha is not None and digest.hexdigest() != expect_sha:
        os.unlink(tmp)
        raise RuntimeError('%s: sha256 %s, manifest says %s' % (url, digest.hexdigest(), expect_sha))
    os.replace(tmp, dest)
    return digest.hexdigest()


def download(url, directory, timeout):
    deadline = time.monotonic() + timeout
    base = url.rstrip('/')
    os.makedirs(directory, exist_ok=True)
    manifest_path = os.path.join(directory, 'manifest.json')
    # The marker goes first, so a download cut short never looks complete.
    try:
        os.unlink(os.path.join(directory, MARKER))
    except FileNotFoundError:
        pass
    fetch(base + '/manifest.json', manifest_path, deadline)
    with open(manifest_path, 'rb') as handle:
        raw = handle.read()
    manifest = json.loads(raw.decode('utf-8'))
    for item in manifest['files']:
        name = item['name']
        if '/' in name or name.startswith('.'):
            raise RuntimeError('manifest names an unsafe file: %r' % name)
        started = time.monotonic()
        fetch('%s/%s' % (base, name), os.path.join(directory, name), deadline, item['sha256'], item['size'])
        log('fetched %s (%d bytes) in %.1f s' % (name, item['size'], time.monotonic() - started))
    with open(os.path.join(directory, MARKER) + '.tmp', 'w') as handle:
        handle.write(hashlib.sha256(raw).hexdigest() + '\n')
    os.replace(os.path.join(directory, MARKER) + '.tmp', os.path.join(directory, MARKER))
    return manifest


def main(argv):
    parser = argparse.ArgumentParser(prog='download-to-cache', description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='only report whether the cache is complete')
    parser.add_argument('--profile', help='accepted for command lines written for a real NIM; one model here')
    parser.add_argument('--model-url', default=os.environ.get('NIM_STANDIN_MODEL_URL'))
    args = parser.parse_args(argv)
    cache_path = os.environ.get('NIM_CACHE_PATH', '/model-store')
    directory = model_dir(cache_path)
    timeout = float(os.environ.get('NIM_STANDIN_DOWNLOAD_TIMEOUT', '600'))

    if complete(directory):
        log('cache %s is complete, nothing to download' % directory)
        return 0
    if args.check:
        log('cache %s is not complete' % directory)
        return 1
    if not args.model_url:
        log('cache %s is not complete and NIM_STANDIN_MODEL_URL is not set' % directory)
        return 1
    try:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(cache_path, SUBDIR + '.lock'), 'a') as lock:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise RuntimeError('another download held the cache lock for %.0f s' % timeout)
                    time.sleep(0.5)
            # Whoever held the lock may have finished the job.
            if complete(directory):
                log('cache %s was completed by another download' % directory)
                return 0
            started = time.monotonic()
            manifest = download(args.model_url, directory, timeout)
            log('model %s cached in %s in %.1f s' % (manifest.get('name'), directory, time.monotonic() - started))
    except PermissionError as exc:
        log('failed: %s (the cache must be writable by uid %d, the user NIM runs as)' % (exc, os.getuid()))
        return 1
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        log('failed: %s' % exc)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
