# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.filter.docker_spec import FilterModule


def test_the_docker_groups_of_the_plan_by_name():
    docker_groups = FilterModule().filters()['docker_groups']
    plan = {'groups': {'b': {'name': 'b', 'mode': 'docker'}, 'k': {'name': 'k', 'mode': 'kubernetes'},
                       'a': {'name': 'a', 'mode': 'docker'}}, 'hosts': {}}
    assert [g['name'] for g in docker_groups(plan)] == ['a', 'b']
    assert docker_groups({}) == []
