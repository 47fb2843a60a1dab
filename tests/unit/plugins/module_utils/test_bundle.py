# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import bundle, docker_spec


def names(found):
    return [name for _role, name in found]


def test_platform_of_host_facts():
    assert bundle.platform_of({'distribution': 'Debian', 'distribution_major_version': '12',
                               'distribution_version': '12.7'}) == 'debian-12'
    assert bundle.platform_of({'distribution': 'Ubuntu', 'distribution_major_version': '22',
                               'distribution_version': '22.04'}) == 'ubuntu-22.04'
    assert bundle.platform_of({'distribution': 'Ubuntu', 'distribution_version': '23.10'}) == ''
    assert bundle.platform_of({'distribution': 'Rocky', 'distribution_major_version': '9'}) == ''


def test_a_docker_node_installs_what_its_roles_declare_for_its_platform():
    found = bundle.host_packages({'docker'}, {}, 'debian-12')
    # Read from the roles' vars: docker.io (Debian's), openssh-client, nftables, python3-requests...
    assert ('docker', 'docker.io') in found and ('docker', 'ca-certificates') in found
    assert ('ssh_mesh', 'openssh-client') in found and ('nim_firewall', 'nftables') in found
    assert ('nim_docker', 'python3-requests') in found and ('rdma', 'rdma-core') in found
    # Exporters only where a monitoring host watches the groups.
    assert 'prometheus-node-exporter' not in names(found)
    assert 'prometheus-node-exporter' in names(bundle.host_packages({'docker', 'exporters'}, {}, 'debian-12'))


def test_the_inventory_s_choices_change_the_packages():
    found = names(bundle.host_packages({'docker'}, {'docker_install_source': 'docker', 'rdma_enabled': False,
                                                    'nim_group_firewall': False, 'ssh_mesh_enabled': 'no',
                                                    'nvidia_driver_enabled': 'no', 'nvidia_container_toolkit_enabled': 0},
                                       'ubuntu-22.04'))
    assert found[:4] == ['docker-ce', 'docker-ce-cli', 'containerd.io', 'docker-buildx-plugin']
    assert bundle.host_sources({'docker_install_source': 'docker'}, 'ubuntu-22.04')[0] == {
        'name': 'docker', 'uri': 'https://download.docker.com/linux/ubuntu', 'suite': 'jammy', 'components': 'stable',
        'key_url': 'https://download.docker.com/linux/ubuntu/gpg'}
    assert not set(found) & {'rdma-core', 'nftables', 'openssh-client', 'docker.io'}
    assert names(bundle.host_packages({'docker'}, {'docker_packages': ['moby-engine'], 'rdma_enabled': False,
                                                   'nvidia_driver_enabled': False, 'nvidia_container_toolkit_enabled': False},
                                      'debian-12'))[0] == 'moby-engine'
    assert names(bundle.host_packages({'monitoring'}, {'monitoring_mode': 'exporters'}, 'debian-12')) == []
    assert names(bundle.host_packages({'monitoring'}, {}, 'debian-12')) == ['prometheus', 'prometheus-alertmanager']
    assert names(bundle.host_packages({'frontend'}, {}, 'debian-12')) == ['haproxy']


def test_wanted_packages_by_platform_name_their_roles():
    wanted = bundle.wanted_packages({'a': {'docker'}, 'b': {'frontend'}}, {'a': {'rdma_enabled': False}},
                                    {'a': 'debian-12', 'b': 'ubuntu-24.04'})
    assert set(wanted) == {'debian-12', 'ubuntu-24.04'}
    assert wanted['ubuntu-24.04'] == {'haproxy': ['nim_frontend']}
    assert wanted['debian-12']['docker.io'] == ['docker']


def manifest(requested, files):
    return {'version': bundle.MANIFEST_VERSION,
            'platforms': {'debian-12': {'requested': dict((n, True) for n in requested),
                                        'files': [{'path': p, 'name': n, 'size': 3} for p, n in files]}}}


