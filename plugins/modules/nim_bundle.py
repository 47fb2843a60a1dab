# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_bundle
short_description: Make or refresh the offline bundle on a connected machine
version_added: 0.9.0
description:
  - Writes, under O(dest), one flat apt repository per platform holding the named packages and every
    dependency a host of the platform's base image lacks, signs each with the bundle's own key, and
    writes C(manifest.json) listing every file with its source, version, size and sha256.
  - The packages are resolved and downloaded by the platform's own apt, in a throwaway container of
    O(platforms)' image (C(docker run --rm)), so that the dependencies are the platform's, from the
    platform's own sources and the vendors' repositories of O(sources), each verified with its own key. The index
    (C(Packages), C(Release)) is made by C(apt-ftparchive) in the same container; the signature by
    C(gpg) on this machine, with a key kept in O(signing_dir), outside the bundle.
  - A platform whose packages, image, vendors' repositories and keys are those the manifest records, and whose files are
    all there with their sizes, is left alone and fetches nothing. Otherwise apt downloads only
    what the repository lacks (a file already there with the right hash is kept), and files no
    longer needed are removed.
  - Saves the images of O(images) with C(docker save) into C(images/) and fetches the Kubernetes components' charts and
    manifests of O(files) into C(files/), each again only when it changed.
  - Fills the model caches of O(models) with each group's own downloader into C(models/), again only when what fills it
    changed.
  - Writes the collections of O(collections) into C(collections/), again only when they changed.
  - Runs where the internet is, on the controller of the connected side (playbooks/bundle.yml calls it).
author:
  - nimstack maintainers (@nimstack)
