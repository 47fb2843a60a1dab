# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The AWX objects as data: surveys against the planner, the NGC credential type, the templates."""

import glob
import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_contract, nim_env, nim_plan
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWX = os.path.join(REPO, 'playbooks', 'awx')
sys.path.insert(0, os.path.join(REPO, 'tests', 'awx'))

import awx_survey  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B


class _Unsafe(str):
    """A value tagged !unsafe: Ansible passes it to the module untemplated."""


def _load(name):
    loader = type('Loader', (yaml.SafeLoader,), {})
    loader.add_constructor('!unsafe', lambda ldr, node: _Unsafe(ldr.construct_scalar(node)))
    with open(os.path.join(AWX, 'vars', name)) as handle:
        return yaml.load(handle, Loader=loader)  # noqa: S506 (a SafeLoader subclass)


SURVEYS = _load('surveys.yml')
OBJECTS = _load('objects.yml')

# What the planner accepts for every multiple-choice question a survey may ask.
PLANNER_CHOICES = {
    'nim_deployment_mode': nim_plan.DEPLOYMENT_MODES,
    'nim_launch_contract': nim_contract.CONTRACT_CHOICES,
    'nim_network_profile': nim_env.NETWORKS,
    'nim_log_level': nim_env.LOG_LEVELS,
}

LAB = LLAMA_405B


def _questions(survey_name=None):
    names = [survey_name] if survey_name else sorted(SURVEYS)
    return [(name, q) for name in names for q in SURVEYS[name]['spec']]


def _argument_spec_options():
    options = {}
    for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')):
        with open(path) as handle:
            specs = yaml.safe_load(handle)['argument_specs']
        for entry in specs.values():
            options.update(entry.get('options') or {})
    return options


def _errors_about(variable, value):
    settings = dict(LAB, **{variable: value})
    nodes = [{'host': 'gpu-%d' % i, 'address': '10.0.0.%d' % (11 + i), 'settings': dict(settings)} for i in (1, 2)]
    return [e for e in build_plan(nodes)['errors'] if variable in e and 'must be' in e]


@pytest.mark.parametrize('name', sorted(SURVEYS))
def test_every_survey_passes_awx_rules(name):
    assert awx_survey.spec_problems(SURVEYS[name]) == []


@pytest.mark.parametrize('name,question', [q for q in _questions() if q[1]['type'] == 'multiplechoice'],
                         ids=lambda v: v if isinstance(v, str) else v['variable'])
def test_multiple_choices_are_exactly_what_the_planner_accepts(name, question):
    variable = question['variable']
    assert variable in PLANNER_CHOICES, '%s: %s has no planner constant to compare with' % (name, variable)
    assert sorted(question['choices']) == sorted(PLANNER_CHOICES[variable])


@pytest.mark.parametrize('variable', sorted(PLANNER_CHOICES))
def test_the_planner_accepts_every_choice_and_refuses_others(variable):
    for choice in PLANNER_CHOICES[variable]:
        assert _errors_about(variable, choice) == [], choice
    assert _errors_about(variable, 'not-a-choice'), 'the planner took a value no survey offers'


@pytest.mark.parametrize('name,question', [q for q in _questions() if q[1]['type'] == 'integer'],
                         ids=lambda v: v if isinstance(v, str) else v['variable'])
def test_integer_bounds_lie_inside_what_the_planner_accepts(name, question):
    variable = question['variable']
    if variable in nim_plan.INT_SETTINGS:
        assert question['min'] >= 1
        assert _errors_about(variable, question['min']) == []
        assert _errors_about(variable, question['max']) == []
        assert _errors_about(variable, 0), '%s=0 is refused by the planner, so the survey must stop at 1' % variable
    else:
        assert question['min'] >= 1, '%s: a count or a timeout below 1 means nothing' % variable
    if variable in nim_plan.PORT_SETTINGS:
        assert question['max'] <= 65535


