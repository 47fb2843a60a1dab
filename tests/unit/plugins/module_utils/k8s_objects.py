"""Node and Pod objects in the shape `kubectl get nodes,pods -o json` returns (trimmed to what matters)."""

GPU = 'nvidia.com/gpu'
GPU_TAINT = {'key': 'nvidia.com/gpu', 'value': 'present', 'effect': 'NoSchedule'}
GPU_TOLERATIONS = [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
GPU_SELECTOR = {'nvidia.com/gpu.present': 'true'}
RACK = 'topology.kubernetes.io/rack'


def node(name, gpus=8, labels=None, taints=None, ready=True, unschedulable=False, rack=None):
    all_labels = {'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'nvidia.com/gpu.present': 'true'}
    if rack:
        all_labels[RACK] = rack
    all_labels.update(labels or {})
    spec = {'podCIDR': '10.244.1.0/24', 'taints': [GPU_TAINT] if taints is None else taints}
    if unschedulable:
        spec['unschedulable'] = True
    return {
        'apiVersion': 'v1',
        'kind': 'Node',
        'metadata': {'name': name, 'labels': all_labels, 'uid': 'uid-' + name,
                     'creationTimestamp': '2026-11-01T10:00:00Z'},
        'spec': spec,
        'status': {
            # The API serializes quantities as strings.
            'allocatable': {'cpu': '190', 'memory': '2063892936Ki', 'pods': '110', GPU: str(gpus)},
            'capacity': {'cpu': '192', 'memory': '2064000000Ki', 'pods': '110', GPU: str(gpus)},
            'conditions': [
                {'type': 'MemoryPressure', 'status': 'False', 'reason': 'KubeletHasSufficientMemory'},
                {'type': 'Ready', 'status': 'True' if ready else 'False',
                 'reason': 'KubeletReady' if ready else 'KubeletNotReady'},
            ],
        },
    }


def pod(name, node_name, gpus=0, namespace='team-a', phase='Running', labels=None, limits_only=False,
        init_gpus=0):
    resources = {'limits': {GPU: str(gpus)}} if limits_only else {
        'requests': {'cpu': '4', GPU: str(gpus)}, 'limits': {GPU: str(gpus)}}
    spec = {'containers': [{'name': 'main', 'image': 'example/app:1', 'resources': resources},
                           {'name': 'sidecar', 'image': 'example/sidecar:1', 'resources': {}}],
            'schedulerName': 'default-scheduler'}
    if node_name:
        spec['nodeName'] = node_name
    if init_gpus:
        spec['initContainers'] = [{'name': 'warmup', 'image': 'example/warmup:1',
                                   'resources': {'limits': {GPU: str(init_gpus)}}}]
    return {
        'apiVersion': 'v1',
        'kind': 'Pod',
        'metadata': {'name': name, 'namespace': namespace, 'labels': labels or {}},
        'spec': spec,
        'status': {'phase': phase},
    }


def kubectl_list(*objects):
    """What `kubectl get nodes,pods -A -o json` prints: one List of both kinds."""
    return {'apiVersion': 'v1', 'kind': 'List', 'metadata': {'resourceVersion': ''}, 'items': list(objects)}


def group(name='default', size=2, replicas=1, gpus_per_rank=8, topology_key='', **extra):
    result = {'name': name, 'size': size, 'replicas': replicas, 'gpus_per_rank': gpus_per_rank,
              'node_selector': dict(GPU_SELECTOR), 'tolerations': list(GPU_TOLERATIONS),
              'topology_key': topology_key, 'namespace': 'nim', 'object_name': 'nim-' + name}
    result.update(extra)
    return result
