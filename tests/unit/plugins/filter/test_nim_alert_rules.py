# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.filter.nim_alert_rules import FilterModule
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_alerts import ALERTS, alert_names

FILTERS = FilterModule().filters()


def test_filter_is_registered():
    assert sorted(FILTERS) == ['nim_alert_rules']


def test_defaults_from_an_empty_dict_or_none():
    assert alert_names(FILTERS['nim_alert_rules']({})) == list(ALERTS)
    assert FILTERS['nim_alert_rules'](None) == FILTERS['nim_alert_rules']({})


def test_overrides_reach_the_rules():
    groups = FILTERS['nim_alert_rules']({'not_serving_for': '20s'})
    assert groups[0]['rules'][0]['for'] == '20s'


def test_bad_threshold_is_a_filter_error_naming_it():
    with pytest.raises(AnsibleFilterError, match='nim_alert_rules: alert threshold kv_cache_fraction=2 is out of range'):
        FILTERS['nim_alert_rules']({'kv_cache_fraction': 2})


def test_not_a_dict():
    with pytest.raises(AnsibleFilterError, match='expects a dict'):
        FILTERS['nim_alert_rules']('0.9')