def test_a_bundle_that_lacks_a_package_or_a_file_or_a_platform_is_refused_naming_it():
    wanted = {'debian-12': {'haproxy': ['nim_frontend'], 'docker.io': ['docker']},
              'ubuntu-22.04': {'haproxy': ['nim_frontend']}}
    platforms = {'door': 'debian-12', 'node': 'debian-12', 'old': '', 'u': 'ubuntu-22.04'}
    held = manifest(['docker.io'], [('apt/debian-12/pool/docker.io.deb', 'docker.io'),
                                    ('apt/debian-12/InRelease', 'InRelease')])
    problems = bundle.manifest_problems(held, wanted, platforms,
                                        lambda path, size: path != 'apt/debian-12/InRelease')
    text = '\n'.join(problems)
    assert 'host old runs a distribution no bundle serves' in text
    assert 'no package haproxy for debian-12, which role nim_frontend installs' in text
    assert 'holds no packages for ubuntu-22.04 (hosts u)' in text
    assert 'lists apt/debian-12/InRelease (InRelease) but does not serve it' in text
    assert len(problems) == 4


def test_a_whole_bundle_has_no_problem_and_a_missing_manifest_one():
    wanted = {'debian-12': {'docker.io': ['docker']}}
    held = manifest(['docker.io'], [('apt/debian-12/pool/docker.io.deb', 'docker.io')])
    assert bundle.manifest_problems(held, wanted, {'n': 'debian-12'}, lambda path, size: size == 3) == []
    assert bundle.manifest_problems(None, wanted, {'n': 'debian-12'})[0].startswith('the bundle has no manifest.json')


@pytest.mark.parametrize('value', ['http://10.0.0.4:8080', 'https://mirror.example/bundle/', 'file:///srv/bundle'])
def test_the_bundle_url_rule_accepts(value):
    from ansible_collections.nimstack.multinode.plugins.module_utils import input_checks
    assert input_checks.RULES['nimstack_bundle_url'].check(value) is None


@pytest.mark.parametrize('value', ['http://h/b\n', 'ftp://h/b', 'http://h/a b', 'http://h/b#x', 'file://relative',
                                   'http://h/[x]'])
def test_the_bundle_url_rule_refuses(value):
    from ansible_collections.nimstack.multinode.plugins.module_utils import input_checks
    assert input_checks.RULES['nimstack_bundle_url'].check(value) is not None


def read(*lines):
    return bundle.parse_hardware({'stdout_lines': list(lines)})


def test_the_maker_takes_the_nvidia_packages_of_every_host_whose_nvidia_roles_are_on():
    found = names(bundle.host_packages({'docker'}, {}, 'debian-12'))
    # The roles' own choices: the branch's pinning package, the open modules' metapackage and the fabric
    # manager at the branch, the DKMS prerequisites, the headers of the platform's kernel, the toolkit.
    assert found[:8] == ['nvidia-driver-pinning-580', 'nvidia-open=580.*', 'nvidia-fabricmanager=580.*',
                         'libnvidia-nscq=580.*', 'dkms', 'kmod', 'linux-headers-amd64', 'nvidia-container-toolkit']
    pinned = names(bundle.host_packages({'docker'}, {'nvidia_driver_version': '580.95.05',
                                                     'nvidia_driver_kernel_modules': 'proprietary',
                                                     'nvidia_container_toolkit_version': '1.18.0'}, 'ubuntu-22.04'))
    assert pinned[:2] == ['nvidia-driver-pinning-580.95.05', 'cuda-drivers=580.95.05-*']
    assert 'linux-headers-generic' in pinned and 'libnvidia-container1=1.18.0-*' in pinned
    off = names(bundle.host_packages({'docker'}, {'nvidia_driver_enabled': False,
                                                  'nvidia_container_toolkit_enabled': 'false'}, 'debian-12'))
    assert not [n for n in off if 'nvidia' in n or n in ('dkms', 'linux-headers-amd64')]


def test_a_host_is_asked_only_for_the_nvidia_packages_its_hardware_needs():
    assert read('kernel 6.1.0-9-amd64') == {'gpu': False, 'nvswitch': False, 'driver': False, 'toolkit': False,
                                            'kernel': '6.1.0-9-amd64'}
    assert bundle.parse_hardware({'skipped': True}) is None
    no_gpu = names(bundle.host_packages({'docker'}, {}, 'debian-12', hardware=read('kernel 6.1.0-9-amd64')))
    assert not [n for n in no_gpu if 'nvidia' in n or n == 'dkms']
    gpu = names(bundle.host_packages({'docker'}, {}, 'debian-12', hardware=read('gpu', 'kernel 6.1.0-9-amd64')))
    assert gpu[:6] == ['nvidia-driver-pinning-580', 'nvidia-open=580.*', 'dkms', 'kmod',
                       'linux-headers-6.1.0-9-amd64', 'nvidia-container-toolkit']
    switched = names(bundle.host_packages({'docker'}, {}, 'debian-12', hardware=read('gpu', 'nvswitch', 'toolkit')))
    assert 'nvidia-fabricmanager=580.*' in switched and 'nvidia-container-toolkit' not in switched
    assert 'linux-headers-amd64' in switched
    running = names(bundle.host_packages({'docker'}, {}, 'debian-12', hardware=read('gpu', 'driver', 'kernel 6.1')))
    assert 'nvidia-open=580.*' not in running and 'nvidia-container-toolkit' in running


