"""Run playbooks/deploy_kubernetes.yml in render-only mode, as a user would, and collect the files.

The playbook runs as a subprocess against inventories/example with extra vars, with no cluster:
KUBECONFIG points at nothing, so any attempt to contact one fails the run. A fake NGC key sits
in the environment so that the tests can prove it never lands in a file or in the output.
"""

import json
import os
import subprocess

import yaml

from k8s_schema import REPO

PLAYBOOK = os.path.join(REPO, 'playbooks', 'deploy_kubernetes.yml')
INVENTORY = os.path.join(REPO, 'inventories', 'example')
FAKE_NGC_KEY = 'nvapi-FAKE-test-key-0123456789abcdef'

DEEPSEEK_R1 = {
    'nim_image': 'nvcr.io/nim/deepseek-ai/deepseek-r1',
    'nim_image_tag': '1.7.3',
    'nim_model': 'deepseek-r1',
    'nim_precision': 'fp8',
    'nim_tensor_parallel': 8,
    'nim_pipeline_parallel': 2,
    'nim_gpus_per_node': 8,
    'nim_gpu_memory_gb': 80,
    'nim_mpi_start_timeout': 6000,
}

RACK = 'topology.kubernetes.io/rack'
VOLCANO = {'nim_k8s_scheduler': 'volcano', 'nim_k8s_volcano_queue': 'nim-inference', 'nim_k8s_exclusive_topology': RACK}
KAI = {'nim_k8s_scheduler': 'kai', 'nim_k8s_kai_queue': 'team-a', 'nim_k8s_exclusive_topology': 'nvidia.com/gpu.clique'}
MONITORING = {'nim_k8s_monitoring_labels': {'release': 'prometheus'}, 'nim_k8s_monitoring_interval': '1m',
              'nim_k8s_alert_thresholds': {'kv_cache_fraction': 0.95}}
LWS_MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'lws-manifests-trimmed.txt')

# name -> (backend, extra vars). The example inventory is TP 8 / PP 2 of Llama 3.1 405B fp8.
SCENARIOS = {
    'lws-tp8pp2': ('lws', {}),
    # LWS settings: restart after start, a rollout with surge and a canary partition, priority.
    'lws-rollout': ('lws', {'nim_k8s_replicas': 3, 'nim_k8s_restart_policy': 'RecreateGroupAfterStart',
                            'nim_k8s_rollout_max_surge': 1, 'nim_k8s_rollout_max_unavailable': '50%',
                            'nim_k8s_rollout_partition': 2, 'nim_k8s_priority_class': 'nim-serving'}),
    'operator-tp8pp2': ('nim_operator', {}),
    # Gang scheduling and topology (docs/contracts.md, gang scheduling), on both backends.
    'lws-volcano': ('lws', dict(VOLCANO, nim_launch_contract='ray')),
    'lws-kai': ('lws', KAI),
    'operator-volcano': ('nim_operator', VOLCANO),
    'operator-kai': ('nim_operator', dict(KAI, nim_launch_contract='ray')),
    # The model in a NIMCache per image: a new tag makes a new NIMCache (its modelPuller is immutable).
    'operator-nimcache': ('nim_operator', {'nim_k8s_storage': 'nimcache'}),
    'operator-nimcache-new-tag': ('nim_operator', {'nim_k8s_storage': 'nimcache', 'nim_image_tag': '1.3.1'}),
    # The operator's own features, set from the inventory: validated against its CRD like every render.
    'operator-features': ('nim_operator', {
        'nim_k8s_service_monitor': {'interval': '30s', 'additionalLabels': {'release': 'prometheus'}},
        'nim_k8s_router': {'hostDomainName': 'nim.example.com', 'ingress': {'ingressClass': 'nginx'}},
        'nim_k8s_compute_domain': 'create', 'nim_k8s_priority_class': 'nim-serving'}),
    'operator-compute-domain-name': ('nim_operator', {'nim_k8s_compute_domain': 'gb200-rack-1'}),
    # Monitoring (on by default): the selector's label, the interval and a threshold from the inventory.
    'lws-monitoring': ('lws', MONITORING),
    'operator-monitoring': ('nim_operator', MONITORING),
    'lws-monitoring-off': ('lws', {'nim_k8s_monitoring': False}),
    # The manifest install of LWS with gang scheduling, from a local copy of the release manifest.
    'lws-volcano-file': ('lws', dict(VOLCANO, lws_install_method='file', lws_manifest_file=LWS_MANIFEST)),
}

