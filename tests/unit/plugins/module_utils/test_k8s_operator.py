# -*- coding: utf-8 -*-
"""Labels handed to the NIM Operator come back from its unquoted pod templates as the same strings."""

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_operator import (
    template_safe, template_safe_labels)


def _through_the_template(labels):
    # As manifests/lws.yaml writes them: `{{ $key }}: {{ $value }}`, then parsed as YAML.
    text = ''.join('%s: %s\n' % (key, value) for key, value in labels.items())
    return yaml.safe_load(text)


@pytest.mark.parametrize('value', ['true', 'false', 'True', 'yes', 'No', 'on', 'OFF', 'y', 'n', 'null', '8', '0x1F',
                                   '1e3', '1_000', '0.5', '.inf', '', '~', 'a b', '-', '007'])
def test_every_value_yaml_would_mistype_is_quoted_and_reads_back_as_itself(value):
    assert template_safe(value) != value
    assert _through_the_template({'k': template_safe(value)}) == {'k': value}


@pytest.mark.parametrize('value', ['NVIDIA-H100-80GB-HBM3', 'gpu', 'nvidia.com/gpu.present', 'rack-a', 'a_b.c'])
def test_plain_strings_are_left_as_they_are(value):
    assert template_safe(value) == value
    assert _through_the_template({'k': value}) == {'k': value}


def test_keys_and_values_both_survive_and_the_gpu_operator_label_first_of_all():
    labels = {'nvidia.com/gpu.present': 'true', 'on': 'rack-a', 'pool': 8}
    assert template_safe_labels(labels) == {'nvidia.com/gpu.present': '"true"', '"on"': 'rack-a', 'pool': '"8"'}
    expected = {'nvidia.com/gpu.present': 'true', 'on': 'rack-a', 'pool': '8'}
    assert _through_the_template(template_safe_labels(labels)) == expected