def test_the_vendors_repositories_are_composed_as_the_roles_compose_them():
    cuda, toolkit = bundle.host_sources({}, 'ubuntu-22.04')
    assert cuda == {'name': 'nvidia-cuda', 'uri': 'https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/',
                    'key_url': 'https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub'}
    assert toolkit == {'name': 'nvidia-container-toolkit', 'uri': 'https://nvidia.github.io/libnvidia-container/stable/deb/amd64/',
                       'key_url': 'https://nvidia.github.io/libnvidia-container/gpgkey'}
    mirror = bundle.host_sources({'nvidia_driver_repo_url': 'http://m/cuda//', 'nvidia_driver_repo_key_url': 'http://m/k',
                                  'nvidia_container_toolkit_enabled': False, 'rdma_install_source': 'doca'},
                                 'ubuntu-24.04')
    assert [s['uri'] for s in mirror] == ['http://m/cuda/',
                                          'https://linux.mellanox.com/public/repo/doca/3.1.0/ubuntu24.04/x86_64/']
    assert mirror[0]['key_url'] == 'http://m/k'
    with pytest.raises(ValueError, match='rdma_doca_os_label'):
        bundle.host_sources({'rdma_install_source': 'doca'}, 'debian-12')
    assert bundle.host_sources({'rdma_install_source': 'doca', 'rdma_doca_os_label': 'debian12.5'},
                               'debian-12')[2]['uri'].endswith('/doca/3.1.0/debian12.5/x86_64/')
    both = bundle.wanted_sources({'a': {'docker'}, 'b': {'docker'}, 'door': {'frontend'}},
                                 {'b': {'nvidia_driver_repo_url': 'http://m/cuda'}}, 'debian-12')
    assert [s['uri'] for s in both] == ['https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/',
                                        'https://nvidia.github.io/libnvidia-container/stable/deb/amd64/', 'http://m/cuda/']


def test_a_package_the_maker_got_as_a_dependency_serves_a_host_that_asks_it_by_name():
    wanted = {'debian-12': {'linux-headers-6.1.0-9-amd64': ['nvidia_driver'], 'nvidia-open=580.*': ['nvidia_driver']}}
    held = manifest(['linux-headers-amd64'], [('apt/debian-12/pool/h.deb', 'linux-headers-6.1.0-9-amd64')])
    problems = bundle.manifest_problems(held, wanted, {'n': 'debian-12'})
    assert problems == ['the bundle has no package nvidia-open=580.* for debian-12, which role nvidia_driver installs; '
                        'make the bundle again from this inventory']


def test_offline_the_kubernetes_components_come_from_the_bundle_or_what_was_carried_in():
    url = 'http://10.0.0.5:8080'
    problems = bundle.k8s_problems(url, {}, lws_needed=True, operator_needed=True)
    assert problems == [
        'offline mode: the bundle has no files/lws-chart-v0.10.0.tgz (LeaderWorkerSet v0.10.0\'s chart '
        'oci://registry.k8s.io/lws/charts/lws, lws_install_method=helm); make the bundle again from this inventory '
        "(playbooks/bundle.yml), or carry it in: lws_helm_chart_path (the chart's directory or archive)",
        "offline mode: the bundle has no files/k8s-nim-operator-v3.1.2.tgz (the NIM Operator v3.1.2's chart); make "
        'the bundle again from this inventory (playbooks/bundle.yml), or carry it in: nim_operator_helm_chart_file']
    held = {'files/lws-chart-v0.10.0.tgz': {'size': 10}, 'files/k8s-nim-operator-v3.1.2.tgz': {'size': 20},
            'files/lws-v0.9.0-manifests.yaml': {'size': 30}}
    assert bundle.k8s_problems(url, {}, lws_needed=True, operator_needed=True, held=held) == []
    served = bundle.k8s_problems(url, {}, True, True, held=held, present=lambda path, size: size != 20)
    assert served == ['the bundle lists files/k8s-nim-operator-v3.1.2.tgz (the NIM Operator v3.1.2\'s chart) but does '
                      'not serve it with its size of 20 bytes']
    # The manifest method looks for the manifest of the version it installs.
    manifest = bundle.k8s_problems(url, {'lws_install_method': 'manifest', 'lws_version': 'v0.10.0'}, True, False, held=held)
    assert [p[:60] for p in manifest] == ['offline mode: the bundle has no files/lws-v0.10.0-manifests.']
    assert bundle.k8s_problems(url, {'lws_install_method': 'manifest', 'lws_version': 'v0.9.0'}, True, False, held=held) == []
    carried = {'lws_install_method': 'file', 'nim_operator_helm_chart_file': '/srv/k8s-nim-operator-3.1.2.tgz'}
    assert bundle.k8s_problems(url, carried, lws_needed=True, operator_needed=True) == []
    assert bundle.k8s_problems(url, {'lws_helm_chart_path': '/srv/lws.tgz'}, lws_needed=True, operator_needed=False) == []
    assert bundle.k8s_problems('', {}, lws_needed=True, operator_needed=True) == []
    named = bundle.k8s_problems(url, dict(carried, nim_operator_gpu_operator_enabled='yes'), True, True)
    assert named == ['offline mode: nim_operator_gpu_operator_enabled=true installs the GPU Operator from the chart '
                     'repository https://helm.ngc.nvidia.com/nvidia; install it beforehand from a chart carried in and '
                     'set nim_operator_gpu_operator_enabled=false']