# Scenarios that differ only in what a deployment group sets (its layout, image, model, launch
# contract, network profile) share one run: each is a group of its own, named after the scenario,
# in one inventory, so a run builds several groups side by side as a user's inventory would, and
# the tests read each group's files (Render.group). name -> (backend, extra vars of the run,
# {scenario: the group's variables}).
GROUPED = {
    'lws-groups': ('lws', {}, {
        'lws-4node': {'nim_pipeline_parallel': 4},
        'lws-deepseek': DEEPSEEK_R1,
        'lws-ray': {'nim_launch_contract': 'ray'},
        # Tensor parallelism across both nodes, one pipeline stage: a raw LeaderWorkerSet runs it.
        'lws-ray-tp16': {'nim_launch_contract': 'ray', 'nim_tensor_parallel': 16, 'nim_pipeline_parallel': 1},
        'lws-leader-address': {'nim_launch_contract': 'leader_address', 'nim_socket_ifname': 'eth0',
                               'nim_network_profile': 'roce'},
        # An image pinned by digest rather than a tag, on both backends.
        'lws-digest': {'nim_image_tag': 'sha256:' + 'ab' * 32},
    }),
    'operator-groups': ('nim_operator', {}, {
        'operator-4node': {'nim_pipeline_parallel': 4},
        'operator-deepseek': DEEPSEEK_R1,
        'operator-ray': {'nim_launch_contract': 'ray', 'nim_network_profile': 'aws_efa',
                         'nim_network_devices_per_gpu': 4},
        # nim_launch_contract auto reads a 2.x tag as NIM for LLMs 2.0: the ray contract.
        'operator-auto-ray': {'nim_launch_contract': 'auto', 'nim_image_tag': '2.0.1'},
        'operator-digest': {'nim_image_tag': 'sha256:' + 'ab' * 32},
    }),
    # Two models in two namespaces: each group's objects its own, one PrometheusRule for both.
    'lws-two-groups': ('lws', {}, {
        'two-groups-llama': {'nim_group': 'llama'},
        'two-groups-r1': dict(DEEPSEEK_R1, nim_group='r1', nim_k8s_namespace='nim-r1'),
    }),
    # Secrets asked for, one group per launch contract: only mpi's gets a key Secret.
    'lws-secrets-run': ('lws', {'nim_k8s_render_secrets': True}, {
        'lws-secrets': {'nim_group': 'default'},
        'lws-ray-secrets': {'nim_launch_contract': 'ray'},
        'lws-leader-address-secrets': {'nim_launch_contract': 'leader_address', 'nim_socket_ifname': 'eth0'},
    }),
}

# Runs that must fail before anything is written: name -> (backend, extra vars[, {group: its variables}]).
# Each run names every problem of one stage at once: the values the controller's rules refuse, the
# groups the plan cannot lay out, the settings valid alone that the Kubernetes checks refuse together.
REJECTED = {
    'rejected-values': ('lws', {'nim_k8s_restart_policy': 'Always', 'nim_k8s_rollout_partition': -1,
                                'nim_k8s_priority_class': 'Not_A_Name', 'nim_k8s_exclusive_topology': 'not a label'}),
    'rejected-plan': ('nim_operator', {}, {
        'tp6': {'nim_tensor_parallel': 6},
        'autoscaling': {'nim_k8s_autoscaling': True},
        'auto-contract': {'nim_launch_contract': 'auto', 'nim_image_tag': 'latest'},
    }),
    # KAI without its queue, Volcano's queue beside it; and a rolling update left no room.
    'rejected-lws-settings': ('lws', {'nim_k8s_scheduler': 'kai', 'nim_k8s_volcano_queue': 'q',
                                      'nim_k8s_rollout_max_surge': 0, 'nim_k8s_rollout_max_unavailable': 0}),
    # LeaderWorkerSet settings the operator has no field for, and two layouts it cannot run: the
    # leader_address contract, and tensor parallelism across nodes (the operator would run it as one
    # single-node pod: its LeaderWorkerSet size is the pipeline).
    'rejected-operator': ('nim_operator', {'nim_k8s_restart_policy': 'None', 'nim_k8s_rollout_partition': 1}, {
        'leader-address': {'nim_launch_contract': 'leader_address', 'nim_socket_ifname': 'eth0'},
        'tp-across-nodes': {'nim_launch_contract': 'ray', 'nim_tensor_parallel': 16, 'nim_pipeline_parallel': 1},
    }),
}

# Independent of each other, so they all run in one parallel batch; the runs that build on an
# earlier one (re-render into the same directory, contract switch) run in the tests themselves.
ALL_RUNS = dict(SCENARIOS, **REJECTED)
ALL_RUNS.update(GROUPED)


