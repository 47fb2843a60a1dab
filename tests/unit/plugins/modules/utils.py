"""Shared helpers for module unit tests: feed arguments, catch exit_json / fail_json."""

import contextlib
import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    patch_module_args = None


class AnsibleExitJson(Exception):
    """Raised in place of exit_json; carries the module's result."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


class AnsibleFailJson(Exception):
    """Raised in place of fail_json; carries the module's result."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


def _exit_json(self, **kwargs):
    kwargs.setdefault('changed', False)
    raise AnsibleExitJson(kwargs)


def _fail_json(self, **kwargs):
    kwargs['failed'] = True
    raise AnsibleFailJson(kwargs)


@contextlib.contextmanager
def module_args(args):
    """Make AnsibleModule see ``args`` as its parameters."""
    args = dict(args)
    args.setdefault('_ansible_remote_tmp', '/tmp')
    args.setdefault('_ansible_keep_remote_files', False)
    if patch_module_args is not None:
        with patch_module_args(args):
            yield
        return
    saved = getattr(basic, '_ANSIBLE_ARGS', None)
    basic._ANSIBLE_ARGS = to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = saved


def run_module(main, args, check_mode=False):
    """Run a module's main() with ``args``; return (result, failed)."""
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(basic.AnsibleModule, 'exit_json', _exit_json)
        mp.setattr(basic.AnsibleModule, 'fail_json', _fail_json)
        with module_args(args):
            try:
                main()
            except AnsibleExitJson as exc:
                return exc.result, False
            except AnsibleFailJson as exc:
                return exc.result, True
    raise AssertionError('module returned without calling exit_json or fail_json')
