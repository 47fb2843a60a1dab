"""Validate rendered Kubernetes objects the way an API server would on create.

Built-in kinds go through kubernetes-validate (strict: unknown fields are errors, as with
`kubectl apply --validate=strict`). Custom resources go through the openAPIV3Schema of their CRD
in tests/k8s/crds (the upstream files, pinned by sha256): structural defaults are applied first (the API server defaults before it
validates, and CEL rules see the defaulted object), then the schema with unknown fields refused,
then every x-kubernetes-validations CEL rule with cel-python. Transition rules (those that read
oldSelf) only run on update and are skipped here, as on create.
"""

import copy
import functools
import os

import celpy
import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = '1.32'

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = os.path.join(REPO, 'tests', 'k8s', 'crds')

CRD_FILES = {
    ('apps.nvidia.com', 'NIMService'): 'apps.nvidia.com_nimservices.yaml',
    ('apps.nvidia.com', 'NIMCache'): 'apps.nvidia.com_nimcaches.yaml',
    ('leaderworkerset.x-k8s.io', 'LeaderWorkerSet'): 'leaderworkerset.x-k8s.io_leaderworkersets.yaml',
    ('monitoring.coreos.com', 'PodMonitor'): 'monitoring.coreos.com_podmonitors.yaml',
    ('monitoring.coreos.com', 'PrometheusRule'): 'monitoring.coreos.com_prometheusrules.yaml',
}


class Invalid(Exception):
    """An object the API server would refuse; ``problems`` lists why."""

    def __init__(self, problems):
        super().__init__('\n'.join(problems))
        self.problems = problems


def is_custom(obj):
    group = obj['apiVersion'].split('/')[0] if '/' in obj['apiVersion'] else ''
    return (group, obj['kind']) in CRD_FILES


@functools.lru_cache(maxsize=None)
def _crd_version_schema(group, kind, version):
    path = os.path.join(SCHEMAS, CRD_FILES[(group, kind)])
    with open(path, encoding='utf-8') as handle:
        crd = yaml.safe_load(handle)
    for served in crd['spec']['versions']:
        if served['name'] == version:
            return served['schema']['openAPIV3Schema']
    raise KeyError('%s has no version %s' % (path, version))


def _strict(schema):
    """The schema with additionalProperties: false wherever the API server would prune or refuse."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = dict((key, _strict(value)) for key, value in schema.items())
    if ('properties' in result and 'additionalProperties' not in result
            and not result.get('x-kubernetes-preserve-unknown-fields')):
        result['additionalProperties'] = False
    if result.get('nullable'):
        result.pop('nullable')
        if 'type' in result:
            result['type'] = [result['type'], 'null']
    return result


@functools.lru_cache(maxsize=None)
def _validator(group, kind, version):
    schema = _strict(_crd_version_schema(group, kind, version))
    # ObjectMeta is opaque in CRD schemas; the API server validates it separately.
    schema['properties']['metadata'] = {'type': 'object'}
    return jsonschema.Draft7Validator(schema)


def _defaulted(value, schema):
    """Apply structural defaults as the API server does before validation."""
    if isinstance(value, dict):
        properties = schema.get('properties', {})
        for name, sub in properties.items():
            if name not in value and 'default' in sub:
                value[name] = copy.deepcopy(sub['default'])
        for name, item in value.items():
            if name in properties:
                _defaulted(item, properties[name])
            elif isinstance(schema.get('additionalProperties'), dict):
                _defaulted(item, schema['additionalProperties'])
    elif isinstance(value, list) and isinstance(schema.get('items'), dict):
        for item in value:
            _defaulted(item, schema['items'])
    return value


_CEL = celpy.Environment()


@functools.lru_cache(maxsize=None)
def _program(rule):
    return _CEL.program(_CEL.compile(rule))


def _cel(value, schema, path, problems):
    for check in schema.get('x-kubernetes-validations', []):
        rule = check['rule']
        if 'oldSelf' in rule:
            continue
        try:
            outcome = _program(rule).evaluate({'self': celpy.json_to_cel(value)})
        except celpy.CELEvalError as exc:
            problems.append('%s: CEL rule %r could not be evaluated: %s' % (path, rule, exc))
            continue
        if not bool(outcome):
            problems.append('%s: %s (CEL: %s)' % (path, check.get('message', 'rule failed'), rule))
    if isinstance(value, dict):
        properties = schema.get('properties', {})
        for name, item in sorted(value.items()):
            if name in properties:
                _cel(item, properties[name], '%s.%s' % (path, name), problems)
            elif isinstance(schema.get('additionalProperties'), dict):
                _cel(item, schema['additionalProperties'], '%s.%s' % (path, name), problems)
    elif isinstance(value, list) and isinstance(schema.get('items'), dict):
        for index, item in enumerate(value):
            _cel(item, schema['items'], '%s[%d]' % (path, index), problems)


def validate_custom(obj):
    """Validate a custom resource against its CRD, CEL included; raise Invalid with every problem."""
    group, version = obj['apiVersion'].split('/')
    schema = _crd_version_schema(group, obj['kind'], version)
    obj = _defaulted(copy.deepcopy(obj), schema)
    problems = ['%s: %s' % ('.'.join(str(p) for p in error.absolute_path) or '<root>', error.message)
                for error in _validator(group, obj['kind'], version).iter_errors(obj)]
    _cel(obj, schema, 'self', problems)
    if problems:
        raise Invalid(problems)


def validate_builtin(obj):
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        raise Invalid(['%s: %s' % ('.'.join(str(p) for p in exc.path), exc.message)])


def validate(obj):
    """Validate one object of any kind the collection renders."""
    for key in ('apiVersion', 'kind', 'metadata'):
        if key not in obj:
            raise Invalid(['%s is missing' % key])
    if is_custom(obj):
        validate_custom(obj)
    else:
        validate_builtin(obj)