options:
  dest:
    description: The bundle's directory (made when missing).
    type: path
    required: true
  signing_dir:
    description:
      - The GnuPG home of the bundle's signing key (made with a new ed25519 key when missing). Keep it
        out of the bundle; the public key goes into the bundle as C(keys/bundle.asc).
    type: path
    required: true
  platforms:
    description: Each platform (C(debian-12), C(ubuntu-22.04), C(ubuntu-24.04)) and the container image of its base system.
    type: dict
    required: true
  packages:
    description: Each platform and the names of the packages its hosts install.
    type: dict
    required: true
  sources:
    description:
      - Each platform and the vendors' flat apt repositories its packages come from besides the platform's
        own (C(nimstack.multinode.bundle_sources)), each a dict of C(name), C(uri) and C(key_url).
      - Each key is fetched once into C(keys/<name>-<platform>.asc) of the bundle (again only when its URL
        changes) and apt verifies the repository with it; the manifest records its URL and sha256.
    type: dict
    default: {}
  images:
    description:
      - The images to carry in, each saved with C(docker save) into C(images/), its file named after its
        reference with slashes, colons and at signs as underscores (C(nimstack.multinode.bundle_images) names
        the inventory's). Each must be on this machine (the playbook pulls those that are not).
      - An image whose ID and file are those the manifest records is not saved again; an archive of an image
        no longer named is removed. C(images/SHA256SUMS) lists each archive's sha256 (the nodes check what they
        download against it).
    type: list
    elements: str
    default: []
  files:
    description:
      - The Kubernetes components' files to carry in (C(nimstack.multinode.bundle_k8s_files) names the inventory's),
        each written to C(files/<name>) and listed in C(files/SHA256SUMS) and the manifest with its source, size and sha256.
      - Each a dict of C(name) and one source, C(url) (fetched as it is), C(repo) with C(chart) and C(version) (a Helm
        repository, the chart's URL read from its C(index.yaml) as helm reads it) or C(oci) with C(version) (an OCI chart,
        pulled with C(helm pull), so helm must be on this machine).
      - A file whose source is the one the manifest records and that is there with its sha256 is not fetched again; a
        file no longer named is removed.
    type: list
    elements: dict
    default: []
  models:
    description:
      - The model caches to carry in (C(nimstack.multinode.bundle_models) names the inventory's), each a dict of C(file)
        (its name in C(models/)), C(image) and C(profile) (what it is the model of), C(downloader) (the image that fills
        it), C(command), C(env) and C(user).
      - Each is filled as the group's leader would fill it - C(docker run --rm) of the downloader with the command, as
        the user, with the env (and O(ngc_api_key)) from a file of this machine's that only its owner reads, never from
        the command line, the cache of an empty directory at C(NIM_CACHE_PATH) - then written into C(models/<file>) as
        one tar archive (owned by the user's numeric ids, as the downloader wrote it) and listed in C(models/SHA256SUMS)
        and the manifest with its source, size and sha256. Filling it takes the model's size twice on this machine for a
        while (the filled cache, then its archive).
      - A cache whose downloader image ID, command and env are those the manifest records and that is there with its size
        is not filled again; an archive no longer named is removed.
    type: list
    elements: dict
    default: []
  collections:
    description:
      - The collections to carry in for the site's controller (C(nimstack.multinode.bundle_collections) names this
        collection's and those it needs), each a dict of C(name), C(version), C(path) (its directory on this machine) and
        C(installed).
      - Each is written to C(collections/<namespace>-<name>-<version>.tar.gz), a Galaxy artifact that
        C(ansible-galaxy collection install --offline) takes, and listed in C(collections/SHA256SUMS) and the manifest. An
        installed copy (C(installed) true) is packed from the files its C(FILES.json) lists, each checked against the
        sha256 recorded there (a file changed since the install fails the run, naming it); a source tree is built with
        C(ansible-galaxy collection build), as its C(galaxy.yml) says.
      - A collection whose C(MANIFEST.json) (which holds the sha256 of its C(FILES.json), and so of every file; for an
        installed copy, with the names of the files that are there) is the one the manifest records, and whose artifact is
        there with its size, is not written again; an artifact no longer named is removed.
    type: list
    elements: dict
    default: []
  galaxy:
    description:
      - The ansible-galaxy command, for the source trees of O(collections); looked for first beside the Python that runs
        the module (the controller's, for the implicit localhost), then in E(PATH).
    type: str
    default: ansible-galaxy
  ngc_api_key:
    description: The NGC API key the downloaders of O(models) read (C(NGC_API_KEY)); empty for none.
    type: str
    default: ''
  helm:
    description: The helm command, for charts of O(files) in an OCI registry.
    type: str
    default: helm
  docker:
    description: The docker command.
    type: str
    default: docker
attributes:
  check_mode:
    support: full
    description: Says which platforms would be fetched again, and fetches nothing.
  diff_mode:
    support: none
    description: The manifest lists what changed.
  platform:
    support: full
    platforms: posix
    description: Needs Docker and gpg on the machine it runs on.
'''

EXAMPLES = r'''
- name: Make the bundle's repositories
  nimstack.multinode.nim_bundle:
    dest: /srv/nimstack-bundle
    signing_dir: /root/.nimstack-bundle-key
    platforms:
      debian-12: debian:12
    packages:
      debian-12: [docker.io, ca-certificates, haproxy]
'''

RETURN = r'''
fetched:
  description: The platforms whose packages were downloaded in this run (empty when nothing changed).
  returned: always
  type: list
  elements: str
files:
  description: The number of files of each platform's repository.
  returned: always
  type: dict
bytes:
  description: The size of each platform's repository's packages in bytes.
  returned: always
  type: dict
saved:
  description: The images saved in this run (empty when none changed).
  returned: always
  type: list
  elements: str
loaded:
  description: The names of the files of O(files) fetched in this run (empty when none changed).
  returned: always
  type: list
  elements: str
image_bytes:
  description: The size of the images' archives in bytes.
  returned: always
  type: int
filled:
  description: The model caches of O(models) filled in this run (their files; empty when none changed).
  returned: always
  type: list
  elements: str
model_bytes:
  description: The size of the model caches' archives in bytes.
  returned: always
  type: int
packed:
  description: The collections of O(collections) written in this run (their names; empty when none changed).
  returned: always
  type: list
  elements: str
collection_bytes:
  description: The size of the collections' artifacts in bytes.
  returned: always
  type: int
manifest:
  description: The path of manifest.json.
  returned: always
  type: str
'''

import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils import bundle

# In the platform's container: resolve the packages as its apt would on a host of that base; list
# what it would download (URI, file, size, hash) against an empty cache, so the list is whole
# whatever the pool already holds; download into the pool, where apt keeps a file that is there with
# its hash; drop what the list no longer names; index the pool with apt-ftparchive (installed in the
# throwaway container only).
# The vendors' repositories: SOURCES, one "<uri> <key file> <suite> [<component>...]" line each (none:
# an empty list).
VENDORS = r'''
printf '%s\n' "${SOURCES:-}" | while read -r uri key rest; do
  if [ -n "$uri" ]; then echo "deb [signed-by=/keys/$key] $uri $rest"; fi
done > "${VENDOR_LIST:-/etc/apt/sources.list.d/nimstack-bundle-vendors.list}"
'''
SCRIPT = r'''
set -eu
export DEBIAN_FRONTEND=noninteractive
''' + VENDORS + r'''
apt-get update -qq >/dev/null
mkdir -p /tmp/empty/partial /repo/pool/partial
apt-get install -qq -y --no-install-recommends --print-uris -o Dir::Cache::archives=/tmp/empty/ "$@" \
  | grep "^'" > /repo/.uris || true
apt-get install -qq -y --no-install-recommends --download-only -o Dir::Cache::archives=/repo/pool/ "$@" >/dev/null
rmdir /repo/pool/partial
rm -f /repo/pool/lock
for f in /repo/pool/*; do
  grep -qF " ${f##*/} " /repo/.uris || rm -f "$f"
done
apt-get install -qq -y --no-install-recommends apt-utils >/dev/null
cd /repo
apt-ftparchive packages pool > Packages
gzip -9nc Packages > Packages.gz
apt-ftparchive -o APT::FTPArchive::Release::Origin=nimstack-bundle -o APT::FTPArchive::Release::Label=nimstack-bundle \
  release . > Release
'''


def sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def parse_uris(text):
    """{file name: {uri, size}} from apt-get --print-uris ('URI' file size hash)."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith("'"):
            found[parts[1]] = {'uri': parts[0].strip("'"), 'size': int(parts[2]) if parts[2].isdigit() else None}
    return found


def parse_packages(text):
    """[{name, version, path}] of an apt Packages index."""
    entries, current = [], {}
    for line in text.splitlines() + ['']:
        if not line.strip():
            if current.get('Package'):
                entries.append({'name': current['Package'], 'version': current.get('Version', ''),
                                'path': current.get('Filename', '').lstrip('./')})
            current = {}
        elif not line.startswith((' ', '\t')) and ':' in line:
            key, _sep, value = line.partition(':')
            current[key] = value.strip()
    return entries


def fingerprint(image_id, names, key, sources=()):
    """What a platform's repository is made from: the base image, the packages, the bundle's key and the
    vendors' repositories with their keys' hashes."""
    made_of = [image_id, sorted(names), key]
    if sources:
        made_of.append(sorted((s['uri'], s.get('suite', ''), s.get('components', ''), s['sha256']) for s in sources))
    return hashlib.sha256(json.dumps(made_of).encode('utf-8')).hexdigest()


def key_file(source, platform, text):
    """The name of a vendor's key in keys/: apt reads an armored key only with the .asc suffix."""
    return '%s-%s.%s' % (source['name'], platform, 'asc' if text.lstrip().startswith(b'-----BEGIN') else 'gpg')


# Where this machine keeps its certificate authorities, handed to the container's apt for https
# sources (the platform's image may have none, and installing them would hide them from the pool).
CA_FILES = ('/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt')


def intact(dest, record):
    """Every file the platform's record lists is in the bundle with its size."""
    for item in record.get('files') or []:
        path = os.path.join(dest, item['path'])
        if not os.path.isfile(path) or os.path.getsize(path) != item.get('size'):
            return False
    return bool(record.get('files'))


def write_checksums(folder, entries):
    """folder/SHA256SUMS, a "<sha256>  <name>" line per (sha256, name) as sha256sum writes them (and
    get_url's checksum reads them); removed where there is nothing to list."""
    sums = os.path.join(folder, bundle.CHECKSUMS)
    text = ''.join('%s  %s\n' % entry for entry in sorted(entries, key=lambda e: e[1]))
    if entries and (not os.path.exists(sums) or open(sums).read() != text):
        with open(sums + '.tmp', 'w') as handle:
            handle.write(text)
        os.chmod(sums + '.tmp', 0o644)
        os.replace(sums + '.tmp', sums)
    elif not entries and os.path.exists(sums):
        os.remove(sums)


def publish(full):
    """Put full.tmp in place as full, readable by all (the bundle is served; docker save writes for its
    owner only)."""
    os.chmod(full + '.tmp', 0o644)
    os.replace(full + '.tmp', full)


def settle(folder, records):
    """Drop from folder what no record lists (a model's filling scratch, .fill-*, aside) and write
    folder/SHA256SUMS of the records (get_url's checksum on the hosts reads it)."""
    kept = set(os.path.basename(r['path']) for r in records)
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if name not in kept and name != bundle.CHECKSUMS and not name.startswith('.fill-'):
            os.remove(os.path.join(folder, name))
    write_checksums(folder, [(r['sha256'], os.path.basename(r['path'])) for r in records])


def installed_collection(path):
    """(problem, copy) of the installed collection at path, copy a dict of its MANIFEST.json's info and
    sha256, its FILES.json (listed) and the entries of that whose files are there (kept), each file read
    once. A distribution may leave out some of what FILES.json lists (the ansible package leaves out
    the collections' tests): those are not carried."""
    with open(os.path.join(path, 'MANIFEST.json'), 'rb') as handle:
        manifest = handle.read()
    info = json.loads(manifest.decode('utf-8'))
    with open(os.path.join(path, 'FILES.json'), 'rb') as handle:
        files = handle.read()
    named = (info.get('file_manifest_file') or {}).get('chksum_sha256')
    if hashlib.sha256(files).hexdigest() != named:
        return 'its FILES.json is not the one its MANIFEST.json names (sha256 %s)' % named, None
    listed = json.loads(files.decode('utf-8'))
    kept = []
    for entry in listed.get('files') or []:
        name = str(entry.get('name') or '')
        if name in ('', '.') or name.startswith('/') or '..' in name.split('/'):
            continue
        if os.path.lexists(os.path.join(path, name)):
            kept.append(entry)
    return None, {'info': info, 'sha256': hashlib.sha256(manifest).hexdigest(), 'listed': listed, 'kept': kept}


def pack_collection(path, copy, out):
    """Write the installed collection at path (installed_collection's copy of it) as a Galaxy artifact to out:
    every file and directory its FILES.json lists and that is there, each file checked against its sha256
    there, with a FILES.json of those and a MANIFEST.json naming it (ansible-galaxy checks every file against
    them when it installs). Owned by root, with a fixed time, so that the same files make the same artifact.
    (A problem as a message or None, the number of files FILES.json lists that are not there.)"""
    listed, kept = copy['listed'], copy['kept']
    files = dict(listed, files=[{'name': '.', 'ftype': 'dir', 'chksum_type': None, 'chksum_sha256': None, 'format': 1}] + kept)
    files_json = json.dumps(files, indent=4, sort_keys=True).encode('utf-8')
    info = dict(copy['info'])
    info['file_manifest_file'] = dict(info.get('file_manifest_file') or {}, name='FILES.json', ftype='file',
                                      chksum_type='sha256', chksum_sha256=hashlib.sha256(files_json).hexdigest())
    manifest_json = json.dumps(info, indent=4, sort_keys=True).encode('utf-8')

    def normal(member):
        member.uid = member.gid = member.mtime = 0
        member.uname = member.gname = ''
        member.mode = 0o755 if member.isdir() or member.mode & 0o111 else 0o644
        return member

    with open(out, 'wb') as raw:
        with gzip.GzipFile(filename='', mode='wb', fileobj=raw, mtime=0) as zipped:
            with tarfile.open(fileobj=zipped, mode='w', format=tarfile.PAX_FORMAT) as archive:
                for name, data in (('MANIFEST.json', manifest_json), ('FILES.json', files_json)):
                    member = normal(tarfile.TarInfo(name))
                    member.size = len(data)
                    archive.addfile(member, io.BytesIO(data))
                for entry in kept:
                    full = os.path.join(path, entry['name'])
                    if entry.get('ftype') == 'file' and not os.path.islink(full) \
                            and (not os.path.isfile(full) or sha256(full) != entry.get('chksum_sha256')):
                        return '%s changed since it was installed (its FILES.json says otherwise)' % entry['name'], 0
                    archive.add(full, arcname=entry['name'], recursive=False, filter=normal)
    return None, len(listed.get('files') or []) - 1 - len(kept)


class Maker(object):
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.dest = self.p['dest']
        self.docker = module.get_bin_path(self.p['docker'], required=True)
        self.gpg = module.get_bin_path('gpg', required=True)

    def run(self, cmd, what=None):
        rc, out, err = self.module.run_command(cmd)
        if rc != 0:
            self.module.fail_json(msg='%s failed (rc %d): %s' % (what or ' '.join(cmd[:4]), rc, (err or out)[-2000:]))
        return out

    def gpg_cmd(self, *args):
        return [self.gpg, '--batch', '--quiet', '--homedir', self.p['signing_dir']] + list(args)

    def key(self):
        """The signing key's fingerprint, made once."""
        home = self.p['signing_dir']
        if not os.path.isdir(home):
            os.makedirs(home, 0o700)
        os.chmod(home, 0o700)
        _rc, out, _err = self.module.run_command(self.gpg_cmd('--with-colons', '--list-secret-keys'))
        fprs = [line.split(':')[9] for line in out.splitlines() if line.startswith('fpr:')]
        if not fprs:
            if self.module.check_mode:
                return ''
            self.run(self.gpg_cmd('--passphrase', '', '--pinentry-mode', 'loopback', '--quick-gen-key',
                                  'nimstack offline bundle', 'ed25519', 'sign', 'never'))
            out = self.run(self.gpg_cmd('--with-colons', '--list-secret-keys'))
            fprs = [line.split(':')[9] for line in out.splitlines() if line.startswith('fpr:')]
        return fprs[0]

    def image_id(self, image, what='the image of a platform'):
        rc, out, err = self.module.run_command([self.docker, 'image', 'inspect', '--format', '{{.Id}}', image])
        if rc != 0:
            self.module.fail_json(msg='%s is not on this machine: %s (%s); pull or build it first'
                                      % (what, image, err.strip()))
        return out.strip()

    def images(self, manifest):
        """Save each image whose archive is missing or of another ID; drop the archives no longer named.
        The references saved in this run."""
        old = dict((i.get('ref'), i) for i in manifest.get('images') or [] if isinstance(i, dict))
        records, saved = [], []
        for ref in sorted(set(str(r) for r in self.p['images'])):
            image_id = self.image_id(ref, what='an image to carry in')
            path = 'images/' + bundle.image_file(ref)
            record = old.get(ref)
            full = os.path.join(self.dest, path)
            if not (record and record.get('id') == image_id and os.path.isfile(full)
                    and os.path.getsize(full) == record.get('size')):
                saved.append(ref)
                if self.module.check_mode:
                    continue
                os.makedirs(os.path.dirname(full), exist_ok=True)
                self.run([self.docker, 'image', 'save', '-o', full + '.tmp', ref], what='saving the image %s' % ref)
                publish(full)
                record = {'ref': ref, 'id': image_id, 'path': path, 'size': os.path.getsize(full), 'sha256': sha256(full),
                          'source': 'docker image save %s' % ref}
            records.append(record)
        if not self.module.check_mode:
            settle(os.path.join(self.dest, 'images'), records)
            manifest['images'] = records
        return saved

    def fetch_file(self, item, full):
        """Write one file of O(files) to full, from its source."""
        if item.get('oci'):
            helm = self.module.get_bin_path(self.p['helm'], required=True)
            scratch = full + '.pull'
            shutil.rmtree(scratch, ignore_errors=True)
            os.makedirs(scratch)
            try:
                self.run([helm, 'pull', item['oci'], '--version', item['version'], '--destination', scratch],
                         what='pulling the chart %s at %s' % (item['oci'], item['version']))
                pulled = [n for n in os.listdir(scratch) if n.endswith('.tgz')]
                if len(pulled) != 1:
                    self.module.fail_json(msg='helm pull %s --version %s left %s, not one chart archive'
                                              % (item['oci'], item['version'], pulled))
                os.replace(os.path.join(scratch, pulled[0]), full + '.tmp')
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            return
        url = item.get('url')
        try:
            if item.get('repo'):
                index = item['repo'].rstrip('/') + '/index.yaml'
                url = bundle.chart_url(bundle.fetch(index, timeout=60), item['repo'], item['chart'], item['version'])
            data = bundle.fetch(url, timeout=300)
        except (OSError, IOError, ValueError) as exc:
            self.module.fail_json(msg='cannot fetch %s for the bundle: %s' % (item['name'], exc))
        with open(full + '.tmp', 'wb') as handle:
            handle.write(data)

    def files(self, manifest):
        """Fetch each file of O(files) whose source changed or that is not there with its hash, drop
        those no longer named, write files/SHA256SUMS. The names fetched in this run."""
        old = dict((f.get('name'), f) for f in manifest.get('files') or [] if isinstance(f, dict))
        folder = os.path.join(self.dest, bundle.FILES)
        records, loaded = [], []
        for item in sorted(self.p['files'], key=lambda i: str(i.get('name'))):
            item = dict((k, str(v)) for k, v in item.items() if k in ('name', 'url', 'repo', 'chart', 'version', 'oci') and v)
            name = item.get('name', '')
            sources = [k for k in ('url', 'repo', 'oci') if k in item]
            if not name or '/' in name or name.startswith('.') or name == bundle.CHECKSUMS or len(sources) != 1 \
                    or ('repo' in item and not ('chart' in item and 'version' in item)) or ('oci' in item and 'version' not in item):
                self.module.fail_json(msg='files: each item needs a plain name and one source (url; repo with chart and '
                                          'version; oci with version), got %r' % (item,))
            source = dict((k, item[k]) for k in ('url', 'repo', 'chart', 'version', 'oci') if k in item)
            record = old.get(name)
            full = os.path.join(folder, name)
            if not (record and record.get('from') == source and os.path.isfile(full)
                    and os.path.getsize(full) == record.get('size') and sha256(full) == record.get('sha256')):
                loaded.append(name)
                if self.module.check_mode:
                    continue
                os.makedirs(folder, exist_ok=True)
                self.fetch_file(item, full)
                publish(full)
                record = {'name': name, 'path': '%s/%s' % (bundle.FILES, name), 'from': source,
                          'source': source.get('url') or source.get('oci') or '%s (%s %s)' % (
                              source['repo'], source['chart'], source['version']),
                          'version': source.get('version', ''), 'size': os.path.getsize(full), 'sha256': sha256(full)}
            records.append(record)
        if not self.module.check_mode:
            settle(folder, records)
            manifest['files'] = records
        return loaded

    def fill_model(self, model, full):
        """Fill one cache of O(models) with its downloader and write its archive to full.tmp."""
        folder = os.path.dirname(full)
        scratch = tempfile.mkdtemp(prefix='.fill-', dir=folder)
        private = tempfile.mkdtemp(prefix='nimstack-bundle-env-')
        try:
            cache = os.path.join(scratch, 'cache')
            os.mkdir(cache)
            uid, gid = (int(x) for x in model['user'].split(':'))
            if os.geteuid() == 0:
                os.chown(cache, uid, gid)
            else:
                os.chmod(cache, 0o777)
            env = dict(model['env'])
            if self.p['ngc_api_key']:
                env['NGC_API_KEY'] = self.p['ngc_api_key']
            env_file = os.path.join(private, 'env')
            with os.fdopen(os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), 'w') as handle:
                handle.write(''.join('%s=%s\n' % item for item in sorted(env.items())))
            target = env.get('NIM_CACHE_PATH') or '/model-store'
            rc, out, err = self.module.run_command(
                [self.docker, 'run', '--rm', '--network', 'host', '--user', model['user'], '--env-file', env_file,
                 '-v', '%s:%s' % (cache, target), model['downloader']] + model['command'])
            if rc != 0:
                said = [line for line in (out + '\n' + err).splitlines() if line.strip()][-8:]
                self.module.fail_json(msg='the model cache of %s (profile %s) could not be filled: %s %s ended with rc %d: %s'
                                          % (model['image'], model['profile'] or 'none', model['downloader'],
                                             ' '.join(model['command']), rc, ' | '.join(said) or '(no output)'))
            with tarfile.open(full + '.tmp', 'w') as archive:
                def owned(info):
                    info.uid, info.gid, info.uname, info.gname = uid, gid, '', ''
                    return info
                for name in sorted(os.listdir(cache)):
                    archive.add(os.path.join(cache, name), arcname=name, filter=owned)
        finally:
            shutil.rmtree(private, ignore_errors=True)
            # The downloader's files belong to its user: removed as this machine's user may.
            shutil.rmtree(scratch, ignore_errors=True)
        if os.path.isdir(scratch):
            self.run([self.docker, 'run', '--rm', '--user', '0:0', '--entrypoint', 'rm', '-v', '%s:/scratch' % folder,
                      model['downloader'], '-rf', '/scratch/' + os.path.basename(scratch)],
                     what='removing the filled cache %s' % scratch)

    def models(self, manifest):
        """Fill each cache of O(models) whose downloader image, command or env changed or that is not there
        with its size; drop those no longer named; write models/SHA256SUMS. The files filled in this run."""
        old = dict((m.get('file'), m) for m in manifest.get(bundle.MODELS) or [] if isinstance(m, dict))
        folder = os.path.join(self.dest, bundle.MODELS)
        records, filled = [], []
        for model in sorted(self.p['models'], key=lambda m: str(m.get('file'))):
            name = str(model.get('file') or '')
            if not name.endswith('.tar') or '/' in name or name.startswith('.') or not model.get('downloader') \
                    or not re.match(r'[0-9]+:[0-9]+\Z', str(model.get('user', ''))):
                self.module.fail_json(msg='models: each item needs a plain file name ending in .tar, a downloader and a '
                                          'user uid:gid, got %r' % (model,))
            model = {'file': name, 'image': str(model.get('image') or ''), 'profile': str(model.get('profile') or ''),
                     'downloader': str(model['downloader']), 'user': str(model['user']),
                     'command': [str(c) for c in model.get('command') or []],
                     'env': dict((str(k), str(v)) for k, v in (model.get('env') or {}).items())}
            unsafe = sorted(k for k, v in model['env'].items()
                            if not re.match(r'[A-Za-z_][A-Za-z0-9_]*\Z', k) or '\n' in v or '\r' in v)
            if unsafe:
                self.module.fail_json(msg='models: the env of %s has names or values a line of an env file cannot hold: %s'
                                          % (name, ', '.join(unsafe)))
            made_of = hashlib.sha256(json.dumps([self.image_id(model['downloader'], what='the downloader of a model'),
                                                 model['command'], sorted(model['env'].items()), model['user']])
                                     .encode('utf-8')).hexdigest()
            record = old.get(name)
            full = os.path.join(folder, name)
            if not (record and record.get('fingerprint') == made_of and os.path.isfile(full)
                    and os.path.getsize(full) == record.get('size')):
                filled.append(name)
                if self.module.check_mode:
                    continue
                os.makedirs(folder, exist_ok=True)
                self.fill_model(model, full)
                publish(full)
                record = {'file': name, 'path': '%s/%s' % (bundle.MODELS, name), 'image': model['image'],
                          'profile': model['profile'], 'downloader': model['downloader'], 'fingerprint': made_of,
                          'source': '%s %s, for %s%s' % (model['downloader'], ' '.join(model['command']), model['image'],
                                                         ' profile ' + model['profile'] if model['profile'] else ''),
                          'size': os.path.getsize(full), 'sha256': sha256(full)}
            records.append(record)
        if not self.module.check_mode:
            settle(folder, records)
            manifest[bundle.MODELS] = records
        return filled

    def build_collection(self, item, scratch):
        """Build the source tree of a collection of O(collections) into scratch with ansible-galaxy; its artifact
        and the sha256 of its MANIFEST.json."""
        # The ansible-galaxy of the Python that runs this module (the controller's) before any other.
        galaxy = self.module.get_bin_path(self.p['galaxy'], required=True, opt_dirs=[os.path.dirname(sys.executable)])
        self.run([galaxy, 'collection', 'build', item['path'], '--output-path', scratch, '--force'],
                 what='building the collection %s from %s' % (item['name'], item['path']))
        built = os.path.join(scratch, bundle.collection_file(item['name'], item['version']))
        if not os.path.isfile(built):
            self.module.fail_json(msg='ansible-galaxy collection build %s left %s, not %s'
                                      % (item['path'], sorted(os.listdir(scratch)), os.path.basename(built)))
        with tarfile.open(built) as archive:
            made_of = hashlib.sha256(archive.extractfile('MANIFEST.json').read()).hexdigest()
        return built, made_of

    def collections(self, manifest):
        """Write each collection of O(collections) whose MANIFEST.json changed or that is not there with its size;
        drop those no longer named; write collections/SHA256SUMS. The names written in this run."""
        old = dict((c.get('name'), c) for c in manifest.get(bundle.COLLECTIONS) or [] if isinstance(c, dict))
        folder = os.path.join(self.dest, bundle.COLLECTIONS)
        records, packed = [], []
        scratch = tempfile.mkdtemp(prefix='nimstack-bundle-collections-')
        try:
            for item in sorted(self.p['collections'], key=lambda c: str(c.get('name'))):
                item = {'name': str(item.get('name') or ''), 'version': str(item.get('version') or ''),
                        'path': str(item.get('path') or ''), 'installed': bool(item.get('installed'))}
                if not bundle.COLLECTION_NAME.match(item['name']) or not bundle.COLLECTION_VERSION.match(item['version']) \
                        or not os.path.isdir(item['path']):
                    self.module.fail_json(msg='collections: each item needs a name <namespace>.<name>, a version and the '
                                              'directory of the collection on this machine, got %r' % (item,))
                name = bundle.collection_file(item['name'], item['version'])
                full = os.path.join(folder, name)
                if item['installed']:
                    problem, copy = installed_collection(item['path'])
                    if problem:
                        self.module.fail_json(msg='the collection %s at %s cannot be carried in: %s; reinstall it'
                                                  % (item['name'], item['path'], problem))
                    built, source = None, 'the installed copy at %s (each file checked against its FILES.json)' % item['path']
                    made_of = hashlib.sha256(json.dumps([copy['sha256'], sorted(e['name'] for e in copy['kept'])])
                                             .encode('utf-8')).hexdigest()
                else:
                    built, made_of = self.build_collection(item, scratch)
                    source = 'ansible-galaxy collection build %s' % item['path']
                record = old.get(item['name'])
                if not (record and record.get('fingerprint') == made_of and record.get('file') == name
                        and os.path.isfile(full) and os.path.getsize(full) == record.get('size')):
                    packed.append(item['name'])
                    if self.module.check_mode:
                        continue
                    os.makedirs(folder, exist_ok=True)
                    if built:
                        shutil.copyfile(built, full + '.tmp')
                    else:
                        problem, left_out = pack_collection(item['path'], copy, full + '.tmp')
                        if left_out:
                            source += '; %d files and folders it lists are not installed here, nor carried' % left_out
                        if problem:
                            os.remove(full + '.tmp')
                            self.module.fail_json(msg='the collection %s at %s cannot be carried in: %s; reinstall it'
                                                      % (item['name'], item['path'], problem))
                    publish(full)
                    record = {'name': item['name'], 'version': item['version'], 'file': name,
                              'path': '%s/%s' % (bundle.COLLECTIONS, name), 'fingerprint': made_of, 'source': source,
                              'size': os.path.getsize(full), 'sha256': sha256(full)}
                records.append(record)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if not self.module.check_mode:
            settle(folder, records)
            manifest[bundle.COLLECTIONS] = records
        return packed

    def vendor_keys(self, name, old):
        """The platform's vendor repositories, each with its key in keys/ (fetched where missing or
        where its URL changed): [{name, uri, key_url, key, sha256}]."""
        known = dict((s.get('key_url'), s) for s in old.get('sources') or [])
        found = []
        for source in self.p['sources'].get(name) or []:
            source = dict((k, str(source[k])) for k in ('name', 'uri', 'key_url', 'suite', 'components') if source.get(k))
            record = known.get(source['key_url'])
            path = os.path.join(self.dest, 'keys', record['key']) if record else ''
            if not (record and os.path.isfile(path) and sha256(path) == record.get('sha256')):
                try:
                    text = bundle.fetch(source['key_url'], timeout=30)
                except (OSError, IOError) as exc:
                    self.module.fail_json(msg='cannot fetch the key of %s (%s): %s' % (source['name'], source['uri'], exc))
                path = os.path.join(self.dest, 'keys', key_file(source, name, text))
                if not self.module.check_mode:
                    with open(path + '.tmp', 'wb') as handle:
                        handle.write(text)
                    os.replace(path + '.tmp', path)
                digest = hashlib.sha256(text).hexdigest()
            else:
                digest = record['sha256']
            source.update({'key': os.path.basename(path), 'sha256': digest})
            found.append(source)
        return found

    def platform(self, name, image, names, key, sources):
        """Fetch one platform's repository; the files of its manifest record."""
        repo = os.path.join(self.dest, bundle.apt_path(name))
        os.makedirs(os.path.join(repo, 'pool'), exist_ok=True)
        cmd = [self.docker, 'run', '--rm', '-v', '%s:/repo' % repo]
        if sources:
            lines = [' '.join([s['uri'], s['key'], s.get('suite') or '/'] + ([s['components']] if s.get('components') else []))
                     for s in sources]
            cmd += ['-v', '%s:/keys:ro' % os.path.join(self.dest, 'keys'), '-e', 'SOURCES=' + '\n'.join(lines)]
            authorities = [ca for ca in CA_FILES if os.path.isfile(ca)]
            if authorities and any(s['uri'].startswith('https:') for s in sources):
                cmd += ['-v', '%s:/etc/ssl/certs/ca-certificates.crt:ro' % authorities[0]]
        self.run(cmd + [image, 'sh', '-c', SCRIPT, 'bundle'] + sorted(names),
                 what='resolving and downloading the packages of %s in %s, from its own sources%s' % (
                     name, image, ''.join(' and %s (%s)' % (s['name'], s['uri']) for s in sources)))
        with open(os.path.join(repo, '.uris')) as handle:
            uris = parse_uris(handle.read())
        os.remove(os.path.join(repo, '.uris'))
        with open(os.path.join(repo, 'Packages')) as handle:
            entries = parse_packages(handle.read())
        os.chmod(repo, 0o755)
        signed = os.path.join(repo, 'InRelease')
        if os.path.exists(signed):
            os.remove(signed)
        self.run(self.gpg_cmd('--local-user', key, '--clearsign', '--digest-algo', 'SHA256', '-o', signed,
                              os.path.join(repo, 'Release')))
        files = []
        for entry in entries:
            path = os.path.join(repo, entry['path'])
            files.append({'path': bundle.apt_path(name) + '/' + entry['path'], 'name': entry['name'],
                          'version': entry['version'], 'size': os.path.getsize(path), 'sha256': sha256(path),
                          'source': uris.get(os.path.basename(entry['path']), {}).get('uri', '')})
        for index in ('Packages', 'Packages.gz', 'Release', 'InRelease'):
            path = os.path.join(repo, index)
            files.append({'path': bundle.apt_path(name) + '/' + index, 'name': index, 'version': '',
                          'size': os.path.getsize(path), 'sha256': sha256(path), 'source': 'made by the bundle'})
        return files

    def make(self):
        manifest_path = os.path.join(self.dest, bundle.MANIFEST)
        try:
            with open(manifest_path) as handle:
                manifest = json.load(handle)
        except (OSError, IOError, ValueError):
            manifest = {}
        if manifest.get('version') != bundle.MANIFEST_VERSION:
            manifest = {'version': bundle.MANIFEST_VERSION, 'platforms': {}}
        unknown = sorted(set(self.p['packages']) - set(self.p['platforms']))
        unknown += sorted(p for p in self.p['platforms'] if p not in bundle.PLATFORMS)
        if unknown:
            self.module.fail_json(msg='platforms without an image or that a bundle cannot hold: %s (a bundle holds %s)'
                                      % (', '.join(unknown), ', '.join(sorted(bundle.PLATFORMS))))
        if not self.module.check_mode:
            os.makedirs(os.path.join(self.dest, 'keys'), exist_ok=True)
        key = self.key()
        fetched, files_count, sizes = [], {}, {}
        for name in sorted(self.p['packages']):
            names = sorted(set(str(n) for n in self.p['packages'][name]))
            image = self.p['platforms'][name]
            old = manifest['platforms'].get(name) or {}
            sources = self.vendor_keys(name, old)
            stamp = fingerprint(self.image_id(image), names, key, sources)
            if old.get('fingerprint') == stamp and intact(self.dest, old):
                record = old
            else:
                fetched.append(name)
                if self.module.check_mode:
                    continue
                record = {'image': image, 'fingerprint': stamp, 'requested': dict((n, True) for n in names),
                          'files': self.platform(name, image, names, key, sources), 'key': key, 'sources': sources,
                          'made': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}
                manifest['platforms'][name] = record
            files_count[name] = len(record.get('files') or [])
            sizes[name] = sum(f.get('size') or 0 for f in record.get('files') or [] if f['path'].endswith('.deb'))
        saved = self.images(manifest)
        loaded = self.files(manifest)
        filled = self.models(manifest)
        packed = self.collections(manifest)
        if not self.module.check_mode:
            public = os.path.join(self.dest, 'keys', 'bundle.asc')
            exported = self.run(self.gpg_cmd('--armor', '--export', key))
            if not os.path.exists(public) or open(public).read() != exported:
                with open(public + '.tmp', 'w') as handle:
                    handle.write(exported)
                os.replace(public + '.tmp', public)
            for name in manifest['platforms']:
                # Each repository carries the key its hosts verify it with.
                copy = os.path.join(self.dest, bundle.apt_path(name), 'bundle.asc')
                if not os.path.exists(copy) or open(copy).read() != exported:
                    shutil.copyfile(public, copy + '.tmp')
                    os.replace(copy + '.tmp', copy)
            manifest['key'] = {'path': 'keys/bundle.asc', 'fingerprint': key, 'sha256': sha256(public)}
            text = json.dumps(manifest, indent=1, sort_keys=True) + '\n'
            if fetched or saved or loaded or filled or packed or not os.path.exists(manifest_path) or open(manifest_path).read() != text:
                with open(manifest_path + '.tmp', 'w') as handle:
                    handle.write(text)
                os.replace(manifest_path + '.tmp', manifest_path)
        return {'changed': bool(fetched or saved or loaded or filled or packed), 'fetched': fetched, 'files': files_count, 'bytes': sizes,
                'saved': saved, 'loaded': loaded, 'image_bytes': sum(i.get('size') or 0 for i in manifest.get('images') or []),
                'filled': filled, 'model_bytes': sum(m.get('size') or 0 for m in manifest.get(bundle.MODELS) or []),
                'packed': packed,
                'collection_bytes': sum(c.get('size') or 0 for c in manifest.get(bundle.COLLECTIONS) or []),
                'manifest': manifest_path}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', required=True),
            signing_dir=dict(type='path', required=True),
            platforms=dict(type='dict', required=True),
            packages=dict(type='dict', required=True),
            sources=dict(type='dict', default={}),
            images=dict(type='list', elements='str', default=[]),
            files=dict(type='list', elements='dict', default=[]),
            models=dict(type='list', elements='dict', default=[]),
            ngc_api_key=dict(type='str', default='', no_log=True),
            collections=dict(type='list', elements='dict', default=[]),
            galaxy=dict(type='str', default='ansible-galaxy'),
            helm=dict(type='str', default='helm'),
            docker=dict(type='str', default='docker'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**Maker(module).make())


if __name__ == '__main__':
    main()