def test_every_question_sets_a_variable_the_collection_reads():
    options = _argument_spec_options()
    types = {'integer': 'int', 'multiplechoice': 'str', 'text': 'str'}
    for name, question in _questions():
        variable = question['variable']
        if variable.startswith('nimstack_awx_'):
            playbooks = ''.join(open(p).read() for p in glob.glob(os.path.join(AWX, '*.yml')))
            assert variable in playbooks.replace('variable: ' + variable, ''), variable
        elif variable in nim_plan.SETTING_NAMES:
            assert variable in nim_plan.INT_SETTINGS or question['type'] != 'integer', variable
        else:
            assert variable in options, '%s: %s is no setting of the planner nor an argument of a role' % (name, variable)
            assert options[variable]['type'] == types[question['type']], variable


def test_the_teardown_confirmation_fits_its_survey_and_the_playbook():
    question = SURVEYS['nimstack_awx_survey_teardown']['spec'][0]
    with open(os.path.join(AWX, 'teardown.yml')) as handle:
        assert "(nimstack_awx_teardown_confirm | default('')) == 'teardown'" in handle.read()
    assert question['required'] is True and question['min'] == question['max'] == len('teardown')
    problems = awx_survey.extra_vars(SURVEYS['nimstack_awx_survey_teardown'], {})[1]
    assert problems == ['nimstack_awx_teardown_confirm: an answer is required']


def test_blank_optional_answers_keep_the_inventory_values():
    extra, problems = awx_survey.extra_vars(SURVEYS['nimstack_awx_survey_deployment'],
                                            {'nim_image_tag': '1.3.0', 'nim_pipeline_parallel': '2'})
    assert problems == []
    assert extra == {'nim_image_tag': '1.3.0', 'nim_pipeline_parallel': 2}


def test_answers_outside_the_survey_are_refused():
    problems = awx_survey.extra_vars(SURVEYS['nimstack_awx_survey_deployment'],
                                     {'nim_launch_contract': 'slurm', 'nim_tensor_parallel': 0,
                                      'nim_ngc_api_key': 'nvapi-x'})[1]
    assert sorted(problems) == sorted([
        "nim_launch_contract: 'slurm' is not one of auto, mpi, ray, leader_address",
        'nim_tensor_parallel: 0 is not between 1 and 64',
        'nim_ngc_api_key is not a question of survey Deployment',
    ])


def test_no_survey_asks_for_a_secret():
    for question in [entry[1] for entry in _questions()]:
        assert question['type'] != 'password'
        # The planner's own rule for what names a secret (nim_extra_env may not carry one either).
        assert not nim_env._SECRET_NAME.search(question['variable'].upper()), question['variable']  # pylint: disable=protected-access


def test_the_ngc_key_is_injected_as_env_only():
    inputs = OBJECTS['nimstack_awx_ngc_credential_type_inputs']
    injectors = OBJECTS['nimstack_awx_ngc_credential_type_injectors']
    fields = {f['id']: f for f in inputs['fields']}
    assert fields['ngc_api_key']['secret'] is True
    assert inputs['required'] == ['ngc_api_key']
    assert list(injectors) == ['env'], 'the key must not become an extra variable or a file'
    assert injectors['env'] == {'NGC_API_KEY': '{{ ngc_api_key }}'}
    assert isinstance(injectors['env']['NGC_API_KEY'], _Unsafe), 'Ansible would template the injector away'


def test_the_example_inventory_reads_the_injected_env():
    with open(os.path.join(REPO, 'inventories', 'example', 'group_vars', 'nim_nodes.yml')) as handle:
        group_vars = yaml.safe_load(handle)
    assert group_vars['nim_ngc_api_key'] == "{{ lookup('ansible.builtin.env', 'NGC_API_KEY') }}"
    assert OBJECTS['nimstack_awx_inventory_path'] == 'inventories/example'