def _k8s_bundle(root, names):
    files = []
    for name in names:
        (root / 'files').mkdir(exist_ok=True)
        (root / 'files' / name).write_bytes(b'x' * 7)
        files.append({'name': name, 'path': 'files/' + name, 'size': 7})
    (root / 'manifest.json').write_text(json.dumps({'version': 1, 'platforms': {}, 'files': files}))
    return 'file://' + str(root)


def test_the_kubernetes_check_reads_the_plan_s_kubernetes_groups_and_the_bundle(tmp_path):
    from ansible_collections.nimstack.multinode.plugins.filter.bundle_plan import bundle_k8s_problems
    plan = {'groups': {'a': {'size': 1}, 'd': {'size': 3}}, 'groups_by_mode': {'kubernetes': ['a'], 'docker': ['d']}}
    url = _k8s_bundle(tmp_path, [])
    # The model in a claim filled beforehand, named (the operator's air-gap path).
    claim = {'nim_k8s_pvc_name': 'models'}
    # One single-node group on the operator: no LWS; on lws, LWS only.
    assert [p[:60] for p in bundle_k8s_problems(plan, url, claim)] == [
        'offline mode: the bundle has no files/k8s-nim-operator-v3.1.']
    assert [p[:60] for p in bundle_k8s_problems(plan, url, claim, backend='lws')] == [
        'offline mode: the bundle has no files/lws-chart-v0.10.0.tgz ']
    assert bundle_k8s_problems(plan, url, claim, install_components='false') == []
    assert bundle_k8s_problems(plan, url, {}, state='absent') == []
    assert bundle_k8s_problems(plan, url, {}, render_dir='/tmp/out') == []
    assert bundle_k8s_problems(dict(plan, groups_by_mode={'kubernetes': []}), url, {}) == []
    multi = {'groups': {'a': {'size': 2}}, 'groups_by_mode': {'kubernetes': ['a']}}
    assert len(bundle_k8s_problems(multi, url, claim)) == 2
    url = _k8s_bundle(tmp_path, ['lws-chart-v0.10.0.tgz', 'k8s-nim-operator-v3.1.2.tgz'])
    assert bundle_k8s_problems(multi, url, claim) == []
    (tmp_path / 'files' / 'lws-chart-v0.10.0.tgz').unlink()
    assert bundle_k8s_problems(multi, url, claim) == [
        "the bundle lists files/lws-chart-v0.10.0.tgz (LeaderWorkerSet v0.10.0's chart oci://registry.k8s.io/lws/charts/lws, "
        'lws_install_method=helm) but does not serve it with its size of 7 bytes']
    assert [p[:60] for p in bundle_k8s_problems(multi, 'file://' + str(tmp_path / 'none'), claim)] == [
        "nimstack_bundle_url: cannot read the bundle's manifest: [Err"]
    # The model's problem is named with a manifest that cannot be read, too.
    assert [p[:40] for p in bundle_k8s_problems(multi, 'file://' + str(tmp_path / 'none'), {})] == [
        'offline mode: the Kubernetes groups a wo', "nimstack_bundle_url: cannot read the bun"]


