# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Values the controller's rules accept, one per one-line string setting, read from the declarations
(the rules of plugins/module_utils/input_checks.py and the declared defaults, plugins/module_utils/settings.py): the
unit tests and the bad-input suite spoil each (a trailing newline, an escape) and expect it refused."""

from ansible_collections.nimstack.multinode.plugins.module_utils.settings import DECLARED

# Where neither the role's default nor a value below passes the rule.
KNOWN = {'nim_model': 'meta/llama-3.1-8b-instruct', 'nim_image': 'nvcr.io/nim/meta/llama-3.1-8b-instruct',
         'nim_image_tag': '1.10.0', 'nim_frontend_model': 'meta/llama-3.1-8b-instruct', 'ansible_host': '10.0.0.1',
         'nim_k8s_namespace': 'nim', 'nim_k8s_compute_domain': 'create', 'nim_docker_registry': 'nvcr.io'}
TRIED = ('a', '580.95.05', '/srv/nimstack/a', 'a.b', 'v1.2.3', '580', '1.2.3', 'nvcr.io/a/b:1.0', 'https://a.example/b',
         'present', 'helm', 'token', 'open', 'fail', 'stable', 'docker', 'mpi', 'adopt', 'auto', 'no', 'server', 'lws',
         'pvc', 'ClusterIP', 'Always', 'ReadWriteMany', 'default', 'RecreateGroupOnPodRestart', 'distribution', '15s',
         'eth0', '64', '0775', 'a.tgz', 'oci://a.example/b')
# A script's text keeps its lines.
MULTILINE = ('nim_k8s_mpi_start_script',)


def string_samples(rules, check_value):
    """[(variable, a value its rule accepts, or None where none is found)] for every one-line string
    rule that is not a secret, in name order."""
    defaults = dict((name, entry['default']) for name, entry in DECLARED.items() if isinstance(entry.get('default'), str))
    samples = []
    for name, rule in sorted(rules.items()):
        if rule.kind != 'str' or rule.secret:
            continue
        accepted = [value for value in (defaults.get(name), KNOWN.get(name)) + TRIED
                    if isinstance(value, str) and value and check_value(name, value) is None]
        samples.append((name, accepted[0] if accepted else None))
    return samples