def test_job_templates_run_existing_playbooks_with_a_known_survey():
    templates = OBJECTS['nimstack_awx_job_templates']
    assert [t['name'] for t in templates] == ['nimstack preflight', 'nimstack site', 'nimstack smoke test',
                                              'nimstack teardown', 'nimstack prepare hosts', 'nimstack deploy']
    for template in templates:
        assert os.path.isfile(os.path.join(REPO, template['playbook'])), template['playbook']
        assert template['survey'] in SURVEYS
    assert {t['name']: t.get('skip_tags') for t in templates} == {
        'nimstack preflight': None, 'nimstack site': None, 'nimstack smoke test': 'doctor', 'nimstack teardown': 'doctor',
        'nimstack prepare hosts': 'nfs,ssh_mesh', 'nimstack deploy': 'nvidia_driver,nvidia_container_toolkit,docker,rdma'}
    with open(os.path.join(REPO, 'playbooks', 'plays', 'doctor.yml')) as handle:
        assert '- doctor' in handle.read(), 'the tag the templates skip is gone from plays/doctor.yml'
    names = {t['name'] for t in templates}
    assert OBJECTS['nimstack_awx_workflow_chain'] == ['nimstack preflight', 'nimstack site', 'nimstack smoke test']
    assert set(OBJECTS['nimstack_awx_workflow_chain']) <= names
    assert OBJECTS['nimstack_awx_workflow_survey'] in SURVEYS


def _rendered(variable):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json', ANSIBLE_LOCALHOST_WARNING='0',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-m',
                          'ansible.builtin.debug', '-a', 'var=' + variable, '-e', '@vars/objects.yml',
                          '-e', '@vars/surveys.yml'], cwd=AWX, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)['plays'][0]['tasks'][0]['hosts']['localhost'][variable]


def test_the_workflow_chains_preflight_site_and_smoke_test_on_success():
    nodes = _rendered('nimstack_awx_workflow_nodes')
    assert [(n['identifier'], n['unified_job_template']['type'], [s['identifier'] for s in n['related']['success_nodes']])
            for n in nodes] == [('nimstack preflight', 'job_template', ['nimstack site']),
                                ('nimstack site', 'job_template', ['nimstack smoke test']),
                                ('nimstack smoke test', 'job_template', [])]


def test_the_sliced_workflow_prepares_in_slices_and_deploys_unsliced():
    templates = {t['name']: t for t in OBJECTS['nimstack_awx_job_templates']}
    nodes = _rendered('nimstack_awx_sliced_workflow_nodes')
    assert [(n['identifier'], [s['identifier'] for s in n['related']['success_nodes']]) for n in nodes] == [
        ('nimstack preflight', ['nimstack prepare hosts']), ('nimstack prepare hosts', ['nimstack deploy']),
        ('nimstack deploy', ['nimstack smoke test']), ('nimstack smoke test', [])]
    assert _rendered('nimstack_awx_prepare_slice_count') == 2
    assert templates['nimstack prepare hosts']['job_slice_count'] == '{{ nimstack_awx_prepare_slice_count }}'
    # Only the deploy-side templates run unsliced.
    assert [n for n, t in templates.items() if 'job_slice_count' in t] == ['nimstack prepare hosts']
    # What the slices skip, the unsliced deploy runs, and the other way round: every preparation tag once.
    with open(os.path.join(REPO, 'playbooks', 'plays', 'prepare_hosts.yml')) as handle:
        prepare = handle.read()
    sliced = set(templates['nimstack prepare hosts']['skip_tags'].split(','))
    unsliced = set(templates['nimstack deploy']['skip_tags'].split(','))
    assert not sliced & unsliced
    assert sliced | unsliced == {'nvidia_driver', 'nvidia_container_toolkit', 'docker', 'rdma', 'nfs', 'ssh_mesh'}
    for tag in sliced | unsliced:
        assert '- ' + tag + '\n' in prepare, 'plays/prepare_hosts.yml no longer has the tag ' + tag


def test_every_job_template_gets_the_machine_and_ngc_credentials():
    assert _rendered('nimstack_awx_job_credentials') == ['nimstack nodes', 'NGC API key']
