# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""What a NIMService must carry for the NIM Operator's own templates to read it back unchanged.

The operator renders the pods of a NIMService from text templates and parses the result as YAML
(manifests/lws.yaml and manifests/deployment.yaml of k8s-nim-operator 3.1.2). Its node selector
goes in as ``{{ $key }}: {{ $value }}``, unquoted: a label value such as ``true``, ``yes``, ``8``
or an empty string comes back as a bool, a number or null, the conversion to a LeaderWorkerSet
fails ("unrecognized type: string") and the NIMService never gets its pods. The GPU Operator's
usual label, ``nvidia.com/gpu.present: "true"``, is one of them. So every key and value that YAML
would not read back as the same string is handed over already quoted: the template then writes a
double-quoted YAML scalar, which is the string again.

No Ansible imports: module_utils/k8s_objects.py writes the NIMService's node selector with it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

# A plain scalar that every YAML 1.1 and 1.2 reader (the operator's go-yaml included) takes as a
# string: a letter first, then the characters Kubernetes allows in label keys and values ...
_PLAIN = re.compile(r'^[A-Za-z][A-Za-z0-9._/-]*\Z')
# ... unless it is one of YAML 1.1's words for booleans and null.
_WORDS = frozenset(('y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null'))


def template_safe(text):
    """``text`` as a YAML scalar that reads back as the string ``text`` when written unquoted."""
    text = '%s' % (text,)
    if _PLAIN.match(text) and text.lower() not in _WORDS:
        return text
    return json.dumps(text)


def template_safe_labels(labels):
    """A label mapping (node selector) whose keys and values survive the operator's templates."""
    return dict((template_safe(key), template_safe(value)) for key, value in labels.items())