def test_offline_a_kubernetes_group_s_model_is_a_claim_filled_beforehand(tmp_path):
    from ansible_collections.nimstack.multinode.plugins.filter.bundle_plan import bundle_k8s_problems
    plan = {'groups': {'a': {'size': 2}, 'b': {'size': 2}}, 'groups_by_mode': {'kubernetes': ['b', 'a']}}
    url = _k8s_bundle(tmp_path, ['lws-chart-v0.10.0.tgz', 'k8s-nim-operator-v3.1.2.tgz'])
    # A NIMCache downloads from NGC; so does a NIM on the empty claim the play makes. Whether the play
    # installs the components or not.
    assert bundle_k8s_problems(plan, url, {'nim_k8s_storage': 'nimcache', 'nim_k8s_pvc_name': 'models'}) == [
        'offline mode: the NIMCache of the Kubernetes groups a, b (nim_k8s_storage=nimcache) would download the model '
        "from NGC; fill a ReadWriteMany claim beforehand with the model cache (the image's own download-to-cache on a "
        'connected machine) and name it: nim_k8s_storage=pvc with nim_k8s_pvc_name']
    empty = bundle_k8s_problems(plan, url, {}, install_components=False)
    assert empty == ['offline mode: the Kubernetes groups a, b would get an empty claim for their model (nim_k8s_pvc_name '
                     'is empty) and their NIM would download it from NGC when it starts; fill a ReadWriteMany claim '
                     'beforehand with the model cache and name it: nim_k8s_pvc_name']
    assert bundle_k8s_problems(plan, url, {'nim_k8s_storage': 'pvc', 'nim_k8s_pvc_name': 'models'}) == []
    # Online, rendering only or tearing down: nothing asked.
    assert bundle_k8s_problems(plan, '', {'nim_k8s_storage': 'nimcache'}) == []
    assert bundle_k8s_problems(plan, url, {'nim_k8s_storage': 'nimcache'}, render_dir='/tmp/out') == []
    assert bundle_k8s_problems(plan, url, {'nim_k8s_storage': 'nimcache'}, state='absent') == []


def test_the_bundle_carries_what_the_kubernetes_components_would_fetch():
    assert bundle.wanted_k8s_files({}) == [
        {'name': 'lws-chart-v0.10.0.tgz', 'oci': 'oci://registry.k8s.io/lws/charts/lws', 'version': '0.10.0'},
        {'name': 'k8s-nim-operator-v3.1.2.tgz', 'repo': 'https://helm.ngc.nvidia.com/nvidia', 'chart': 'k8s-nim-operator',
         'version': 'v3.1.2'}]
    # The manifest method: the role's default URL, at the version set.
    assert bundle.wanted_k8s_files({'lws_install_method': 'manifest', 'lws_version': 'v0.9.0', 'nim_k8s_backend': 'lws'}) == [
        {'name': 'lws-v0.9.0-manifests.yaml',
         'url': 'https://github.com/kubernetes-sigs/lws/releases/download/v0.9.0/manifests.yaml'}]
    # What is carried in by hand is not fetched; Volcano only where it schedules.
    assert bundle.wanted_k8s_files({'lws_install_method': 'file', 'nim_operator_helm_chart_file': '/srv/op.tgz'}) == []
    assert bundle.wanted_k8s_files({'lws_helm_chart_path': '/srv/lws', 'nim_k8s_backend': 'lws',
                                    'nim_k8s_scheduler': 'volcano'}) == [
        {'name': 'volcano-v1.12.1.tgz', 'repo': 'https://volcano-sh.github.io/helm-charts', 'chart': 'volcano',
         'version': 'v1.12.1'}]
    assert bundle.wanted_k8s_files({'lws_install_method': 'file', 'nim_k8s_backend': 'lws', 'nim_k8s_scheduler': 'volcano',
                                    'volcano_install_method': 'manifest'}) == [
        {'name': 'volcano-v1.12.1-development.yaml',
         'url': 'https://raw.githubusercontent.com/volcano-sh/volcano/v1.12.1/installer/volcano-development.yaml'}]


