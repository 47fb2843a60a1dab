# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The deployment plan: one pure function from the inventory's deployment groups to what every
launcher needs (layout, leader, ranks with their env and command, hostfile, ports).

The Docker role and the Kubernetes renderer read the same plan, so a rule fixed here reaches
both paths. build_plan() never raises on bad input: every problem becomes an error string that
names the group, the hosts and the variable, and the caller decides when to fail.

Secrets never enter the plan: the nodes carry only the public settings listed in
SETTING_NAMES, and nim_extra_env may not smuggle the NGC key in.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.nimstack.multinode.plugins.module_utils.inventory_checks import (
    GROUP_NAME_RE, GROUP_NAME_RULE, assign_ranks)
from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import groups_of
from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import as_bool, as_int, image_reference, operator_image
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_parallelism import plan_parallelism
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_contract import ContractError, resolve_contract
from ansible_collections.nimstack.multinode.plugins.module_utils import nim_env, settings as declared
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_env import NimEnvError, build_env

DEPLOYMENT_MODES = ('docker', 'kubernetes')
DEFAULT_GROUP = 'default'

# The public group variables the plan reads; their defaults are the declared ones (None: no default;
# roles/validate_inventory/meta/argument_specs.yml, entry point inventory).
SETTING_NAMES = tuple(sorted((
    'nim_deployment_mode', 'nim_image', 'nim_image_tag', 'nim_model', 'nim_model_profile', 'nim_precision',
    'nim_tensor_parallel', 'nim_pipeline_parallel', 'nim_gpus_per_node', 'nim_gpu_memory_gb',
    'nim_interconnect', 'nim_network_profile', 'nim_network_devices_per_gpu', 'nim_socket_ifname',
    'nim_cache_path', 'nim_api_port', 'nim_mpi_start_timeout', 'nim_launch_contract', 'nim_ssh_port',
    'nim_ray_port', 'nim_master_port', 'nim_shm_size_gb', 'nim_log_level', 'nim_extra_env',
    'nim_frontend_model', 'nim_k8s_namespace', 'nim_k8s_replicas', 'nim_k8s_autoscaling',
)))
SETTING_DEFAULTS = declared.defaults(SETTING_NAMES)
REQUIRED_SETTINGS = ('nim_image', 'nim_image_tag', 'nim_tensor_parallel')
INT_SETTINGS = tuple(name for name in SETTING_NAMES if declared.DECLARED[name]['type'] == 'int')
PORT_SETTINGS = ('nim_api_port', 'nim_ssh_port', 'nim_ray_port', 'nim_master_port')
PROBLEM_PORT_CLASH = ("group '%s': nim_api_port=%d is also its nim_%s_port: the leader listens on both (on the host "
                      "network with Docker, in one pod on Kubernetes); give each its own port")
# May differ between the hosts of one group: each rank gets its own host's value.
PER_HOST_SETTINGS = ('nim_socket_ifname',)

# Env names the plan owns or that carry secrets; nim_extra_env may not set them.
FORBIDDEN_EXTRA_ENV = ('NGC_API_KEY',)

# The planner's and build_env's option names, as the inventory variables a user sets.
_VARIABLE_OF_OPTION = {
    'tensor_parallel': 'nim_tensor_parallel',
    'pipeline_parallel': 'nim_pipeline_parallel',
    'gpus_per_node': 'nim_gpus_per_node',
    'precision': 'nim_precision',
    'gpu_memory_gb': 'nim_gpu_memory_gb',
    'interconnect': 'nim_interconnect',
    'mpi_start_timeout': 'nim_mpi_start_timeout',
    'replicas': 'nim_k8s_replicas',
    'autoscaling': 'nim_k8s_autoscaling',
    'model': 'nim_model',
    'launch_contract': 'nim_launch_contract',
    'network': 'nim_network_profile',
    'socket_ifname': 'nim_socket_ifname',
    'devices_per_gpu': 'nim_network_devices_per_gpu',
    'api_port': 'nim_api_port',
    'ssh_port': 'nim_ssh_port',
    'ray_port': 'nim_ray_port',
    'master_port': 'nim_master_port',
    'model_profile': 'nim_model_profile',
    'log_level': 'nim_log_level',
    'extra_env': 'nim_extra_env',
}
_OPTION_NAME = re.compile(r'(?<![\w.])(%s)(?=[=:.])' % '|'.join(sorted(_VARIABLE_OF_OPTION, key=len, reverse=True)))