class Render:
    """One render-only run: its exit status, output and the files it wrote."""

    # The deployment group whose files paths() lists, and the whole run's (None: every file).
    group = None

    def __init__(self, root, rc, output, inventory=INVENTORY):
        self.root = root
        self.rc = rc
        self.output = output
        self.inventory = inventory

    def paths(self):
        found = []
        for base, _dirs, files in os.walk(self.root):
            found.extend(os.path.relpath(os.path.join(base, name), self.root) for name in files)
        if self.group is not None:
            # A group's own directory and what the run writes for every group (_cluster, _namespaces).
            found = [path for path in found if path.split('/', 1)[0] in (self.group, '_cluster', '_namespaces')]
        return sorted(found)

    def of_group(self, group):
        """The same run, its files narrowed to one deployment group's and the shared ones."""
        view = Render(self.root, self.rc, self.output, self.inventory)
        view.group = group
        return view

    def manifests(self):
        """Relative path -> object, for every Kubernetes object file (not the _cluster records)."""
        return dict((path, self.load(path)) for path in self.paths() if not path.startswith('_cluster/'))

    def load(self, path):
        with open(os.path.join(self.root, path), encoding='utf-8') as handle:
            return yaml.safe_load(handle)

    def one(self, kind):
        found = [obj for obj in self.manifests().values() if obj['kind'] == kind]
        assert len(found) == 1, '%d %s objects rendered, expected 1' % (len(found), kind)
        return found[0]

    def changed(self):
        """The changes of the run, every host of its recap together: the Kubernetes play runs on the
        controller in the name of a host of the groups, the preflight on localhost and the nodes."""
        recap = self.output.split('PLAY RECAP')[-1] if 'PLAY RECAP' in self.output else ''
        counts = [int(line.split('changed=')[1].split()[0]) for line in recap.splitlines() if 'changed=' in line]
        if not counts:
            raise AssertionError('no play recap in the output:\n' + self.output[-3000:])
        return sum(counts)


def grouped_inventory(workdir, name, groups):
    """An inventory of one deployment group per scenario of GROUPED[name]: two hosts each, the
    scenario's variables as the group's. Returns (path, {scenario: group name})."""
    children, names = {}, {}
    for index, (scenario, variables) in enumerate(sorted(groups.items())):
        group = variables.get('nim_group', scenario)
        names[scenario] = group
        children['g%d' % index] = {'hosts': {'%s-%d' % (group, rank): {} for rank in (1, 2)},
                                   'vars': dict(variables, nim_group=group)}
    return write_inventory(workdir, name, children), names


def write_inventory(workdir, name, groups):
    """workdir/NAME.yml: the example inventory's nim_nodes vars over the given child groups, whose own
    vars override them as a child group's do. Inline vars throughout: a group_vars/ file would outrank
    every inline group var, child groups' included."""
    with open(os.path.join(INVENTORY, 'group_vars', 'nim_nodes.yml'), encoding='utf-8') as handle:
        example_vars = yaml.safe_load(handle)
    path = os.path.join(workdir, '%s.yml' % name)
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump({'all': {'children': {'nim_nodes': {'vars': example_vars, 'children': groups}}}}, handle)
    return path


def playbook_env(workdir, **settings):
    """The environment of an ansible-playbook run in workdir: the collection from the workdir, no
    cluster reachable, the tests' fake NGC key; settings add or override ANSIBLE_* variables."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=os.path.join(workdir, 'collections'),
        ANSIBLE_NOCOLOR='1',
        ANSIBLE_RETRY_FILES_ENABLED='0',
        ANSIBLE_LOCAL_TEMP=os.path.join(workdir, 'tmp'),
        KUBECONFIG=os.path.join(workdir, 'no-such-kubeconfig'),
        NGC_API_KEY=FAKE_NGC_KEY,
    )
    env.update(settings)
    return env


def run_render(workdir, name, backend, extra, render_dir=None, inventory=INVENTORY, live=False):
    """Run the playbook render-only (or, with live, against the missing cluster); return a Render.

    Never raises on a failed run.
    """
    render_dir = render_dir or os.path.join(workdir, 'out', name)
    vars_file = os.path.join(workdir, 'vars-%s.json' % name)
    with open(vars_file, 'w', encoding='utf-8') as handle:
        json.dump(dict(extra, nim_k8s_backend=backend, nim_k8s_render_dir='' if live else render_dir,
                       nim_k8s_ssh_key_dir=os.path.join(workdir, 'keys')), handle)
    proc = subprocess.run(
        ['ansible-playbook', '-i', inventory, PLAYBOOK, '-e', '@' + vars_file],
        cwd=workdir, env=playbook_env(workdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=300, check=False)
    return Render(render_dir, proc.returncode, proc.stdout, inventory)
