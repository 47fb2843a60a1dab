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
# Characters that a configuration file, a unit's line, a shell or a PromQL selector reads specially.
SPECIAL = ('"', "'", '$', '%', '`', '\\', ';', '#', ' ', '{', '}')
# The one-line strings that reach no file's grammar, so any character of one line may stand there:
# paths and names on the controller (kubeconfigs, contexts, render and report directories, task
# files, chart and manifest files), module arguments (an image archive's path), the environment a
# container gets through Docker's API or a Kubernetes object (log level, profile), a JSON body (the
# smoke prompt), names the planner or the preflight compares with its own (interconnect, network
# profile, precision, canary group, compute domain), and a script's text kept whole.
FREE_TEXT = frozenset((
    'docker_restart_wave_pre_tasks', 'docker_restart_wave_tasks', 'doctor_report_dir', 'lws_context',
    'lws_helm_chart_path', 'lws_kubeconfig', 'lws_manifest_file', 'lws_render_dir', 'nim_canary_group',
    'nim_docker_canary_group', 'nim_docker_download_image_archive', 'nim_docker_image_archive',
    'nim_docker_smoke_prompt', 'nim_interconnect', 'nim_k8s_compute_domain', 'nim_k8s_context',
    'nim_k8s_kubeconfig', 'nim_k8s_mpi_start_script', 'nim_k8s_render_dir', 'nim_k8s_ssh_key_dir', 'nim_log_level',
    'nim_model_profile', 'nim_network_profile', 'nim_operator_context', 'nim_operator_kubeconfig',
    'nim_operator_render_dir', 'nim_precision', 'nvidia_driver_reboot_wave_pre_tasks',
    'nvidia_driver_reboot_wave_tasks', 'volcano_context', 'volcano_kubeconfig', 'volcano_manifest_file',
    'volcano_render_dir',
))


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


def special_samples(rules, check_value):
    """[(variable, its sample followed by the first character of SPECIAL its rule refuses, or None
    where the rule refuses none)] for every one-line string setting outside FREE_TEXT, in name order."""
    spoilt = []
    for name, value in string_samples(rules, check_value):
        if name in FREE_TEXT or value is None:
            continue
        refused = [char for char in SPECIAL if check_value(name, value + char) is not None]
        spoilt.append((name, value + refused[0] if refused else None))
    return spoilt