def k8s_name(group):
    """The Kubernetes object name of a deployment group (NIMService, LeaderWorkerSet, Service)."""
    return 'nim-%s' % group


def _as_variables(message):
    """Name the inventory variables in a planner or build_env message instead of their options."""
    return _OPTION_NAME.sub(lambda match: _VARIABLE_OF_OPTION[match.group(1)], message)


def _same(a, b):
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _hosts(members):
    return ', '.join(m['host'] for m in members)


def _group_members(nodes, errors):
    """Split the nodes by group, keeping inventory order; return (order, {group: [member]})."""
    groups = {}
    order = []
    for index, node in enumerate(nodes):
        if not isinstance(node, dict) or not node.get('host'):
            errors.append('nodes[%d]: every node needs a host name, got %r' % (index, node))
            continue
        group = node.get('group')
        group = DEFAULT_GROUP if group in (None, '') else group
        if not isinstance(group, str) or not GROUP_NAME_RE.match(group):
            errors.append("host %s: nim_group=%r is not a valid group name: use %s (it becomes part of container "
                          "and Kubernetes names)" % (node['host'], group, GROUP_NAME_RULE))
            continue
        settings = node.get('settings') or {}
        if not isinstance(settings, dict):
            errors.append('host %s: settings must be a mapping of nim_* variables, got %r' % (node['host'], settings))
            settings = {}
        member = {
            'host': node['host'],
            'address': node.get('address') or node['host'],
            'rank': node.get('rank'),
            # Anything beyond the public settings (a stray secret included) is dropped here.
            'settings': dict((k, v) for k, v in settings.items() if k in SETTING_DEFAULTS),
        }
        if group not in groups:
            groups[group] = []
            order.append(group)
        groups[group].append(member)
    return order, groups


def _group_settings(name, members, errors):
    """Merge the members' settings; every non-per-host setting must agree across the group."""
    merged = {}
    for key in SETTING_NAMES:
        seen = [(m['host'], m['settings'][key]) for m in members if m['settings'].get(key) is not None]
        if not seen:
            merged[key] = SETTING_DEFAULTS[key]
            continue
        first = seen[0][1]
        differs = any(not _same(value, first) for _host, value in seen[1:])
        if key in PER_HOST_SETTINGS:
            # Each host keeps its own value on Docker; the group value only exists when they agree.
            merged[key] = None if differs else first
            continue
        if differs:
            detail = ', '.join('%s=%s' % (host, json.dumps(value, sort_keys=True, default=str)) for host, value in seen)
            errors.append("group '%s': %s differs between its hosts (%s): a deployment group runs one model with one "
                          "layout, so set it once for the group" % (name, key, detail))
        merged[key] = first
    return merged


