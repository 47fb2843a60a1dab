"""The vendored upstream CRDs are the files tests/k8s/crds/README.md names, unchanged."""

import hashlib
import os

import pytest

from k8s_schema import CRD_FILES, SCHEMAS

SHA256 = {
    'apps.nvidia.com_nimservices.yaml': '00f621d838202c3c189f18c7308186563a0fa80fa6b71db398501466e8ed3305',
    'apps.nvidia.com_nimcaches.yaml': '89eb6a2464810d6ee8ba3757af2f2bb1a131d94e128ad6da8ea69d17f5791df2',
    'leaderworkerset.x-k8s.io_leaderworkersets.yaml': 'c5dcad8ed943e495490241f00b9a1b45d51203b6d484020db3636d5bf553568e',
    'monitoring.coreos.com_podmonitors.yaml': '8ce88c52c51209993511cae093089c9525f5552def88119e3f559123ee9d454b',
    'monitoring.coreos.com_prometheusrules.yaml': '98fd16c9ab79fba8dcd6ef62c957c98cd6546ab74ce0a4ecf09ddf2fda03020e',
}


def test_every_crd_the_schema_checks_read_is_pinned():
    assert sorted(CRD_FILES.values()) == sorted(SHA256)


@pytest.mark.parametrize('name', sorted(SHA256))
def test_a_vendored_crd_matches_its_pinned_sha256(name):
    with open(os.path.join(SCHEMAS, name), 'rb') as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == SHA256[name]


def test_the_readme_lists_the_same_sha256():
    with open(os.path.join(SCHEMAS, 'README.md')) as handle:
        readme = handle.read()
    for name, digest in SHA256.items():
        assert '`%s`' % name in readme and '`%s`' % digest in readme