def test_a_chart_s_url_is_read_from_its_repository_s_index_as_helm_reads_it():
    index = ('apiVersion: v1\nentries:\n  k8s-nim-operator:\n  - version: 3.1.2\n    urls: [charts/k8s-nim-operator-3.1.2.tgz]\n'
             '  - version: v3.0.0\n    urls: [https://cdn.example/op-3.0.0.tgz]\n')
    repo = 'https://helm.example/nvidia'
    assert bundle.chart_url(index, repo, 'k8s-nim-operator', 'v3.1.2') == 'https://helm.example/nvidia/charts/k8s-nim-operator-3.1.2.tgz'
    assert bundle.chart_url(index, repo + '/', 'k8s-nim-operator', '3.0.0') == 'https://cdn.example/op-3.0.0.tgz'
    with pytest.raises(ValueError, match=r'has no chart k8s-nim-operator at version v9.0.0 \(it has 3.1.2, v3.0.0\)'):
        bundle.chart_url(index, repo, 'k8s-nim-operator', 'v9.0.0')
    with pytest.raises(ValueError, match='no chart volcano at version 1 .it has none'):
        bundle.chart_url(index, repo, 'volcano', '1')


def test_the_images_carried_in_are_the_docker_groups_nim_images():
    kinds = {'a': {'docker'}, 'b': {'docker'}, 'door': {'frontend'}}
    hvars = {'a': {'nim_image': 'nvcr.io/nim/meta/llama', 'nim_image_tag': '1.3.0'},
             'b': {'nim_image': 'nvcr.io/nim/meta/llama', 'nim_image_tag': '1.3.0',
                   'nim_docker_download_image': 'site:5000/tools/downloader:2'},
             'c': {'nim_image': 'nvcr.io/nim/other', 'nim_image_tag': '2'},
             'door': {'nim_image': 'never/read:1'}}
    # Offline, no node runs a downloader (the model comes from models/): its image is not carried.
    assert bundle.wanted_images(kinds, hvars) == ['nvcr.io/nim/meta/llama:1.3.0']
    digest = 'sha256:' + 'a' * 64
    assert bundle.wanted_images({'a': {'docker'}}, {'a': {'nim_image': 'r/i', 'nim_image_tag': digest}}) == ['r/i@' + digest]
    assert bundle.wanted_images({'a': {'docker'}}, {}) == []
    assert bundle.image_file('nvcr.io/nim/meta/llama:1.3.0') == 'nvcr.io_nim_meta_llama_1.3.0.tar'
    assert bundle.image_file('r/i@' + digest) == 'r_i_sha256_' + 'a' * 64 + '.tar'


def test_offline_the_images_no_archive_carries_in_must_be_in_the_bundle():
    url = 'http://b:8080'
    kinds = {'n1': {'docker'}, 'n2': {'docker'}, 'fd': {'frontend'}}
    nim = {'nim_image': 'nvcr.io/nim/meta/llama', 'nim_image_tag': '1.3.0'}
    hvars = {'n1': dict(nim), 'n2': dict(nim, nim_image_tag='1.4.0', nim_docker_download_image='busybox:1'), 'fd': {}}
    held = {'images': [{'ref': 'nvcr.io/nim/meta/llama:1.3.0', 'path': 'images/nvcr.io_nim_meta_llama_1.3.0.tar',
                        'size': 9}]}
    missing = ('the bundle has no image nvcr.io/nim/meta/llama:1.4.0 (images/nvcr.io_nim_meta_llama_1.4.0.tar), which n2 '
               'would load from it (no nim_docker_image_archive given); make the bundle again from this inventory '
               '(playbooks/bundle.yml), or carry it in as an archive: nim_docker_image_archive')
    assert bundle.image_problems(held, kinds, hvars, url) == [missing]
    assert bundle.image_problems(held, kinds, hvars, url, present=lambda path, size: False) == [
        'the bundle lists images/nvcr.io_nim_meta_llama_1.3.0.tar (nvcr.io/nim/meta/llama:1.3.0) but does not serve it '
        'with its size of 9 bytes', missing]
    # An archive given, or the site's own registry, is not asked of the bundle; online, nothing is.
    carried = {'n1': dict(nim, nim_docker_image_archive='/srv/nim.tar'),
               'n2': dict(nim, nim_image='site:5000/nim/llama', nim_docker_download_image='busybox:1')}
    assert bundle.image_problems({}, kinds, carried, url) == []
    assert bundle.image_problems({}, kinds, hvars, '') == []