def _normalise(name, settings, errors):
    """Coerce types in place and record every missing or malformed setting."""
    for key in REQUIRED_SETTINGS:
        if settings.get(key) in (None, ''):
            errors.append("group '%s': %s is not set; it is required for every deployment group" % (name, key))
    for key in INT_SETTINGS:
        value = settings.get(key)
        if value is None:
            continue
        number = as_int(value)[0]
        if number is None or number < 1:
            errors.append("group '%s': %s=%r must be an integer >= 1" % (name, key, value))
            settings[key] = None
        else:
            settings[key] = number
    for key in PORT_SETTINGS:
        if settings.get(key) is not None and settings[key] > 65535:
            errors.append("group '%s': %s=%d is not a TCP port (1-65535)" % (name, key, settings[key]))
    autoscaling = as_bool(settings.get('nim_k8s_autoscaling'))
    if autoscaling is None:
        errors.append("group '%s': nim_k8s_autoscaling=%r must be true or false"
                      % (name, settings.get('nim_k8s_autoscaling')))
        autoscaling = False
    settings['nim_k8s_autoscaling'] = autoscaling
    mode = settings.get('nim_deployment_mode')
    if mode not in DEPLOYMENT_MODES:
        errors.append("group '%s': nim_deployment_mode=%r must be one of %s" % (name, mode, ', '.join(DEPLOYMENT_MODES)))
    extra = settings.get('nim_extra_env')
    if extra is None:
        settings['nim_extra_env'] = {}
    elif not isinstance(extra, dict):
        errors.append("group '%s': nim_extra_env must be a mapping of variable names to values, got %r" % (name, extra))
        settings['nim_extra_env'] = {}
    else:
        for key in sorted(extra):
            if key in FORBIDDEN_EXTRA_ENV:
                errors.append("group '%s': nim_extra_env sets %s: the NGC key is a secret and reaches the containers "
                              "only from nim_ngc_api_key (vault or an AWX credential), never from plain env"
                              % (name, key))
            elif isinstance(extra[key], (dict, list)):
                errors.append("group '%s': nim_extra_env.%s must be a scalar, got %r" % (name, key, extra[key]))
        settings['nim_extra_env'] = dict((str(k), str(v)) for k, v in extra.items()
                                         if k not in FORBIDDEN_EXTRA_ENV and not isinstance(v, (dict, list)))


def _assign_ranks(name, members, errors):
    """Give every member its rank by the validator's rules (inventory_checks.assign_ranks: explicit
    nim_node_rank first, the rest in inventory order, unique and contiguous from 0).

    Returns the members sorted by rank, or None when the ranks are inconsistent.
    """
    values = [(m['host'], None if m['rank'] in (None, '') else m['rank']) for m in members]
    ranks, problems = assign_ranks(name, values)
    errors.extend(problems)
    if ranks is None:
        return None
    return sorted((dict(m, rank=ranks[m['host']]) for m in members), key=lambda m: m['rank'])


