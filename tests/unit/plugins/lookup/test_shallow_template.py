# -*- coding: utf-8 -*-
"""shallow_template: the builtin template lookup's copy of the variables becomes a shallow one."""

import copy

from ansible.plugins.lookup.template import LookupModule as TemplateLookup

from ansible_collections.nimstack.multinode.plugins.lookup import shallow_template


def test_the_copy_is_a_new_mapping_sharing_the_values():
    groups = {'all': ['n%04d' % i for i in range(1000)]}
    variables = shallow_template._CopiedShallow({'groups': groups, 'nim_k8s_backend': 'lws'})
    copied = copy.deepcopy(variables)
    assert not isinstance(copied, shallow_template._CopiedShallow)
    assert isinstance(copied, dict) and copied == variables
    assert copied['groups'] is groups
    copied.update({'template_path': 'x.j2', 'nim_k8s_backend': 'nim_operator'})
    assert variables['nim_k8s_backend'] == 'lws' and 'template_path' not in variables


def test_it_is_the_builtin_lookup_with_its_own_documented_options():
    assert issubclass(shallow_template.LookupModule, TemplateLookup)
    for option in ('template_vars', 'variable_start_string', 'comment_start_string', 'trim_blocks'):
        assert '\n  %s:\n' % option in shallow_template.DOCUMENTATION