def test_the_model_caches_carried_in_are_the_downloading_groups_with_their_downloader_and_env():
    kinds = {'a1': {'docker'}, 'a2': {'docker'}, 'b1': {'docker'}, 'c1': {'docker'}, 'door': {'frontend'}}
    nim = {'nim_image': 'nvcr.io/nim/meta/llama', 'nim_image_tag': '1.3.0', 'nim_tensor_parallel': 8,
           'nim_pipeline_parallel': 2, 'nim_extra_env': {'HF_HUB_OFFLINE': 0}}
    hvars = {'a1': dict(nim), 'a2': dict(nim),
             'b1': dict(nim, nim_model_profile='abc123', nim_docker_download_image='site:5000/dl:2',
                        nim_docker_download_command=['download-to-cache', '--all'], nim_docker_container_uid=2000),
             'c1': dict(nim, nim_docker_download_model=False), 'door': dict(nim)}
    models = bundle.wanted_models(kinds, hvars)
    assert [(m['file'], m['hosts']) for m in models] == sorted([
        (docker_spec.model_file('nvcr.io/nim/meta/llama:1.3.0', ''), ['a1', 'a2']),
        (docker_spec.model_file('nvcr.io/nim/meta/llama:1.3.0', 'abc123'), ['b1'])])
    by_host = dict((m['hosts'][0], m) for m in models)
    assert by_host['a1']['downloader'] == 'nvcr.io/nim/meta/llama:1.3.0'
    assert (by_host['a1']['command'], by_host['a1']['user']) == (['download-to-cache'], '1000:1000')
    assert by_host['a1']['env'] == {'HF_HUB_OFFLINE': '0', 'NIM_CACHE_PATH': '/model-store',
                                    'NIM_TENSOR_PARALLEL_SIZE': '8', 'NIM_PIPELINE_PARALLEL_SIZE': '2'}
    assert (by_host['b1']['downloader'], by_host['b1']['command'], by_host['b1']['user']) == (
        'site:5000/dl:2', ['download-to-cache', '--all'], '2000:1000')
    assert by_host['b1']['env']['NIM_MODEL_PROFILE'] == 'abc123'
    # What the inventory leaves unset is left to the downloader.
    bare = bundle.wanted_models({'x': {'docker'}}, {'x': {'nim_image': 'r/i', 'nim_image_tag': '1'}})
    assert bare[0]['env'] == {'NIM_CACHE_PATH': '/model-store'}


def test_offline_the_model_caches_the_groups_download_must_be_in_the_bundle():
    kinds = {'a1': {'docker'}, 'b1': {'docker'}, 'c1': {'docker'}}
    nim = {'nim_image': 'nvcr.io/nim/meta/llama', 'nim_image_tag': '1.3.0'}
    hvars = {'a1': dict(nim), 'b1': dict(nim, nim_model_profile='abc123'), 'c1': dict(nim, nim_docker_download_model='false')}
    a_file = docker_spec.model_file('nvcr.io/nim/meta/llama:1.3.0', '')
    held = {'models': [{'file': a_file, 'path': 'models/' + a_file, 'size': 7}]}
    missing = ('offline mode: the bundle has no model cache for nvcr.io/nim/meta/llama:1.3.0 with profile abc123 (models/%s), '
               'which the group of b1 would download; make the bundle again from this inventory (playbooks/bundle.yml '
               'fills it with the image\'s own downloader), or fill nim_cache_path beforehand and set '
               'nim_docker_download_model=false' % docker_spec.model_file('nvcr.io/nim/meta/llama:1.3.0', 'abc123'))
    assert bundle.model_problems(held, kinds, hvars) == [missing]
    assert bundle.model_problems(held, kinds, hvars, present=lambda path, size: path == 'models/' + a_file and size == 7) == [
        missing]
    assert bundle.model_problems(held, kinds, hvars, present=lambda path, size: False) == [
        'the bundle lists models/%s (model cache of nvcr.io/nim/meta/llama:1.3.0) but does not serve it with its size of '
        '7 bytes' % a_file, missing]
    assert 'no nim_model_profile (models/' in bundle.model_problems({}, {'a1': {'docker'}}, hvars)[0]