def _layout_nodes(mode, contract, settings, members):
    """How many ranks (containers, pods) the layout has.

    On Docker every host of the group runs one rank. On Kubernetes the scheduler picks the
    nodes: one pod per pipeline stage under mpi (docs/contracts.md), otherwise as many pods as the
    GPUs need nodes.
    """
    if mode == 'docker':
        return len(members)
    tp = settings.get('nim_tensor_parallel')
    pp = settings.get('nim_pipeline_parallel')
    gpn = settings.get('nim_gpus_per_node') or tp
    if contract == 'mpi' or not (tp and pp and gpn):
        return pp
    return -(-(tp * pp) // gpn)


def _ports(contract, settings):
    ports = {'api': settings['nim_api_port']}
    if contract == 'mpi':
        ports['ssh'] = settings['nim_ssh_port']
    elif contract == 'ray':
        ports['ray'] = settings['nim_ray_port']
    elif contract == 'leader_address':
        ports['master'] = settings['nim_master_port']
    return ports


def _k8s_rank_host(name, namespace, group_index, rank):
    # LWS pod DNS (docs/contracts.md, LeaderWorkerSet): <lws>-<group>-<index>.<lws>.<namespace>.svc
    return '%s-%d-%d.%s.%s.svc' % (name, group_index, rank, name, namespace)


def _rank_env(rank, leader, settings, plan, mode, size, object_name, namespace, tp, pp, contract):
    """build_env for one rank: docker backend on Docker, lws backend (pod field refs) on Kubernetes."""
    return build_env(
        node_rank=rank['rank'], tensor_parallel=tp, pipeline_parallel=pp,
        backend='docker' if mode == 'docker' else 'lws', launch_contract=contract,
        mpi_start_timeout=plan['mpi_start_timeout'], api_port=settings['nim_api_port'],
        network=settings['nim_network_profile'], socket_ifname=rank['socket_ifname'],
        devices_per_gpu=settings['nim_network_devices_per_gpu'], ssh_port=settings['nim_ssh_port'],
        cluster_size=size, group_index=0, leader_name=leader['host'], leader_address=leader['address'],
        namespace=namespace if mode == 'kubernetes' else None,
        lws_name=object_name if mode == 'kubernetes' else None,
        ray_port=settings['nim_ray_port'], master_port=settings['nim_master_port'],
        model_profile=settings['nim_model_profile'], log_level=settings['nim_log_level'],
        cache_path=nim_env.CACHE_PATH, extra_env=settings['nim_extra_env'])


# How each launch contract starts a group, as data the launchers read instead of branching on the
# contract's name (docs/contracts.md). steps: what the Docker launcher does, in order;
# ssh_mesh/hostfile: whether the group needs the SSH trust and an MPI hostfile; port_sets: the
# port ranges (besides the group's own ports) only members may reach, named for nim_firewall.
# operator_multinode: the key of the NIM Operator's NIMService spec.multiNode that runs the
# contract (None: a NIMService cannot express it, only a LeaderWorkerSet of our own can).
LAUNCH = {
    'mpi': {'steps': ('workers', 'workers_ready', 'leader', 'ready'),
            'ssh_mesh': True, 'hostfile': True, 'ray_token': False, 'port_sets': ('mpi_btl',),
            'operator_multinode': 'mpi'},
    'ray': {'steps': ('leader', 'workers_reach_leader', 'workers', 'ready'),
            'ssh_mesh': False, 'hostfile': False, 'ray_token': True, 'port_sets': ('ray', 'ray_workers'),
            'operator_multinode': 'ray'},
    'leader_address': {'steps': ('leader', 'workers', 'ready'),
                       'ssh_mesh': False, 'hostfile': False, 'ray_token': False, 'port_sets': (),
                       'operator_multinode': None},
}

# The mounts of every rank (docs/contracts.md): base is the host directory the role owns (cache:
# nim_cache_path, mesh: the group's SSH mesh directory, group: the group's state directory), path
# a file in it ('' for the directory), target the path in the container ('' for the host path),
# ranks which ranks mount it, needs a launch property that must hold (the Ray token only where
# token authentication is on).
_MOUNTS_ALL = (
    {'base': 'cache', 'path': '', 'target': nim_env.CACHE_PATH, 'mode': 'rw', 'ranks': 'all', 'needs': None},
)
_MOUNTS = {
    'mpi': (
        {'base': 'mesh', 'path': '', 'target': '', 'mode': 'ro', 'ranks': 'all', 'needs': None},
        {'base': 'mesh', 'path': 'private.key', 'target': nim_env.SSH_PRIVATE_KEY, 'mode': 'ro',
         'ranks': 'all', 'needs': None},
        {'base': 'mesh', 'path': 'ssh_config', 'target': nim_env.SSH_DIR + '/config', 'mode': 'ro',
         'ranks': 'all', 'needs': None},
        {'base': 'group', 'path': 'hostfile', 'target': nim_env.MPI_HOSTFILE, 'mode': 'ro',
         'ranks': 'leader', 'needs': None},
        {'base': 'mesh', 'path': 'authorized_keys', 'target': nim_env.SSH_DIR + '/authorized_keys', 'mode': 'ro',
         'ranks': 'worker', 'needs': None},
        {'base': 'mesh', 'path': 'ssh_host_ed25519_key', 'target': nim_env.SSH_HOST_KEY, 'mode': 'ro',
         'ranks': 'worker', 'needs': None},
    ),
    'ray': (
        {'base': 'group', 'path': 'ray-token', 'target': nim_env.RAY_TOKEN_PATH, 'mode': 'ro',
         'ranks': 'all', 'needs': 'ray_token'},
    ),
    'leader_address': (),
}


def launch_of(contract, ranks, ports):
    """The launch data of a group: its contract's steps and needs, the hosts in start order (under
    mpi the workers first and the leader last, as mpirun on the leader reaches every worker's
    sshd; otherwise the leader first, as the workers join it), its mounts and the ports only its
    members may reach (every port the ranks listen on but the API port)."""
    spec = LAUNCH.get(contract)
    if spec is None:
        return None
    hosts = [rank['host'] for rank in sorted(ranks, key=lambda r: r['rank'])]
    leader_first = spec['steps'].index('leader') < spec['steps'].index('workers')
    return {
        'steps': list(spec['steps']),
        'start_order': hosts if leader_first else hosts[1:] + hosts[:1],
        'leader_first': leader_first,
        'ssh_mesh': spec['ssh_mesh'],
        'hostfile': spec['hostfile'],
        'ray_token': spec['ray_token'],
        'mounts': [dict(m) for m in _MOUNTS_ALL + _MOUNTS[contract]],
        'member_ports': sorted(int(port) for name, port in (ports or {}).items() if name != 'api'),
        'port_sets': list(spec['port_sets']),
        'operator_multinode': spec['operator_multinode'],
    }


def host_index(groups):
    """Every host of nim_nodes with its group, mode and, on Docker, its rank and role: the one
    place a role looks up "this host's group" (plan.hosts[inventory_hostname])."""
    index = {}
    for group in groups.values():
        ranks = dict((r['host'], r) for r in group['ranks']) if group['mode'] == 'docker' else {}
        for host in group['hosts']:
            rank = ranks.get(host)
            index[host] = {'group': group['name'], 'mode': group['mode'],
                           'rank': rank['rank'] if rank else None, 'role': rank['role'] if rank else None}
    return index


def _hostfile(slots, workers):
    return ['localhost slots=%d' % slots] + ['%s slots=%d' % (worker, slots) for worker in workers]


def _plan_group(name, members, deployment_mode):
    errors = []
    warnings = []
    settings = _group_settings(name, members, errors)
    if deployment_mode is not None:
        settings['nim_deployment_mode'] = deployment_mode
    _normalise(name, settings, errors)
    mode = settings['nim_deployment_mode']
    requested = settings['nim_launch_contract']
    try:
        contract, contract_reason = resolve_contract(requested, settings['nim_image'], settings['nim_image_tag'],
                                                     settings['nim_model_profile'], settings['nim_extra_env'])
    except ContractError as exc:
        errors.append("group '%s': %s" % (name, exc))
        contract, contract_reason = requested, None
    # Every later rule (layout, env, ports, hostfile) reads the decided contract.
    settings['nim_launch_contract'] = contract
    ranked = _assign_ranks(name, members, errors)
    ports = _ports(contract, settings)
    for key, port in sorted(ports.items()):
        if key != 'api' and port is not None and port == settings['nim_api_port']:
            errors.append(PROBLEM_PORT_CLASH % (name, port, key))

    result = {
        'name': name,
        'valid': False,
        'errors': errors,
        'warnings': warnings,
        'mode': mode,
        'contract': contract,
        'contract_requested': requested,
        'contract_reason': contract_reason,
        'hosts': [m['host'] for m in members],
        'settings': settings,
        'layout': None,
        'leader': None,
        'ranks': [],
        'hostfile': [],
        'size': None,
        'ports': None,
        'k8s': None,
        'image': None,
        'operator_image': None,
        'launch': None,
    }
    if errors:
        return result

    tp = settings['nim_tensor_parallel']
    pp = settings['nim_pipeline_parallel']
    gpn = settings['nim_gpus_per_node'] or tp
    nodes = _layout_nodes(mode, contract, settings, members)
    if mode == 'docker' and contract == 'mpi' and len(members) != pp:
        errors.append("group '%s' has %d hosts (%s) but nim_pipeline_parallel=%d: under the mpi launch contract each "
                      "host runs one pipeline stage, so the group needs exactly %d hosts"
                      % (name, len(members), _hosts(members), pp, pp))
    layout = plan_parallelism(
        tensor_parallel=tp, pipeline_parallel=pp, nodes=nodes, gpus_per_node=gpn, backend='nim',
        model=settings['nim_model'], precision=settings['nim_precision'],
        gpu_memory_gb=settings['nim_gpu_memory_gb'], interconnect=settings['nim_interconnect'],
        mpi_start_timeout=settings['nim_mpi_start_timeout'], replicas=settings['nim_k8s_replicas'],
        autoscaling=settings['nim_k8s_autoscaling'] if mode == 'kubernetes' else False, launch_contract=contract)
    errors.extend("group '%s': %s" % (name, _as_variables(e)) for e in layout['errors']
                  if not _is_size_echo(e, mode, contract))
    warnings.extend("group '%s': %s" % (name, _as_variables(w)) for w in layout['warnings'])
    result['layout'] = layout['plan']
    if errors:
        return result

    plan = layout['plan']
    size = plan['ranks']
    namespace = settings['nim_k8s_namespace']
    object_name = k8s_name(name)
    if mode == 'docker':
        placed = [{'host': m['host'], 'address': m['address'], 'rank': m['rank'],
                   'socket_ifname': m['settings'].get('nim_socket_ifname')} for m in ranked]
    else:
        if any(m['settings'].get('nim_socket_ifname') is not None for m in members) \
                and settings['nim_socket_ifname'] is None:
            errors.append("group '%s': nim_socket_ifname differs between its hosts (%s): on Kubernetes every pod "
                          "of the group gets the same interface name, so set one value for the group"
                          % (name, _hosts(members)))
            return result
        placed = [{'host': _k8s_rank_host(object_name, namespace, 0, r),
                   'address': _k8s_rank_host(object_name, namespace, 0, r), 'rank': r,
                   'socket_ifname': settings.get('nim_socket_ifname')} for r in range(size)]
        for member in members:
            if member['rank'] not in (None, ''):
                warnings.append("group '%s': nim_node_rank on host %s has no effect on Kubernetes, where "
                                "LeaderWorkerSet numbers the pods" % (name, member['host']))
    leader = placed[0]
    ranks = []
    for rank in placed:
        try:
            built = _rank_env(rank, leader, settings, plan, mode, size, object_name, namespace, tp, pp, contract)
        except NimEnvError as exc:
            hosts = '' if mode == 'kubernetes' else ' (host %s)' % rank['host']
            errors.extend("group '%s', rank %d%s: %s" % (name, rank['rank'], hosts, _as_variables(e))
                          for e in exc.errors)
            return result
        ranks.append({
            'host': rank['host'],
            'address': rank['address'],
            'rank': rank['rank'],
            'role': built['role'],
            'env': built['env'],
            'env_list': built['env_list'],
            'resources': built['resources'],
            'command': built['command'],
        })

    slots = plan['gpus_per_rank'] or tp
    if contract == 'mpi':
        hostfile = _hostfile(slots, [r['address'] for r in ranks[1:]])
    else:
        hostfile = []
    result.update({
        # What Docker and Kubernetes pull: repo:tag, or repo@sha256:... when the tag is a digest.
        'image': image_reference(settings['nim_image'], settings['nim_image_tag']),
        # The same image as the NIM Operator's NIMService takes it: {repository, tag}.
        'operator_image': operator_image(settings['nim_image'], settings['nim_image_tag']),
        'leader': {'host': leader['host'], 'address': leader['address']},
        'ranks': ranks,
        'hostfile': hostfile,
        'size': size,
        'ports': ports,
        'launch': launch_of(contract, ranks, dict(ports)),
    })
    if mode == 'kubernetes':
        replicas = settings['nim_k8s_replicas']
        result['k8s'] = {
            'name': object_name,
            'namespace': namespace,
            'replicas': replicas,
            # One hostfile per LWS group, as the leader of group i mounts /etc/mpi/hostfile-<i>.
            'hostfiles': dict(
                ('hostfile-%d' % index,
                 _hostfile(slots, [_k8s_rank_host(object_name, namespace, index, r) for r in range(1, size)]))
                for index in range(replicas)) if contract == 'mpi' else {},
        }
    return result


def _is_size_echo(error, mode, contract):
    """The planner's own nodes-vs-PP message repeats the group-size error with less context."""
    return mode == 'docker' and contract == 'mpi' and error.startswith('nodes=')


def plan_nodes(hosts, host_vars, default_group=DEFAULT_GROUP):
    """The nodes build_plan() takes: each host of ``hosts`` in order, with its address
    (ansible_host, else its name), group (nim_group, else default_group), rank (nim_node_rank, else
    None) and the settings of SETTING_NAMES it sets, nothing else (never the NGC key).

    host_vars maps a host to its variables; only the names above are read from it, so a lazy
    mapping (Ansible's hostvars) templates those values only.
    """
    nodes = []
    for host in hosts:
        hvars = host_vars[host]
        nodes.append({'host': host,
                      'address': hvars['ansible_host'] if 'ansible_host' in hvars else host,
                      'group': hvars['nim_group'] if 'nim_group' in hvars else default_group,
                      'rank': hvars['nim_node_rank'] if 'nim_node_rank' in hvars else None,
                      'settings': dict((name, hvars[name]) for name in SETTING_NAMES if name in hvars)})
    return nodes


def build_plan(nodes, deployment_mode=None):
    """Plan every deployment group found in ``nodes``.

    nodes: list of dict(host, address, group, rank, settings) in inventory order; settings holds
    the host's nim_* variables (SETTING_NAMES; others are ignored). deployment_mode, when given,
    overrides every group's nim_deployment_mode (the Kubernetes playbook plans for Kubernetes
    whatever the inventory's default is).

    Returns dict(valid, errors, warnings, groups={name: group plan}, hosts={host: its group,
    mode, rank and role}, hosts_by_mode={mode: its hosts in inventory order}, groups_by_mode={mode:
    its groups' names, sorted}, summary=[one line per group: its mode and launch contract and why]);
    errors and warnings collect those of every group, each naming its group.
    """
    errors = []
    if deployment_mode is not None and deployment_mode not in DEPLOYMENT_MODES:
        errors.append('deployment_mode=%r must be one of %s' % (deployment_mode, ', '.join(DEPLOYMENT_MODES)))
        deployment_mode = None
    if not nodes:
        errors.append('no hosts in group nim_nodes: the inventory defines the deployment groups through it')
    order, members = _group_members(nodes or [], errors)
    groups = {}
    warnings = []
    for name in order:
        group = _plan_group(name, members[name], deployment_mode)
        group['valid'] = not group['errors']
        groups[name] = group
        errors.extend(group['errors'])
        warnings.extend(group['warnings'])
    summary = ["group '%s': %s, launch contract %s: %s" % (g['name'], g['mode'], g['contract'], g['contract_reason'])
               for g in groups.values()]
    hosts = host_index(groups)
    by_mode = dict((mode, [host for host, entry in hosts.items() if entry['mode'] == mode]) for mode in DEPLOYMENT_MODES)
    groups_by_mode = dict((mode, [name for name, _group in groups_of(groups, mode)]) for mode in DEPLOYMENT_MODES)
    return {'valid': not errors, 'errors': errors, 'warnings': warnings, 'groups': groups,
            'hosts': hosts, 'hosts_by_mode': by_mode, 'groups_by_mode': groups_by_mode, 'summary': summary}