def test_offline_a_gpu_host_s_dcgm_exporter_loads_its_image_from_the_bundle():
    kinds = {'g': {'docker', 'exporters'}, 'c': {'docker', 'exporters'}, 'u': {'docker'}}
    gpu = {'gpu': True, 'nvswitch': False, 'driver': False, 'toolkit': False, 'kernel': '6.1.0'}
    hardware = {'g': gpu, 'c': dict(gpu, gpu=False), 'u': gpu}
    url = 'http://b:8080'
    image = 'nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04'
    # The maker carries it for every exporter host (it sees no GPU); the check asks it of GPU hosts only.
    assert bundle.wanted_dcgm_images(kinds, {}) == [image]
    assert image in bundle.wanted_images(kinds, {})
    assert bundle.dcgm_problems({}, kinds, {}, hardware, url) == [
        'offline mode: the bundle has no image %s (images/nvcr.io_nvidia_k8s_dcgm-exporter_4.2.3-4.1.3-ubuntu22.04.tar), '
        'which the DCGM exporter (monitoring_dcgm_exporter) of g would load from it (an NVIDIA GPU shown); make the bundle '
        "again from this inventory (playbooks/bundle.yml), push the image to the site's own registry and name it there "
        '(monitoring_dcgm_exporter_image, monitoring_dcgm_exporter_tag), or set monitoring_dcgm_exporter=false' % image]
    held = {'images': [{'ref': image, 'path': 'images/' + bundle.image_file(image), 'size': 5}]}
    assert bundle.dcgm_problems(held, kinds, {}, hardware, url, present=lambda path, size: size == 5) == []
    assert bundle.dcgm_problems(held, kinds, {}, hardware, url, present=lambda path, size: False) == [
        'the bundle lists images/%s (%s) but does not serve it with its size of 5 bytes' % (bundle.image_file(image), image)]
    off = {'g': {'monitoring_dcgm_exporter': False}, 'c': {'monitoring_dcgm_exporter': False}}
    assert bundle.dcgm_problems({}, kinds, off, hardware, url) == [] and bundle.wanted_dcgm_images(kinds, off) == []
    site = {h: {'monitoring_dcgm_exporter_image': 'registry.site:5000/dcgm-exporter'} for h in ('g', 'c')}
    assert bundle.dcgm_problems({}, kinds, site, hardware, url) == [] and bundle.wanted_dcgm_images(kinds, site) == []
    # Where the hardware was not read (no OS check), or online, nothing is asked.
    assert bundle.dcgm_problems({}, kinds, {}, {}, url) == []
    assert bundle.dcgm_problems({}, kinds, {}, hardware, '') == []


def test_the_collections_carried_are_those_named_and_every_one_they_need_as_this_controller_has_them(tmp_path):
    def installed(name, version, dependencies=None):
        path = tmp_path / name
        path.mkdir()
        namespace, short = name.split('.')
        (path / 'MANIFEST.json').write_text(json.dumps({'collection_info': {
            'namespace': namespace, 'name': short, 'version': version, 'dependencies': dependencies or {}}}))
        return str(path)

    tree = tmp_path / 'nimstack.multinode'
    tree.mkdir()
    (tree / 'galaxy.yml').write_text('version: 0.1.0\ndependencies:\n  community.docker: ">=3.4.0"\n  ansible.posix: "*"\n')
    paths = {'nimstack.multinode': str(tree), 'ansible.posix': installed('ansible.posix', '2.1.0'),
             'community.docker': installed('community.docker', '4.8.5', {'community.library_inventory_filtering_v1': '>=1.0.0'}),
             'community.library_inventory_filtering_v1': installed('community.library_inventory_filtering_v1', '1.1.5')}

    def meets(version, requirement):
        return requirement == '*' or version >= requirement.lstrip('>=')

    found = bundle.wanted_collections(['nimstack.multinode'], paths.get, meets)
    assert [(c['name'], c['version'], c['installed']) for c in found] == [
        ('ansible.posix', '2.1.0', True), ('community.docker', '4.8.5', True),
        ('community.library_inventory_filtering_v1', '1.1.5', True), ('nimstack.multinode', '0.1.0', False)]
    assert bundle.wanted_collections([], paths.get, meets) == []
    # Each problem at once: a name that is none, one not installed, a version a dependency does not take.
    del paths['community.library_inventory_filtering_v1']
    (tree / 'galaxy.yml').write_text('version: 0.1.0\ndependencies:\n  community.docker: ">=5.0.0"\n')
    with pytest.raises(ValueError) as raised:
        bundle.wanted_collections(['nimstack.multinode', 'Awx.awx', 'awx.awx'], paths.get, meets)
    assert str(raised.value) == (
        "'Awx.awx' is not a collection's name, <namespace>.<name> (lowercase letters, digits, _); "
        "awx.awx is not installed on this controller; "
        "community.docker 4.8.5 is installed on this controller, but nimstack.multinode needs >=5.0.0; "
        "community.library_inventory_filtering_v1 is not installed on this controller (which community.docker needs, >=1.0.0)")
    assert bundle.collection_file('community.library_inventory_filtering_v1', '1.1.5') == \
        'community-library_inventory_filtering_v1-1.1.5.tar.gz'
