# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Type, range and format of every public variable a host or a render depends on, checked on the
controller before any host is contacted.

A mistaken inventory must be refused here, not on a host: a newline in ``ansible_host`` would add
a stranger to the MPI hostfile, ``nim_cache_path: /`` would bind-mount the host's root into every
rank, a tag ``1.10`` that YAML read as the float 1.1 would pull another image. Each rule names
the variable, what is wrong with the value and what is accepted; every problem is collected and
reported at once, per value: hosts that share a wrong value (a group variable) are named together.

Only the variables the inventory (or ``-e``) sets are checked: the roles' defaults are trusted.
No Ansible imports, so the rules are unit-tested directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import json
import math
import posixpath
import re

from ansible_collections.nimstack.multinode.plugins.module_utils import driver_plan, nim_alerts, settings, toolkit_plan, values
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_preflight import (
    INT_OR_PERCENT_RE, LABEL_KEY_RE, LABEL_VALUE_RE, OWN_LABEL_PREFIXES, PRIORITY_CLASS_RE, QUEUE_NAME_RE)

# Directories of the operating system: a directory the collection creates, fills, mounts or
# removes recursively must be a dedicated one below them, never one of them.
SYSTEM_DIRECTORIES = frozenset((
    '/', '/bin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib32', '/lib64', '/libx32', '/media',
    '/mnt', '/opt', '/proc', '/root', '/run', '/sbin', '/srv', '/sys', '/tmp', '/usr', '/var',
    '/usr/bin', '/usr/lib', '/usr/lib64', '/usr/local', '/usr/local/bin', '/usr/sbin', '/usr/share',
    '/var/lib', '/var/log', '/var/cache', '/var/run', '/var/tmp', '/var/spool', '/var/lib/docker',
    '/etc/docker', '/etc/ssh', '/etc/systemd', '/etc/apt', '/etc/yum.repos.d',
))
# Kernel and device trees: nothing of the collection may live below them.
_VIRTUAL_TREES = ('/proc', '/sys', '/dev')

# The host's own sshd listens on 22: a rank's sshd, a container port on the host network or the
# doctor's probe there would clash with it (or take it over).
HOST_SSHD_PORT = 22

# The group nimstack-secrets needs a gid of its own: never a system group's (below 1000) nor
# nogroup's (65534, and 65535, the 16-bit -1), which other accounts share.
SECRETS_GID_MIN = 1000
SHARED_GIDS = (65534, 65535)
# Its gid where the inventory sets none (nim_secrets_gid: the defaults of nim_docker and ssh_mesh).
DEFAULT_SECRETS_GID = 64910

# The CRDs a LeaderWorkerSet release installs, the only ones lws_remove_crds may name (roles/lws/vars).
LWS_CRDS = ('leaderworkersets.leaderworkerset.x-k8s.io', 'disaggregatedsets.disaggregatedset.x-k8s.io')

_HOSTNAME_LABEL = re.compile(r'^(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z')
DNS_LABEL_RE = re.compile(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z')
# A release of a chart or manifest: v1.2.3, with a pre-release such as -rc.1 (never `latest`, a
# branch or an empty string: a run must install the same thing each time).
# A registry as docker login and image references take it: a host name and an optional port.
REGISTRY_RE = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?(:[0-9]{1,5})?\Z')
# A registry user name: no whitespace, quote or shell metacharacter ($oauthtoken is NGC's).
REGISTRY_USER_RE = re.compile(r'^[A-Za-z0-9$._@+-]{1,256}\Z')
# A model name as NIM serves it and the front door's ACLs match it (meta/llama-3.1-8b-instruct).
MODEL_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,255}\Z')
RELEASE_RE = re.compile(r'^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?\Z')
# A chart version as a Helm repository lists it: some charts tag v25.10.0, others 25.7.0.
CHART_VERSION_RE = re.compile(r'^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?\Z')
# A Helm release name (Helm refuses more than 53 characters) and a chart name.
HELM_RELEASE_RE = re.compile(r'^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?\Z')
CHART_NAME_RE = re.compile(r'^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?\Z')
# Where Helm fetches a chart by reference: an OCI registry or an https repository, never plain http.
CHART_REF_RE = re.compile(r'^(oci|https)://[^/\s]+\S*\Z')
DNS_SUBDOMAIN_RE = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z')
# Docker's reference grammar: lower-case path components, an optional registry host[:port].
_IMAGE_RE = re.compile(r'^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*'
                       r'(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*\Z')
TAG_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z')
DIGEST_RE = re.compile(r'^sha256:[a-f0-9]{64}\Z')
RECEIVER_RE = re.compile(r'^[A-Za-z0-9_.-]{1,128}\Z')
HTTP_URL_RE = re.compile(r'^https?://[^\s/]+\S*\Z')
# The offline bundle's URL lands in an apt sources line, after its [options]: no space, quote, # or bracket.
BUNDLE_URL_RE = re.compile(r'^(https?://[^\s/\'"#\[\]]+(/[^\s\'"#\[\]]*)?|file:///[^\s\'"#\[\]]*)\Z')
VARIABLE_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,127}\Z')
GROUP_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z')
PACKAGE_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9+._~:=*-]{0,255}\Z')
MODULE_RE = re.compile(r'^[A-Za-z0-9_-]{1,64}\Z')
DOCKER_SIZE_RE = re.compile(r'^[1-9][0-9]{0,12}[kmgKMG]?\Z')
_SYSTEMD_LIMIT = r'(infinity|[0-9]{1,20}[KMGTPE]?)'
MEMLOCK_RE = re.compile(r'^%s(:%s)?\Z' % (_SYSTEMD_LIMIT, _SYSTEMD_LIMIT))
LIMITS_VALUE_RE = re.compile(r'^(unlimited|infinity|[0-9]{1,20})\Z')
LIMITS_DOMAIN_RE = re.compile(r'^(\*|[@%]?[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}|[0-9]*:[0-9]*|@?[0-9]+)\Z')
PCI_ID_RE = re.compile(r'^0x[0-9A-Fa-f]{4}\Z')
EXPORT_OPTION_RE = re.compile(r'^[a-z_]+(=[A-Za-z0-9_:./@-]+)?\Z')
MOUNT_OPTIONS_RE = re.compile(r'^[A-Za-z0-9_]+(=[A-Za-z0-9_.:/@-]+)?(,[A-Za-z0-9_]+(=[A-Za-z0-9_.:/@-]+)?)*\Z')
MOUNT_SOURCE_RE = re.compile(r'^[A-Za-z0-9.-]+:/[^\s,]*\Z|^\[[0-9A-Fa-f:.]+\]:/[^\s,]*\Z')
VERSION_RE = re.compile(r'^[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?\Z')
OS_LABEL_RE = re.compile(r'^([a-z][a-z0-9.]{0,31})?\Z')
# A script's text: lines of printable characters and tabs (a NUL or an escape would not survive a ConfigMap).
_SCRIPT_BAD = re.compile(r'[\x00-\x08\x0b-\x1f\x7f]')
_ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
_IFNAME_RE = re.compile(r'^[=^]?[A-Za-z0-9_.:@-]{1,15}(,[A-Za-z0-9_.:@-]{1,15})*\Z')
_QUANTITY_RE = re.compile(r'^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?\Z')
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')
_SECRET_BAD = re.compile(r'[\s\x00-\x1f\x7f]', re.UNICODE)


# What a rule says is accepted; the unit tests and docs/troubleshooting.md quote these.
ACCEPT_PORT = 'a whole number from 1 to 65535'
ACCEPT_PORT_NOT_SSHD = 'a whole number from 1 to 65535 other than 22 (the host sshd)'
ACCEPT_PORT_LIST = 'a list of whole numbers from 1 to 65535'
ACCEPT_PORT_RANGE = 'a list of two port numbers [first, last] with first <= last'
ACCEPT_CIDRS = 'a YAML list of IPv4/IPv6 networks such as 10.0.0.0/8'
ACCEPT_SOURCES_NO_WORLD = ('a YAML list of IP addresses or networks such as 10.0.0.0/16, none of them '
                           'the whole internet (*, 0.0.0.0/0, ::/0)')
ACCEPT_SSH_SOURCES = ('a YAML list of host names, IP addresses or networks such as 10.0.0.0/16, none '
                      'of them a wildcard or the whole internet (*, 0.0.0.0/0, ::/0)')
ACCEPT_OWNED_DIR = ('an absolute path to a directory dedicated to the collection, below and not equal '
                    'to a system directory such as /, /etc, /opt, /var, /usr, /home, /tmp, /srv, /mnt')
ACCEPT_FILE = 'an absolute path to a file, outside /proc, /sys and /dev'
ACCEPT_ROOT = 'an absolute path to the tree the role reads, such as /sys (a test may point it elsewhere)'
ACCEPT_CONTROLLER_DIR = ('a directory path on the controller (relative, ~ or absolute) that is not '
                         'a system directory such as /, /etc, /opt, /var, /usr, /home, /tmp')
ACCEPT_HTTPS = 'an https:// URL'
ACCEPT_HTTPS_OR_EMPTY = ACCEPT_HTTPS + ', or empty'
ACCEPT_IMAGE = 'an image repository without tag such as nvcr.io/nim/meta/llama-3.1-8b-instruct'
ACCEPT_IMAGE_TAG = ('a quoted string tag such as "1.10.0" (letters, digits, _ . -; at most 128) or a '
                    'digest sha256:<64 hex digits>')
ACCEPT_DNS_LABEL = 'a DNS label: 1-63 lower-case letters, digits and -, starting and ending with a letter or digit'
ACCEPT_REGISTRY = 'a registry host name, optionally with :port, such as nvcr.io or registry.example.com:5000'
ACCEPT_REGISTRY_USER = 'a user name of letters, digits and $ . _ @ + - (no whitespace, quotes or shell characters)'
ACCEPT_MODEL_NAME = ('a model name as NIM serves it, such as meta/llama-3.1-8b-instruct: letters, digits and '
                     '. _ / : @ + -, starting with a letter or digit')
ACCEPT_RELEASE = 'a release such as v1.2.3 (v, then major.minor.patch, optionally -rc.1)'
ACCEPT_DNS_SUBDOMAIN = 'a DNS subdomain: lower-case letters, digits, - and ., starting and ending with a letter or digit'
ACCEPT_HOST_ADDRESS = 'a host name or an IP address, without spaces, newlines or other characters'
ACCEPT_SECRET = 'a string without whitespace or control characters (set it from ansible-vault or an AWX credential)'
ACCEPT_BOOL = 'true or false'
ACCEPT_STRING = 'a string on one line'
ACCEPT_STRING_LIST = 'a YAML list of strings on one line each'
ACCEPT_MAPPING = 'a YAML mapping'
ACCEPT_ENV = ('a mapping of environment variable names (letters, digits, _) to values on one line '
              '(strings, numbers or booleans)')
ACCEPT_IFNAME = 'an interface name or NCCL list such as eth0, ^lo,docker or =ib0 (no spaces)'
ACCEPT_QUANTITY = 'a Kubernetes quantity such as 500Gi, 1Ti or 64'
ACCEPT_RESOURCES = ('a mapping with limits and/or requests, each a mapping of resource names to '
                    'Kubernetes quantities such as 500Gi or 8')
ACCEPT_OCTAL_MODE = 'a quoted octal mode such as "0775"'
ACCEPT_SECRETS_GID = ('a whole number from 1000 to 2147483647 other than 65534 and 65535 (nogroup): a gid that no '
                      'system group, login account or other group has')
ACCEPT_IMAGE_REFERENCE = ('an image with its tag such as nvcr.io/nim/nvidia/downloader:1.0.0 (or @sha256:<64 hex '
                          'digits>), or empty')
ACCEPT_HELM_RELEASE = 'a Helm release name: 1-53 lower-case letters, digits and -, starting and ending with a letter or digit'
ACCEPT_CHART_NAME = 'a chart name: lower-case letters, digits, -, _ and ., starting and ending with a letter or digit'
ACCEPT_CHART_REF = 'an oci:// or https:// chart reference such as oci://registry.k8s.io/lws/charts/lws'
ACCEPT_CHART_VERSION = 'a chart version such as v25.10.0 or 25.7.0 (major.minor.patch, optionally -rc.1)'
ACCEPT_CHART_ARCHIVE = 'a path on the controller to a chart archive (.tgz), on one line, or empty'
ACCEPT_CONTROLLER_FILE = 'a file path on the controller (relative, ~ or absolute), on one line, or empty'
ACCEPT_MAPPING_LIST = 'a YAML list of mappings'
ACCEPT_DURATION = ('a Prometheus duration longer than 0s such as 15s, 1m30s or 4h (digits and a unit, the units y w d h m s ms each '
                   'at most once, in that order)')
ACCEPT_HOST_PORTS = 'a YAML list of host:port strings such as 127.0.0.1:9093 or [fd00::1]:9093'
ACCEPT_HTTP_URL = 'an http:// or https:// URL without spaces'
ACCEPT_BUNDLE_URL = ('the URL of the offline bundle (http://, https:// or file:///), without spaces, quotes, # or '
                     'brackets')
ACCEPT_RECEIVER = 'a receiver name of letters, digits, _ . and - (at most 128)'
ACCEPT_RECEIVERS = ('a YAML list of Alertmanager receivers, each a mapping with a name (letters, digits, _ . -) '
                    'whose url, api_url and webhook_url are http:// or https:// URLs')
ACCEPT_LABEL_MAP = ('a mapping of Kubernetes label keys (such as release) to label values (up to 63 letters, digits, '
                    '- _ .), none under app.kubernetes.io/ or nimstack.multinode/')
ACCEPT_THRESHOLDS = 'a mapping of alert thresholds, each a known name with a value in its range (ansible-doc -t filter nimstack.multinode.nim_alert_rules)'
ACCEPT_VARIABLE_NAME = 'a variable name: letters, digits and _, not starting with a digit'
ACCEPT_GROUP_NAME = 'an inventory group name: letters, digits, _ . and -, starting with a letter, a digit or _'
ACCEPT_PACKAGES = ('a YAML list of package names, each optionally pinned (name=version): letters, digits and '
                   '+ . _ ~ : = * -, no whitespace')
ACCEPT_MODULES = 'a YAML list of kernel module names (letters, digits, _ and -)'
ACCEPT_DOCKER_SIZE = 'a size as dockerd takes it, such as 100m, 512k or 1g'
ACCEPT_MEMLOCK = ('a systemd limit: infinity or a number of bytes with an optional K, M, G, T, P or E, such as '
                  '64M, optionally soft:hard')
ACCEPT_LIMITS_VALUE = 'unlimited, infinity or a whole number (KiB), as limits.conf takes it'
ACCEPT_LIMITS_DOMAINS = ('a YAML list of limits.conf domains: *, a user, @group, %group or a uid range such as '
                         '1000:, no whitespace')
ACCEPT_PCI_IDS = 'a YAML list of PCI vendor ids such as 0x15b3'
ACCEPT_EXPORT_OPTIONS = 'a YAML list of exports(5) options such as rw, sync or fsid=0 (no comma or whitespace)'
ACCEPT_MOUNT_OPTIONS = 'mount options separated by commas, such as nfsvers=4.2,hard (no whitespace)'
ACCEPT_MOUNT_SOURCE = 'an NFS mount source host:/path, without whitespace'
ACCEPT_LABEL_KEY = 'a Kubernetes label key such as topology.kubernetes.io/rack, or empty'
ACCEPT_INT_OR_PERCENT = 'a whole number or a percentage such as 25% (at most 100%)'
ACCEPT_VERSION = 'a version such as 2.16.0 (major.minor, optionally .patch)'
ACCEPT_PACKAGE_VERSION = 'a package version such as 1.18.0-1 or 1.18.0, or empty for the newest'
ACCEPT_DRIVER_BRANCH = 'a driver branch: three digits, 580 or later, such as "580"'
ACCEPT_DRIVER_VERSION = ('a driver version of nvidia_driver_branch such as "580.95.05", or empty for the newest '
                         'of the branch')
ACCEPT_OS_LABEL = 'a repository directory such as ubuntu22.04 or rhel9.6 (lower-case letters, digits and .), or empty'
ACCEPT_SCRIPT = 'the text of a script (lines of printable characters and tabs), or empty'
ACCEPT_GB_OR_EMPTY = 'a number of GB from 0 to 4096, or empty for the group\'s own'


def accepts_int(low, high):
    return 'a whole number from %d to %d' % (low, high)


def accepts_number(low, high):
    return 'a number from %s to %s' % (low, high)


def accepts_choice(choices):
    return 'one of %s' % ', '.join(str(c) for c in choices)


# The fixed problem texts, quoted in docs/troubleshooting.md.
P_NOT_INT = 'is not a whole number'
P_BOOL_AS_INT = 'is a boolean, not a number'
P_OUT_OF_RANGE = 'is out of range'
P_NOT_NUMBER = 'is not a number'
P_SSHD_PORT = 'is the port of the host sshd'
P_NOT_LIST = 'is not a list'
P_STRING_NOT_LIST = 'is a string, not a list'
P_NOT_NETWORK = 'holds an entry that is not an IP network'
P_WORLD = 'opens the port to the whole internet or to any source'
P_NOT_ABSOLUTE = 'is not an absolute path'
P_SYSTEM_DIR = 'is a system directory, not one dedicated to the collection'
P_VIRTUAL_TREE = 'points into /proc, /sys or /dev'
P_NOT_HTTPS = 'is not an https:// URL'
P_TAG_NUMBER = 'is a number, not a string: YAML reads 1.10 as 1.1; quote the tag'
P_BAD_TAG = 'is not an image tag or digest'
P_TAG_IN_IMAGE = 'holds a tag or digest; put it in nim_image_tag'
P_BAD_IMAGE = 'is not an image repository'
P_BAD_DNS = 'is not a DNS name'
P_BAD_ADDRESS = 'is not a host name or IP address'
P_SECRET_CHARS = 'holds whitespace or control characters (a newline would write extra variables into an env file)'
P_NOT_STRING = 'is not a string'
P_NOT_BOOL = 'is not a boolean'
P_NOT_CHOICE = 'is not one of the accepted values'
P_MULTILINE = 'holds a newline or control character'
P_NOT_MAPPING = 'is not a mapping'
P_BAD_ENV = 'holds an entry that is not NAME: value on one line'
P_BAD_QUANTITY = 'is not a Kubernetes quantity'
P_EMPTY = 'is empty'
P_BAD_RELEASE = 'is not a release version'
P_BAD_NAME = 'holds characters its use does not allow'
P_MOUNT_CHARS = 'holds a colon, comma or whitespace, which would change the meaning of a bind mount or a unit line'
P_NOT_ARCHIVE = 'is not a chart archive (.tgz)'
P_NOT_CHART_REF = 'is not an oci:// or https:// reference'
P_NOT_TEMPLATABLE = ('cannot be worked out on the controller: a template of it fails before any host is contacted '
                     '(an undefined variable, a filter error)')
P_OFF_BRANCH = 'is not a version of nvidia_driver_branch'
P_NO_SUCH_RECEIVER = 'names no receiver of monitoring_alertmanager_receivers (every alert would go nowhere)'
P_NOT_URL = 'holds a URL without http:// or https://, or with a space'
P_OWN_LABEL = 'holds a label key of the collection\'s own marks (app.kubernetes.io/..., nimstack.multinode/...)'
P_BAD_THRESHOLDS = 'holds an alert threshold that is unknown, of the wrong type or out of its range'
P_PATH_CHARS = ('holds .., a quote, $, % or another character that a unit file, a shell or a configuration file '
                'reads specially')

PROBLEMS = (P_NOT_INT, P_BOOL_AS_INT, P_OUT_OF_RANGE, P_NOT_NUMBER, P_SSHD_PORT, P_NOT_LIST,
            P_STRING_NOT_LIST, P_NOT_NETWORK, P_WORLD, P_NOT_ABSOLUTE, P_SYSTEM_DIR, P_VIRTUAL_TREE,
            P_NOT_HTTPS, P_TAG_NUMBER, P_BAD_TAG, P_TAG_IN_IMAGE, P_BAD_IMAGE, P_BAD_DNS, P_BAD_ADDRESS,
            P_SECRET_CHARS, P_NOT_STRING, P_NOT_BOOL, P_NOT_CHOICE, P_MULTILINE, P_NOT_MAPPING, P_BAD_ENV,
            P_BAD_QUANTITY, P_EMPTY, P_BAD_RELEASE, P_BAD_NAME, P_MOUNT_CHARS, P_NOT_ARCHIVE,
            P_NOT_CHART_REF, P_PATH_CHARS, P_BAD_THRESHOLDS, P_NOT_URL, P_OFF_BRANCH, P_NO_SUCH_RECEIVER,
            P_NOT_TEMPLATABLE, P_OWN_LABEL)


class Rule(object):
    """One variable's check: ``check(value)`` returns a problem text (one of PROBLEMS) or None.

    kind is the argument_specs type the value has once accepted (int, float, bool, str, list, dict;
    raw where several shapes are accepted) and choices the values a choice accepts: the roles'
    argument_specs must say the same (tests/unit/plugins/module_utils/test_input_checks.py)."""

    def __init__(self, check, accepts, secret=False, kind='raw', choices=None, detail=None):
        self.check = check
        self.accepts = accepts
        self.secret = secret
        self.kind = kind
        self.choices = tuple(choices) if choices is not None else None
        # detail(value): what exactly is wrong, where one problem text cannot say it (a list).
        self.detail = detail


# ---- value checks -------------------------------------------------------------------------------

def as_int(value):
    """(number, problem): digit strings count (INI and -e hand numbers over as text), bools do not."""
    return values.checked_int(value, P_NOT_INT, P_BOOL_AS_INT)


def _int_check(low, high):
    def check(value):
        number, problem = as_int(value)
        if problem:
            return problem
        if number < low or number > high:
            return P_OUT_OF_RANGE
        return None
    return Rule(check, accepts_int(low, high), kind='int')


def _number_check(low, high):
    def check(value):
        if isinstance(value, bool):
            return P_BOOL_AS_INT
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return P_NOT_NUMBER
        if not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
            return P_NOT_NUMBER
        if value < low or value > high:
            return P_OUT_OF_RANGE
        return None
    return Rule(check, accepts_number(low, high), kind='float')


def _port_problem(value, not_sshd):
    number, problem = as_int(value)
    if problem:
        return problem
    if number < 1 or number > 65535:
        return P_OUT_OF_RANGE
    if not_sshd and number == HOST_SSHD_PORT:
        return P_SSHD_PORT
    return None


def _port(not_sshd=False):
    return Rule(lambda value: _port_problem(value, not_sshd), ACCEPT_PORT_NOT_SSHD if not_sshd else ACCEPT_PORT, kind='int')


def _list_problem(value, item_problem):
    """Why value is not a YAML list whose every item item_problem accepts (returns None for), or None."""
    if isinstance(value, str):
        return P_STRING_NOT_LIST
    if not isinstance(value, list):
        return P_NOT_LIST
    for item in value:
        problem = item_problem(item)
        if problem:
            return problem
    return None


def _list_of(item_problem, accepts):
    return Rule(lambda value: _list_problem(value, item_problem), accepts, kind='list')


def _port_list():
    return _list_of(lambda item: _port_problem(item, False), ACCEPT_PORT_LIST)


def _port_range():
    def check(value):
        if isinstance(value, list) and len(value) != 2:
            return P_OUT_OF_RANGE
        problem = _list_problem(value, lambda item: _port_problem(item, False))
        if problem:
            return problem
        if as_int(value[0])[0] > as_int(value[1])[0]:
            return P_OUT_OF_RANGE
        return None
    return Rule(check, ACCEPT_PORT_RANGE, kind='list')


def _network(text):
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _sources(world_ok, names_ok, accepts):
    """A list of networks (and, where names_ok, host names); world_ok allows 0.0.0.0/0 and ::/0."""
    def source_problem(item):
        text = item if isinstance(item, str) else None
        if text is None or text.strip() != text or not text:
            return P_NOT_NETWORK
        if '*' in text:
            return P_WORLD
        network = _network(text)
        if network is None:
            return None if names_ok and is_hostname(text) else P_NOT_NETWORK
        if network.prefixlen == 0 and not world_ok:
            return P_WORLD
        return None
    return _list_of(source_problem, accepts)


def is_hostname(text):
    if not isinstance(text, str) or not text or len(text) > 253:
        return False
    return all(_HOSTNAME_LABEL.match(label) for label in text.rstrip('.').split('.'))


def is_host_address(text):
    """A host name or an IP address: what may stand in a hostfile, an nft set or authorized_keys."""
    if not isinstance(text, str) or not text:
        return False
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return is_hostname(text)


def _host_address():
    return Rule(lambda value: None if is_host_address(value) else P_BAD_ADDRESS, ACCEPT_HOST_ADDRESS, kind='str')


# A host path lands in bind-mount specs (host:container:mode), mount options and unit lines.
_MOUNT_BREAKERS = re.compile(r'[:,\s]')
# And in unit lines (Environment=, ExecStart=: $ and % are expanded there), shell commands and
# configuration files: a host path holds none of the characters they read specially, nor a ..
# that would take it out of the directory it names.
_PATH_SPECIAL = re.compile(r'''[$%"'\\`;&|<>*?\[\]{}()!#~=]''')


def _path_problem(value, kind, empty_ok):
    if not isinstance(value, str):
        return P_NOT_STRING
    if value == '' and empty_ok:
        return None
    if _CONTROL.search(value):
        return P_MULTILINE
    if kind == 'controller':
        if value.strip() == '':
            return P_EMPTY
        if value.startswith('~') or not value.startswith('/'):
            return None
    if not value.startswith('/'):
        return P_NOT_ABSOLUTE
    if kind != 'controller' and _MOUNT_BREAKERS.search(value):
        return P_MOUNT_CHARS
    if kind != 'controller' and (_PATH_SPECIAL.search(value) or '..' in value.split('/')):
        return P_PATH_CHARS
    normal = posixpath.normpath(value)
    if normal.startswith('//'):
        normal = '/' + normal.lstrip('/')
    if kind != 'root' and any(normal == tree or normal.startswith(tree + '/') for tree in _VIRTUAL_TREES):
        return P_VIRTUAL_TREE
    if kind in ('owned', 'controller') and normal in SYSTEM_DIRECTORIES:
        return P_SYSTEM_DIR
    if kind == 'file' and normal in SYSTEM_DIRECTORIES:
        return P_SYSTEM_DIR
    if kind == 'root' and normal in SYSTEM_DIRECTORIES - frozenset(_VIRTUAL_TREES):
        return P_SYSTEM_DIR
    return None


def _path(kind, empty_ok=False):
    accepts = {'owned': ACCEPT_OWNED_DIR, 'file': ACCEPT_FILE, 'controller': ACCEPT_CONTROLLER_DIR,
               'root': ACCEPT_ROOT}[kind]
    if empty_ok:
        accepts += ', or empty'
    return Rule(lambda value: _path_problem(value, kind, empty_ok), accepts, kind='str')


def _https(empty_ok=True):
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        if value == '' and empty_ok:
            return None
        if _CONTROL.search(value) or ' ' in value:
            return P_MULTILINE
        if not re.match(r'^https://[^/\s]+', value):
            return P_NOT_HTTPS
        return None
    return Rule(check, ACCEPT_HTTPS_OR_EMPTY if empty_ok else ACCEPT_HTTPS, kind='str')


def _image():
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        last = value.rsplit('/', 1)[-1]
        if '@' in value or ':' in last:
            return P_TAG_IN_IMAGE
        if not _IMAGE_RE.match(value):
            return P_BAD_IMAGE
        return None
    return Rule(check, ACCEPT_IMAGE, kind='str')


def _image_tag():
    def check(value):
        if isinstance(value, bool) or isinstance(value, (int, float)):
            return P_TAG_NUMBER
        if not isinstance(value, str):
            return P_NOT_STRING
        if TAG_RE.match(value) or DIGEST_RE.match(value):
            return None
        return P_BAD_TAG
    return Rule(check, ACCEPT_IMAGE_TAG, kind='str')


def _image_reference():
    """An image as docker pulls it: a repository as nim_image takes it, then :tag or @sha256:digest
    (never the implied :latest), or empty."""
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        if value == '':
            return None
        repository, at, digest = value.partition('@')
        if at:
            tagged = bool(DIGEST_RE.match(digest))
        elif ':' in repository.rsplit('/', 1)[-1]:
            repository, _colon, tag = repository.rpartition(':')
            tagged = bool(TAG_RE.match(tag))
        else:
            tagged = False
        if not _IMAGE_RE.match(repository):
            return P_BAD_IMAGE
        return None if tagged else P_BAD_TAG
    return Rule(check, ACCEPT_IMAGE_REFERENCE, kind='str')


def image_reference(image, tag):
    """What docker and Kubernetes pull: repo:tag, or repo@sha256:... for a digest."""
    tag = '' if tag is None else str(tag)
    return '%s%s%s' % (image, '@' if DIGEST_RE.match(tag) else ':', tag)


def operator_image(image, tag):
    """The image as the NIM Operator's spec.image takes it ({repository, tag}): the operator pulls
    repository:tag, so a digest (repo@sha256:<hex>) is split at its last colon, (repo@sha256, <hex>)."""
    repository, _colon, last = image_reference(image, tag).rpartition(':')
    return {'repository': repository, 'tag': last}


def _pattern(regex, accepts, empty_ok=False, problem=P_BAD_NAME):
    """A string the pattern matches whole; problem names what else it is. By default a one-line name
    that lands in a configuration file or a command (an HAProxy ACL, docker login): only the
    characters the pattern allows."""
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        if value == '' and empty_ok:
            return None
        if _CONTROL.search(value):
            return P_MULTILINE
        return None if regex.match(value) else problem
    # An accepts text that already says what empty means (", or empty for the newest") keeps its words.
    return Rule(check, accepts + (', or empty' if empty_ok and 'or empty' not in accepts else ''), kind='str')


def _dns(pattern, accepts, empty_ok=False):
    return _pattern(pattern, accepts, empty_ok, problem=P_BAD_DNS)


def _release():
    return _pattern(RELEASE_RE, ACCEPT_RELEASE, problem=P_BAD_RELEASE)


def _chart_version():
    return _pattern(CHART_VERSION_RE, ACCEPT_CHART_VERSION, problem=P_BAD_RELEASE)


def _chart_ref():
    return _pattern(CHART_REF_RE, ACCEPT_CHART_REF, problem=P_NOT_CHART_REF)


def _controller_file(archive=False):
    """A file the controller reads (a kubeconfig, a manifest, a chart): a path on one line, or empty;
    archive: a chart packed as .tgz, as Helm installs it."""
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        if _CONTROL.search(value):
            return P_MULTILINE
        if archive and value and not value.endswith('.tgz'):
            return P_NOT_ARCHIVE
        return None
    return Rule(check, ACCEPT_CHART_ARCHIVE if archive else ACCEPT_CONTROLLER_FILE, kind='str')


def _secrets_gid():
    def check(value):
        number, problem = as_int(value)
        if problem:
            return problem
        if number < SECRETS_GID_MIN or number > _ID or number in SHARED_GIDS:
            return P_OUT_OF_RANGE
        return None
    return Rule(check, ACCEPT_SECRETS_GID, kind='int')


def _secret():
    def check(value):
        if value is None:
            return None
        if not isinstance(value, str):
            return P_NOT_STRING
        return P_SECRET_CHARS if _SECRET_BAD.search(value) else None
    return Rule(check, ACCEPT_SECRET, secret=True, kind='str')


def as_bool(value):
    """True, False, or None where the value is neither (values.strict_bool)."""
    return values.strict_bool(value)


def _bool():
    return Rule(lambda value: None if as_bool(value) is not None else P_NOT_BOOL, ACCEPT_BOOL, kind='bool')


def _string(empty_ok=True):
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        if _CONTROL.search(value):
            return P_MULTILINE
        if not empty_ok and not value.strip():
            return P_EMPTY
        return None
    return Rule(check, ACCEPT_STRING, kind='str')


def _choice(choices):
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        return None if value in choices else P_NOT_CHOICE
    return Rule(check, accepts_choice(choices), kind='str', choices=choices)


# A rule of RULES that accepts the values its setting's declaration lists (its choices in the
# roles' argument specs, read from module_utils/settings.py): the choices are written once.
CHOICE = object()


def _string_list():
    def item_problem(item):
        if not isinstance(item, (str, int)) or isinstance(item, bool) or _CONTROL.search(str(item)):
            return P_MULTILINE if isinstance(item, str) else P_NOT_STRING
        return None
    return _list_of(item_problem, ACCEPT_STRING_LIST)


def _subset(choices):
    """A list of some of the choices (what a role may remove: naming anything else would remove it)."""
    return _list_of(lambda item: None if item in choices else P_NOT_CHOICE,
                    'a YAML list of none, some or all of: %s' % ', '.join(choices))


def _mapping_list():
    return _list_of(lambda item: None if isinstance(item, dict) else P_NOT_MAPPING, ACCEPT_MAPPING_LIST)


def _mapping():
    return Rule(lambda value: None if isinstance(value, dict) else P_NOT_MAPPING, ACCEPT_MAPPING, kind='dict')


def _env():
    def check(value):
        if not isinstance(value, dict):
            return P_NOT_MAPPING
        for key, item in value.items():
            if not isinstance(key, str) or not _ENV_NAME_RE.match(key):
                return P_BAD_ENV
            if isinstance(item, (dict, list)) or (item is not None and _CONTROL.search(str(item))):
                return P_BAD_ENV
        return None
    return Rule(check, ACCEPT_ENV, kind='dict')


def _ifname():
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        return None if _IFNAME_RE.match(value) else P_MULTILINE if _CONTROL.search(value) else P_NOT_CHOICE
    return Rule(check, ACCEPT_IFNAME, kind='str')


def is_quantity(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return value >= 0
    return isinstance(value, str) and bool(_QUANTITY_RE.match(value))


def _quantity():
    return Rule(lambda value: None if is_quantity(value) else P_BAD_QUANTITY, ACCEPT_QUANTITY, kind='str')


def _resources():
    def check(value):
        if not isinstance(value, dict):
            return P_NOT_MAPPING
        for section, amounts in value.items():
            if section not in ('limits', 'requests') or not isinstance(amounts, dict):
                return P_NOT_MAPPING
            for name, amount in amounts.items():
                if not isinstance(name, str) or not DNS_SUBDOMAIN_RE.match(name.split('/')[-1].lower()):
                    return P_NOT_MAPPING
                if not is_quantity(amount):
                    return P_BAD_QUANTITY
        return None
    return Rule(check, ACCEPT_RESOURCES, kind='dict')


_HOST_PORT_RE = re.compile(r'^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}\Z')


def _duration():
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        # Prometheus's own grammar (nim_alerts.DURATION_RE): units in order, each once; every
        # interval the collection sets is longer than 0s (0s would scrape, evaluate or repeat without end).
        if not (value and nim_alerts.DURATION_RE.match(value)):
            return P_NOT_CHOICE
        return P_OUT_OF_RANGE if nim_alerts.duration_seconds(value) == 0 else None
    return Rule(check, ACCEPT_DURATION, kind='str')


_URL_KEYS = ('url', 'api_url', 'webhook_url')


def _receiver_problem(item):
    """An Alertmanager receiver: a mapping with a name; every URL in it http(s):// on one line."""
    if not isinstance(item, dict):
        return P_NOT_MAPPING
    if not isinstance(item.get('name'), str) or not RECEIVER_RE.match(item['name']):
        return P_BAD_NAME
    pending = [item]
    while pending:
        node = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        if isinstance(node, dict):
            for key in _URL_KEYS:
                if key in node and not (isinstance(node[key], str) and HTTP_URL_RE.match(node[key])):
                    return P_NOT_URL
        pending.extend(child for child in children if isinstance(child, (dict, list)))
    return None


def _receivers():
    return _list_of(_receiver_problem, ACCEPT_RECEIVERS)


def _host_ports():
    def item_problem(item):
        if not isinstance(item, str) or not _HOST_PORT_RE.match(item):
            return P_NOT_CHOICE
        return _port_problem(item.rsplit(':', 1)[1], False)
    return _list_of(item_problem, ACCEPT_HOST_PORTS)


def _thresholds():
    """The alert thresholds, key by key, by the code the rule files are made with (bare metal and
    Kubernetes alike)."""
    def check(value):
        if not isinstance(value, dict):
            return P_NOT_MAPPING
        return P_BAD_THRESHOLDS if nim_alerts.threshold_problems(value) else None
    return Rule(check, ACCEPT_THRESHOLDS, kind='dict', detail=nim_alerts.threshold_problems)


def _label_map():
    """Kubernetes labels the collection adds to its objects: label keys to label values, none of a key
    of the labels the collection marks its own objects with (k8s_preflight.OWN_LABEL_PREFIXES)."""
    def check(value):
        if not isinstance(value, dict):
            return P_NOT_MAPPING
        for key, item in value.items():
            text = '' if item is None else str(item)
            if not (isinstance(key, str) and LABEL_KEY_RE.match(key) and LABEL_VALUE_RE.match(text)) \
                    or _CONTROL.search(text):
                return P_BAD_NAME
            if key.startswith(OWN_LABEL_PREFIXES):
                return P_OWN_LABEL
        return None
    return Rule(check, ACCEPT_LABEL_MAP, kind='dict')


def _octal_mode():
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        return None if re.match(r'^0?[0-7]{3,4}\Z', value) else P_NOT_CHOICE
    return Rule(check, ACCEPT_OCTAL_MODE, kind='str')


def _items(regex, accepts):
    """A YAML list of one-line names the pattern matches whole (packages, modules, options)."""
    return _list_of(lambda item: None if isinstance(item, str) and regex.match(item) else P_BAD_NAME, accepts)


def _host_addresses():
    return _list_of(lambda item: None if is_host_address(item) else P_BAD_ADDRESS,
                    'a YAML list of host names or IP addresses')


def _script():
    def check(value):
        if not isinstance(value, str):
            return P_NOT_STRING
        return P_MULTILINE if _SCRIPT_BAD.search(value) else None
    return Rule(check, ACCEPT_SCRIPT, kind='str')


def _int_or_percent():
    """LeaderWorkerSet's int-or-string: a whole number, or a percentage of at most 100%."""
    def check(value):
        if isinstance(value, bool):
            return P_BOOL_AS_INT
        text = str(value) if isinstance(value, int) else value
        if not isinstance(text, str):
            return P_NOT_STRING
        if not INT_OR_PERCENT_RE.match(text):
            return P_NOT_INT
        return P_OUT_OF_RANGE if text.endswith('%') and int(text[:-1]) > 100 else None
    return Rule(check, ACCEPT_INT_OR_PERCENT, kind='raw')


def _gb_or_empty():
    number = _number_check(0, 4096)
    return Rule(lambda value: None if value == '' else number.check(value), ACCEPT_GB_OR_EMPTY, kind='raw')


def _driver_branch():
    def check(value):
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return P_NOT_STRING
        return None if driver_plan.branch_ok(value) else P_BAD_RELEASE
    return Rule(check, ACCEPT_DRIVER_BRANCH, kind='str')


# ---- the variables ------------------------------------------------------------------------------

_DAY = 86400
_WEEK = 7 * _DAY
_ID = 2 ** 31 - 1

RULES = {
    # Hosts
    'ansible_host': _host_address(),
    'ansible_port': _port(),
    # The deployment groups (group vars of nim_nodes; the planner checks what they mean together)
    'nim_deployment_mode': CHOICE,
    'nim_launch_contract': CHOICE,
    'nim_image': _image(),
    'nim_image_tag': _image_tag(),
    # A model name, or a mapping describing its shape (nim_models checks the keys).
    'nim_model': Rule(lambda value: None if isinstance(value, dict) else _string().check(value),
                      ACCEPT_STRING + ' (a model name), or a mapping describing the model'),
    'nim_model_profile': _string(),
    'nim_precision': _string(),
    'nim_interconnect': _string(),
    'nim_network_profile': _string(),
    'nim_log_level': _string(),
    'nim_tensor_parallel': _int_check(1, 128),
    'nim_pipeline_parallel': _int_check(1, 64),
    'nim_gpus_per_node': _int_check(1, 64),
    'nim_gpu_memory_gb': _number_check(1, 4096),
    'nim_network_devices_per_gpu': _int_check(1, 16),
    'nim_shm_size_gb': _int_check(1, 4096),
    'nim_mpi_start_timeout': _int_check(1, _DAY),
    'nim_k8s_replicas': _int_check(1, 1000),
    'nim_k8s_autoscaling': _bool(),
    'nim_k8s_namespace': _dns(DNS_LABEL_RE, ACCEPT_DNS_LABEL),
    'nim_socket_ifname': _ifname(),
    'nim_extra_env': _env(),
    'nim_cache_path': _path('owned'),
    'nim_api_port': _port(not_sshd=True),
    'nim_ssh_port': _port(not_sshd=True),
    'nim_ray_port': _port(not_sshd=True),
    'nim_master_port': _port(not_sshd=True),
    'nim_api_allowed_cidrs': _sources(True, False, ACCEPT_CIDRS),
    'nim_allow_partial_group': _bool(),
    'nim_group_firewall': _bool(),
    # The group supervisor of Docker groups (nim_docker): its port, restart budget and hold lease.
    'nim_group_supervisor': _bool(),
    'nim_group_supervisor_port': _port(not_sshd=True),
    'nim_group_max_restarts': _int_check(0, 100),
    'nim_group_restart_window': _int_check(60, _WEEK),
    # How long a run's maintenance hold holds the supervisors without a renewal (their lease).
    'nim_group_hold_lease': _int_check(10, _WEEK),
    # Offline mode: where every host takes its packages from (docs/offline.md).
    'nimstack_bundle_url': _pattern(BUNDLE_URL_RE, ACCEPT_BUNDLE_URL, empty_ok=True, problem=P_NOT_URL),
    'nim_group_lost_after': _int_check(0, _WEEK),
    # How long a group may run without serving before its supervisor restarts it (0: no check).
    'nim_group_serving_timeout': _int_check(0, _DAY),
    # The gid of the collection's group nimstack-secrets (nim_docker_secrets_gid, ssh_mesh_secrets_gid).
    'nim_secrets_gid': _secrets_gid(),
    # How many serving groups a restart (dockerd, a driver reload, a reboot) may take down at once.
    'nim_max_unavailable_groups': _int_check(1, 1000),
    # The Docker group a rollout changes first, alone (the preflight checks it names one).
    'nim_canary_group': _string(),
    'nim_ray_auth': Rule(lambda v: None if v is False or (isinstance(v, str) and v.lower() in ('token', 'off', 'false'))
                         else P_NOT_CHOICE, accepts_choice(('token', 'off'))),
    'nim_ngc_api_key': _secret(),
    # nim_frontend (hosts of group nim_frontend) and the model a group serves behind it
    'nim_frontend_model': _pattern(MODEL_NAME_RE, ACCEPT_MODEL_NAME),
    'nim_frontend_port': _port(not_sshd=True),
    'nim_frontend_bind_address': _host_address(),
    'nim_frontend_api_allowed_cidrs': _sources(True, False, ACCEPT_CIDRS),
    'nim_frontend_check_interval_s': _int_check(1, 3600),
    'nim_frontend_check_fall': _int_check(1, 100),
    'nim_frontend_check_rise': _int_check(1, 100),
    'nim_frontend_retries': _int_check(0, 10),
    'nim_frontend_timeout_s': _int_check(1, _DAY),
    'nim_frontend_config_dir': _path('owned'),
    'nim_frontend_state': CHOICE,
    'nim_frontend_manage_packages': _bool(),
    'nim_frontend_metrics_port': _port(not_sshd=True),
    'nim_frontend_metrics_allowed_cidrs': _sources(True, False, ACCEPT_CIDRS),
    'nim_frontend_load_aware': _bool(),
    'nim_frontend_load_interval_s': _int_check(1, 60),
    'nim_frontend_load_wait_s': _number_check(0.1, 3600),
    'nim_frontend_load_min_weight': _int_check(1, 100),
    # 1 would leave no room between the threshold and a full cache.
    'nim_frontend_load_kv_threshold': _number_check(0, 0.99),
    'nim_frontend_program_dir': _path('owned'),
    'nim_frontend_stall_s': _int_check(0, 3600),
    # docker
    'docker_install_source': CHOICE,
    # What a role does with a component the collection did not install (plugins/module_utils/host_components.py)
    'docker_engine_policy': CHOICE,
    'nvidia_driver_policy': CHOICE,
    'nvidia_container_toolkit_policy': CHOICE,
    'docker_repo_url': _https(False),
    'docker_repo_gpg_key_url': _https(),
    'docker_data_root': _path('owned', empty_ok=True),
    'docker_log_max_file': _int_check(1, 100),
    'docker_limit_nofile': _int_check(1024, 2 ** 30),
    'docker_start_timeout': _int_check(1, 3600),
    'docker_enabled': _bool(),
    'docker_packages': _items(PACKAGE_RE, ACCEPT_PACKAGES),
    'docker_repo_channel': _pattern(re.compile(r'^[a-z]{1,32}\Z'), 'a channel of Docker\'s repository such as stable or test'),
    'docker_daemon_json_path': _path('file'),
    'docker_log_driver': _pattern(re.compile(r'^[a-z][a-z0-9-]{0,63}\Z'), 'a log driver name such as json-file or journald'),
    'docker_log_max_size': _pattern(DOCKER_SIZE_RE, ACCEPT_DOCKER_SIZE),
    'docker_daemon_options': _mapping(),
    'docker_nvidia_default_runtime': _bool(),
    'docker_nvidia_runtime_path': _path('file'),
    # A line of dockerd's systemd drop-in (LimitMEMLOCK=).
    'docker_limit_memlock': _pattern(MEMLOCK_RE, ACCEPT_MEMLOCK),
    'docker_live_restore': _bool(),
    'docker_restart_waves': _bool(),
    'docker_restart_group_var': _pattern(VARIABLE_NAME_RE, ACCEPT_VARIABLE_NAME),
    'docker_max_unavailable_groups': _int_check(1, 1000),
    'docker_restart_timeout': _int_check(1, _DAY),
    'docker_restart_wave_tasks': _controller_file(),
    'docker_restart_wave_pre_tasks': _controller_file(),
    # nvidia_driver, nvidia_container_toolkit, rdma: package repositories over https only
    'nvidia_driver_branch': _driver_branch(),
    'nvidia_driver_repo_base_url': _https(False),
    'nvidia_driver_repo_url': _https(),
    'nvidia_driver_repo_key_url': _https(),
    'nvidia_driver_epel_base_url': _https(False),
    'nvidia_driver_epel_repo_url': _https(),
    'nvidia_driver_epel_key_url': _https(),
    'nvidia_driver_reboot_timeout': _int_check(60, _DAY),
    'nvidia_driver_imex_nodes': _string_list(),
    'nvidia_driver_enabled': _bool(),
    'nvidia_driver_version': _pattern(driver_plan.VERSION_RE, ACCEPT_DRIVER_VERSION, empty_ok=True, problem=P_BAD_RELEASE),
    'nvidia_driver_kernel_modules': CHOICE,
    'nvidia_driver_hold': _bool(),
    'nvidia_driver_epel_enabled': _bool(),
    'nvidia_driver_crb_enabled': _bool(),
    'nvidia_driver_sysfs_root': _path('root'),
    'nvidia_driver_procfs_root': _path('root'),
    'nvidia_driver_fabric_manager_enabled': _bool(),
    'nvidia_driver_imex_enabled': _bool(),
    'nvidia_driver_persistenced_enabled': _bool(),
    'nvidia_driver_secure_boot': CHOICE,
    'nvidia_driver_reboot_allowed': _bool(),
    'nvidia_driver_reboot_group_var': _pattern(VARIABLE_NAME_RE, ACCEPT_VARIABLE_NAME),
    'nvidia_driver_max_unavailable_groups': _int_check(1, 1000),
    'nvidia_driver_reboot_wave_tasks': _controller_file(),
    'nvidia_driver_reboot_wave_pre_tasks': _controller_file(),
    'nvidia_container_toolkit_enabled': _bool(),
    'nvidia_container_toolkit_version': _pattern(toolkit_plan.VERSION_RE, ACCEPT_PACKAGE_VERSION, empty_ok=True,
                                                 problem=P_BAD_RELEASE),
    'nvidia_container_toolkit_repo_channel': CHOICE,
    'nvidia_container_toolkit_docker_runtime': _bool(),
    'nvidia_container_toolkit_docker_config': _path('file'),
    'nvidia_container_toolkit_cdi_enabled': _bool(),
    'nvidia_container_toolkit_cdi_spec': _path('file'),
    'nvidia_container_toolkit_verify': _bool(),
    'nvidia_container_toolkit_verify_image': _image_reference(),
    'nvidia_container_toolkit_sysfs_root': _path('root'),
    'nvidia_container_toolkit_repo_base_url': _https(False),
    'nvidia_container_toolkit_repo_url': _https(),
    'nvidia_container_toolkit_repo_key_url': _https(),
    'rdma_doca_repo_url': _https(False),
    'rdma_doca_gpg_key_url': _https(),
    'rdma_min_active_ports': _int_check(0, 64),
    'rdma_enabled': _bool(),
    'rdma_required': _bool(),
    'rdma_install_source': CHOICE,
    'rdma_packages': _items(PACKAGE_RE, ACCEPT_PACKAGES),
    'rdma_doca_version': _pattern(re.compile(r'^[0-9]{1,4}(\.[0-9]{1,4}){1,3}(-[0-9A-Za-z.]{1,32})?\Z'), ACCEPT_VERSION,
                                  problem=P_BAD_RELEASE),
    'rdma_doca_os_label': _pattern(OS_LABEL_RE, ACCEPT_OS_LABEL),
    'rdma_doca_packages': _items(PACKAGE_RE, ACCEPT_PACKAGES),
    'rdma_kernel_modules': _items(MODULE_RE, ACCEPT_MODULES),
    'rdma_gpu_kernel_modules': _items(MODULE_RE, ACCEPT_MODULES),
    # Lines of /etc/security/limits.d: a domain, then the value.
    'rdma_memlock_limit': _pattern(LIMITS_VALUE_RE, ACCEPT_LIMITS_VALUE),
    'rdma_limits_domains': _items(LIMITS_DOMAIN_RE, ACCEPT_LIMITS_DOMAINS),
    'rdma_pci_vendor_ids': _items(PCI_ID_RE, ACCEPT_PCI_IDS),
    'rdma_sysfs_root': _path('root'),
    # nfs
    'nfs_export_path': _path('owned'),
    'nfs_mount_path': _path('owned'),
    'nfs_export_cidrs': _sources(False, False, ACCEPT_SOURCES_NO_WORLD),
    'nfs_cache_owner_uid': _int_check(0, _ID),
    'nfs_cache_owner_gid': _int_check(0, _ID),
    'nfs_cache_mode': _octal_mode(),
    'nfs_write_test_timeout': _int_check(1, 3600),
    'nfs_enabled': _bool(),
    'nfs_server_group': _pattern(GROUP_RE, ACCEPT_GROUP_NAME),
    'nfs_client_group': _pattern(GROUP_RE, ACCEPT_GROUP_NAME),
    # A line of /etc/exports.d: options joined by commas.
    'nfs_export_options': _items(EXPORT_OPTION_RE, ACCEPT_EXPORT_OPTIONS),
    'nfs_export_no_root_squash': _bool(),
    'nfs_server_service_enabled': _bool(),
    'nfs_mount_enabled': _bool(),
    'nfs_server_host': _host_address(),
    # Fields of /etc/fstab (a space would start the next field).
    'nfs_mount_src': _pattern(MOUNT_SOURCE_RE, ACCEPT_MOUNT_SOURCE),
    'nfs_mount_options': _pattern(MOUNT_OPTIONS_RE, ACCEPT_MOUNT_OPTIONS),
    'nfs_manage_packages': _bool(),
    'nfs_write_test': _bool(),
    # ssh_mesh
    'ssh_mesh_dir': _path('owned'),
    'ssh_mesh_port': _port(not_sshd=True),
    'ssh_mesh_secrets_gid': _secrets_gid(),
    'ssh_mesh_key_size': _int_check(2048, 16384),
    'ssh_mesh_authorized_extra_sources': _sources(False, True, ACCEPT_SSH_SOURCES),
    'ssh_mesh_enabled': _bool(),
    'ssh_mesh_state': CHOICE,
    'ssh_mesh_address': _host_address(),
    'ssh_mesh_host_names': _host_addresses(),
    'ssh_mesh_manage_packages': _bool(),
    # nim_firewall
    'nim_firewall_api_allowed_cidrs': _sources(True, False, ACCEPT_CIDRS),
    'nim_firewall_extra_member_sources': _sources(False, False, ACCEPT_SOURCES_NO_WORLD),
    'nim_firewall_management_ports': _port_list(),
    'nim_firewall_ephemeral_ports': _port_range(),
    'nim_firewall_mpi_ports': _port_range(),
    'nim_firewall_ray_ports': _port_list(),
    'nim_firewall_ray_worker_ports': _port_range(),
    'nim_firewall_rules_file': _path('file'),
    'nim_firewall_monitoring_sources': _sources(False, False, ACCEPT_SOURCES_NO_WORLD),
    'nim_firewall_monitoring_ports': _port_list(),
    'nim_firewall_enabled': _bool(),
    'nim_firewall_state': CHOICE,
    'nim_firewall_supervisor_ports': _port_list(),
    'nim_firewall_persist': _bool(),
    'nim_firewall_manage_packages': _bool(),
    # monitoring (hosts of nim_monitoring; the exporters on the Docker hosts)
    'nim_monitoring_sources': _sources(False, False, ACCEPT_SOURCES_NO_WORLD),
    'monitoring_mode': CHOICE,
    'monitoring_state': CHOICE,
    'monitoring_dir': _path('owned'),
    'monitoring_scrape_interval': _duration(),
    'monitoring_evaluation_interval': _duration(),
    'monitoring_prometheus_port': _port(not_sshd=True),
    'monitoring_alertmanager_port': _port(not_sshd=True),
    'monitoring_alertmanagers': _host_ports(),
    'monitoring_alertmanager_receivers': _receivers(),
    'monitoring_alertmanager_receiver': _pattern(RECEIVER_RE, ACCEPT_RECEIVER),
    'monitoring_alertmanager_group_wait': _duration(),
    'monitoring_alertmanager_group_interval': _duration(),
    'monitoring_alertmanager_repeat_interval': _duration(),
    'monitoring_alert_thresholds': _thresholds(),
    'monitoring_grafana_prometheus_url': _pattern(HTTP_URL_RE, ACCEPT_HTTP_URL),
    'monitoring_manage_packages': _bool(),
    'monitoring_node_exporter_port': _port(not_sshd=True),
    'monitoring_dcgm_exporter': _bool(),
    'monitoring_dcgm_exporter_image': _image(),
    'monitoring_dcgm_exporter_tag': _image_tag(),
    'monitoring_dcgm_exporter_port': _port(not_sshd=True),
    'monitoring_frontend_metrics_port': _port(not_sshd=True),
    # nim_docker
    'nim_docker_registry': _pattern(REGISTRY_RE, ACCEPT_REGISTRY),
    'nim_docker_registry_username': _pattern(REGISTRY_USER_RE, ACCEPT_REGISTRY_USER),
    'nim_docker_image_archive': _string(),
    'nim_docker_image_archive_on_nodes': _bool(),
    'nim_docker_download_image': _image_reference(),
    'nim_docker_download_image_archive': _string(),
    'nim_docker_config_dir': _path('owned'),
    'nim_docker_mesh_dir': _path('owned'),
    'nim_docker_image_staging_dir': _path('owned'),
    'nim_docker_container_prefix': _dns(DNS_LABEL_RE, ACCEPT_DNS_LABEL),
    'nim_docker_container_uid': _int_check(0, _ID),
    'nim_docker_container_gid': _int_check(0, _ID),
    'nim_docker_secrets_gid': _secrets_gid(),
    'nim_docker_restart_policy': CHOICE,
    'nim_docker_ngc_api_key': _secret(),
    'nim_docker_transfer_timeout': _int_check(1, _WEEK),
    'nim_docker_transfer_poll_interval': _int_check(1, 3600),
    'nim_docker_max_unavailable_groups': _int_check(1, 1000),
    'nim_docker_canary_group': _string(),
    'nim_docker_wave_settle_s': _int_check(0, 3600),
    'nim_docker_pull_retries': _int_check(0, 64),
    'nim_docker_pull_retry_delay': _int_check(1, 3600),
    'nim_docker_worker_timeout': _int_check(1, _DAY),
    'nim_docker_drain_timeout': _int_check(0, _DAY),
    'nim_docker_ready_timeout': _int_check(0, _WEEK),
    'nim_docker_ready_interval': _int_check(1, 3600),
    'nim_docker_log_lines': _int_check(0, 100000),
    'nim_docker_supervisor_interval': _int_check(1, 3600),
    'nim_docker_supervisor_log_lines': _int_check(0, 100000),
    'nim_docker_supervisor_dir': _path('owned'),
    'nim_docker_supervisor': _bool(),
    'nim_docker_supervisor_port': _port(not_sshd=True),
    'nim_docker_max_restarts': _int_check(0, 100),
    'nim_docker_restart_window': _int_check(60, _WEEK),
    'nim_docker_supervisor_hold_lease': _int_check(10, _WEEK),
    'nim_docker_supervisor_lost_after': _int_check(0, _WEEK),
    'nim_docker_supervisor_serving_timeout': _int_check(0, _DAY),
    'nim_docker_smoke_max_tokens': _int_check(1, 100000),
    'nim_docker_smoke_timeout': _int_check(1, _DAY),
    'nim_docker_ulimits': _string_list(),
    'nim_docker_download_command': _string_list(),
    'nim_docker_enabled': _bool(),
    'nim_docker_state': CHOICE,
    'nim_docker_download_model': _bool(),
    'nim_docker_overlap_transfers': _bool(),
    'nim_docker_manage_cache_dir': _bool(),
    'nim_docker_allow_partial_group': _bool(),
    'nim_docker_require_gpus': _bool(),
    'nim_docker_smoke_test': _bool(),
    'nim_docker_smoke_prompt': _string(empty_ok=False),
    'nim_docker_ray_auth': CHOICE,
    # doctor
    'doctor_report_dir': _path('controller'),
    'doctor_mesh_dir': _path('owned'),
    'doctor_ssh_probe_port': _port(not_sshd=True),
    'doctor_port_range': _port_range(),
    'doctor_ray_ports': _port_list(),
    'doctor_port_sample': _int_check(0, 1000),
    'doctor_connect_timeout': _int_check(1, 600),
    'doctor_task_timeout': _int_check(1, 3600),
    'doctor_nccl_test_timeout': _int_check(1, _DAY),
    'doctor_enabled': _bool(),
    'doctor_fail': _bool(),
    'doctor_memlock_min_kb': _int_check(-1, 2 ** 62),
    'doctor_shm_min_gb': _gb_or_empty(),
    'doctor_disk_margin': _number_check(1, 100),
    'doctor_clock_skew_max_s': _number_check(0, 3600),
    'doctor_clock_require_sync': _bool(),
    'doctor_require_gpus': _bool(),
    'doctor_nccl_test': _bool(),
    'doctor_nccl_test_command': _string_list(),
    'doctor_nccl_min_fraction': _number_check(0, 1),
    # Kubernetes
    'nim_k8s_render_dir': _path('controller', empty_ok=True),
    'nim_k8s_ssh_key_dir': _path('controller'),
    'nim_k8s_ngc_api_key': _secret(),
    'nim_k8s_auth_secret': _dns(DNS_SUBDOMAIN_RE, ACCEPT_DNS_SUBDOMAIN),
    'nim_k8s_pull_secret': _dns(DNS_SUBDOMAIN_RE, ACCEPT_DNS_SUBDOMAIN),
    'nim_k8s_registry': _pattern(REGISTRY_RE, ACCEPT_REGISTRY),
    'nim_k8s_backend': CHOICE,
    'nim_k8s_storage': CHOICE,
    'nim_k8s_cache_profiles': _string_list(),
    'nim_k8s_pvc_name': _dns(DNS_SUBDOMAIN_RE, ACCEPT_DNS_SUBDOMAIN, empty_ok=True),
    'nim_k8s_storage_class': _dns(DNS_SUBDOMAIN_RE, ACCEPT_DNS_SUBDOMAIN, empty_ok=True),
    'nim_k8s_storage_size': _quantity(),
    'nim_k8s_resources': _resources(),
    'nim_k8s_node_selector': _mapping(),
    'nim_k8s_tolerations': _mapping_list(),
    'nim_k8s_scheduler_check': _bool(),
    'nim_k8s_capacity_check': _bool(),
    'nim_k8s_user_id': _int_check(0, _ID),
    'nim_k8s_group_id': _int_check(0, _ID),
    'nim_k8s_startup_timeout': _int_check(0, _WEEK),
    'nim_k8s_cache_timeout': _int_check(1, _WEEK),
    'nim_k8s_service_monitor': _mapping(),
    'nim_k8s_router': _mapping(),
    'nim_k8s_compute_domain': _string(),
    'nim_k8s_monitoring': _bool(),
    'nim_k8s_monitoring_labels': _label_map(),
    'nim_k8s_monitoring_interval': _duration(),
    'nim_k8s_alert_thresholds': _thresholds(),
    'nim_k8s_probe_period': _int_check(1, 3600),
    'nim_k8s_smoke_timeout': _int_check(1, _DAY),
    # The Kubernetes play's own switch (playbooks/plays/deploy_kubernetes.yml).
    'nim_k8s_install_components': _bool(),
    'nim_k8s_state': CHOICE,
    'nim_k8s_render_secrets': _bool(),
    'nim_k8s_kubeconfig': _controller_file(),
    'nim_k8s_context': _string(),
    'nim_k8s_create_secrets': _bool(),
    'nim_k8s_storage_access_mode': CHOICE,
    'nim_k8s_scheduler': CHOICE,
    'nim_k8s_volcano_queue': _dns(QUEUE_NAME_RE, ACCEPT_DNS_SUBDOMAIN, empty_ok=True),
    # KAI reads the queue from a label.
    'nim_k8s_kai_queue': _pattern(LABEL_VALUE_RE, 'a label value: up to 63 letters, digits, - _ and ., or empty'),
    'nim_k8s_exclusive_topology': _pattern(LABEL_KEY_RE, ACCEPT_LABEL_KEY, empty_ok=True),
    'nim_k8s_restart_policy': CHOICE,
    'nim_k8s_rollout_max_unavailable': _int_or_percent(),
    'nim_k8s_rollout_max_surge': _int_or_percent(),
    'nim_k8s_rollout_partition': _int_check(0, 999999),
    'nim_k8s_priority_class': _dns(PRIORITY_CLASS_RE, ACCEPT_DNS_SUBDOMAIN, empty_ok=True),
    'nim_k8s_image_pull_policy': CHOICE,
    'nim_k8s_service_type': CHOICE,
    'nim_k8s_mpi_start_script': _script(),
    'nim_k8s_wait': _bool(),
    'nim_k8s_smoke_test': _bool(),
    'nim_k8s_smoke_image': _image_reference(),
    'nim_k8s_keep_storage': _bool(),
    # The components (roles lws, nim_operator, volcano), installed from the controller
    'lws_state': CHOICE,
    'lws_namespace': _dns(DNS_LABEL_RE, ACCEPT_DNS_LABEL),
    'lws_version': _release(),
    'lws_install_method': CHOICE,
    'lws_gang_scheduling': CHOICE,
    'lws_helm_release': _pattern(HELM_RELEASE_RE, ACCEPT_HELM_RELEASE),
    'lws_helm_chart_ref': _chart_ref(),
    'lws_helm_chart_path': _controller_file(),
    'lws_helm_values': _mapping(),
    'lws_manifest_url': _https(False),
    'lws_manifest_file': _controller_file(),
    'lws_remove_crds': _subset(LWS_CRDS),
    'lws_render_dir': _path('controller', empty_ok=True),
    'lws_wait_timeout': _int_check(1, _DAY),
    'lws_kubeconfig': _controller_file(),
    'lws_context': _string(),
    'nim_operator_state': CHOICE,
    'nim_operator_namespace': _dns(DNS_LABEL_RE, ACCEPT_DNS_LABEL),
    'nim_operator_version': _release(),
    'nim_operator_helm_release': _pattern(HELM_RELEASE_RE, ACCEPT_HELM_RELEASE),
    'nim_operator_helm_repo_url': _https(False),
    'nim_operator_helm_chart': _pattern(CHART_NAME_RE, ACCEPT_CHART_NAME),
    'nim_operator_helm_chart_file': _controller_file(archive=True),
    'nim_operator_helm_values': _mapping(),
    'nim_operator_gpu_operator_enabled': _bool(),
    'nim_operator_gpu_operator_version': _chart_version(),
    'nim_operator_gpu_operator_namespace': _dns(DNS_LABEL_RE, ACCEPT_DNS_LABEL),
    'nim_operator_gpu_operator_values': _mapping(),
    'nim_operator_network_operator_enabled': _bool(),
    'nim_operator_network_operator_version': _chart_version(),
    'nim_operator_network_operator_namespace': _dns(DNS_LABEL_RE, ACCEPT_DNS_LABEL),
    'nim_operator_network_operator_values': _mapping(),
    'nim_operator_needs_lws': _bool(),
    'nim_operator_render_dir': _path('controller', empty_ok=True),
    'nim_operator_wait_timeout': _int_check(1, _DAY),
    'nim_operator_kubeconfig': _controller_file(),
    'nim_operator_context': _string(),
    'volcano_state': CHOICE,
    'volcano_namespace': _dns(DNS_LABEL_RE, ACCEPT_DNS_LABEL),
    'volcano_version': _release(),
    'volcano_install_method': CHOICE,
    'volcano_helm_release': _pattern(HELM_RELEASE_RE, ACCEPT_HELM_RELEASE),
    'volcano_helm_repo_url': _https(False),
    'volcano_helm_chart': _pattern(CHART_NAME_RE, ACCEPT_CHART_NAME),
    'volcano_helm_chart_file': _controller_file(archive=True),
    'volcano_helm_values': _mapping(),
    'volcano_manifest_url': _https(False),
    'volcano_manifest_file': _controller_file(),
    'volcano_render_dir': _path('controller', empty_ok=True),
    'volcano_wait_timeout': _int_check(1, _DAY),
    'volcano_kubeconfig': _controller_file(),
    'volcano_context': _string(),
    # validate_inventory
    'validate_inventory_enabled': _bool(),
    'validate_inventory_group': _pattern(GROUP_RE, ACCEPT_GROUP_NAME),
    'validate_inventory_default_nim_group': _pattern(GROUP_RE, ACCEPT_GROUP_NAME),
    'validate_inventory_ansible_min_version': _pattern(VERSION_RE, ACCEPT_VERSION, problem=P_BAD_RELEASE),
    'validate_inventory_ansible_max_version': _pattern(VERSION_RE, ACCEPT_VERSION, empty_ok=True, problem=P_BAD_RELEASE),
    'validate_inventory_check_inputs': _bool(),
    'validate_inventory_check_os': _bool(),
    'validate_inventory_supported_os': _mapping_list(),
}
RULES = dict((name, _choice(settings.choices(name)) if rule is CHOICE else rule) for name, rule in RULES.items())
CHECKED_VARIABLES = tuple(sorted(RULES))
# The role options the collection's own plays and roles pass, never an inventory: the run's plan,
# the hosts of a restart wave, the groups of the Kubernetes play, and every option of role common
# (the tasks the other roles share). Every other option of a role has a rule above
# (tests/unit/plugins/module_utils/test_input_checks.py).
PASSED_BY_THE_COLLECTION = frozenset((
    'doctor_plan', 'monitoring_plan', 'nim_docker_plan', 'nim_firewall_plan', 'nim_frontend_plan', 'nim_k8s_plan',
    'ssh_mesh_plan', 'nim_k8s_groups', 'nim_docker_serve_again_hosts', 'nim_docker_serve_again_interrupted',
))
PASSED_BY_THE_COLLECTION_PREFIX = 'common_'
# The inventory's settings that inventory_checks checks with the ranks of their group, not a rule here.
CHECKED_WITH_THE_RANKS = frozenset(('nim_group', 'nim_node_rank'))
# The prefixes of the collection's settings: a variable with one that no rule, plan setting or
# pass-through names is a misspelling, warned of with the nearest name (inventory_checks).
SETTING_PREFIXES = ('nim_', 'docker_', 'nvidia_', 'rdma_', 'nfs_', 'ssh_mesh_', 'monitoring_', 'doctor_', 'lws_',
                    'volcano_', 'validate_inventory_')
# What the preflight itself publishes on the controller.
PUBLISHED = ('nim_planned', 'nim_planned_hosts', 'nim_planned_kubernetes')


class Untemplatable(object):
    """A value Ansible could not work out on the controller, with why (its first line)."""

    def __init__(self, error):
        self.error = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def show(value, secret=False):
    """The value as a message shows it: escaped (a newline stays visible), short, never a secret."""
    if isinstance(value, Untemplatable):
        return '(%s)' % (value.error if len(value.error) <= 160 else value.error[:157] + '...')
    if secret:
        return '<hidden>'
    if isinstance(value, str):
        text = json.dumps(value)
    else:
        try:
            text = json.dumps(value, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


def check_value(name, value):
    """The problem text of one variable's value, or None (also for variables without a rule)."""
    rule = RULES.get(name)
    if rule is None or value is None:
        return None
    if isinstance(value, Untemplatable):
        return P_NOT_TEMPLATABLE
    return rule.check(value)


def where(hosts, group_of, members):
    """Name the hosts of one finding: a whole deployment group by its name, else the hosts."""
    groups = sorted(set(group_of.get(h) for h in hosts if group_of.get(h) is not None))
    if len(groups) == 1 and set(hosts) == set(members.get(groups[0], ())) and len(hosts) > 1:
        label = "group '%s' (hosts %s)" % (groups[0], _list(hosts))
    else:
        label = '%s %s' % ('host' if len(hosts) == 1 else 'hosts', _list(hosts))
    return label


def _list(hosts, limit=6):
    if len(hosts) <= limit:
        return ', '.join(hosts)
    return '%s and %d more' % (', '.join(hosts[:limit]), len(hosts) - limit)


# The driver branch where the inventory sets none (the default of role nvidia_driver).
DEFAULT_DRIVER_BRANCH = '580'
ACCEPT_ROUTED_RECEIVER = 'the name of one of monitoring_alertmanager_receivers, or any name when that list is empty'


def cross_problems(hvars):
    """What two settings of one host say together that neither says alone: [(variable, problem,
    accepted)], each naming the variable to change. Only values their own rules accept are read."""
    def ok(name, default=None):
        value = hvars.get(name, default)
        return value if value is not None and check_value(name, value) is None else None

    problems = []
    version, branch = ok('nvidia_driver_version'), ok('nvidia_driver_branch', DEFAULT_DRIVER_BRANCH)
    if version and branch is not None and driver_plan.version_off_branch(version, branch):
        problems.append(('nvidia_driver_version', '%s %s' % (P_OFF_BRANCH, branch), ACCEPT_DRIVER_VERSION))
    receivers, receiver = ok('monitoring_alertmanager_receivers'), ok('monitoring_alertmanager_receiver')
    if receivers and 'monitoring_alertmanager_receiver' in hvars and receiver is not None \
            and receiver not in [item['name'] for item in receivers]:
        problems.append(('monitoring_alertmanager_receiver', P_NO_SUCH_RECEIVER, ACCEPT_ROUTED_RECEIVER))
    return problems


# Every port the collection listens on, by feature: (variable, the setting it follows where the
# inventory sets none, its default, the hosts it is in effect on, when). Where: docker (a host of a
# Docker group), exporters (the same, while a nim_monitoring host watches them), frontend
# (nim_frontend), monitoring (nim_monitoring). When: a test of the host's settings. Any two in
# effect on one host must differ (clash_problems): a new feature's port is one line here, and meets
# every other without a rule of its own. The defaults are the roles' (a unit test holds them so).
_CONTRACT = ('nim_launch_contract', 'mpi')


def _contract_is(*names):
    return lambda get: get(*_CONTRACT) in names + ('auto',)


LISTENERS = (
    ('nim_api_port', None, 8000, 'docker', None),
    ('nim_ssh_port', None, 2222, 'docker', _contract_is('mpi')),
    ('nim_ray_port', None, 6379, 'docker', _contract_is('ray')),
    ('nim_master_port', None, 50000, 'docker', _contract_is('leader_address')),
    ('nim_docker_supervisor_port', 'nim_group_supervisor_port', 8479, 'docker',
     lambda get: as_bool(get('nim_docker_supervisor', get('nim_group_supervisor', True)))),
    ('doctor_ssh_probe_port', None, 2299, 'docker', _contract_is('mpi')),
    ('monitoring_node_exporter_port', None, 9100, 'exporters', None),
    ('monitoring_dcgm_exporter_port', None, 9400, 'exporters', lambda get: as_bool(get('monitoring_dcgm_exporter', True))),
    ('nim_frontend_port', None, 8080, 'frontend', None),
    ('nim_frontend_metrics_port', None, 8405, 'frontend', None),
    ('monitoring_prometheus_port', None, 9090, 'monitoring', lambda get: get('monitoring_mode', 'server') == 'server'),
    ('monitoring_alertmanager_port', None, 9093, 'monitoring', lambda get: get('monitoring_mode', 'server') == 'server'),
)
P_PORT_CLASH = 'is also the port of %s on this host: two listeners cannot share a port'
ACCEPT_OWN_PORT = 'a port that no other listener of the collection on the host uses'


# Every directory (and the one file) the collection writes on a host and removes at teardown, in the
# same form as LISTENERS. Two in effect on one host must be apart, neither equal nor one inside the
# other (directory_clash_problems): else the teardown of one feature removes the other's files, and
# two features' markers meet in one place. The Docker hosts' mesh directory is ssh_mesh_dir (the
# playbooks pass it to nim_docker), and nim_docker_mesh_dir set in the inventory is never read.
DIRECTORIES = (
    ('nim_docker_config_dir', None, '/etc/nimstack/nim', 'docker', None),
    ('ssh_mesh_dir', None, '/etc/nimstack/mesh', 'docker', _contract_is('mpi')),
    ('nim_docker_supervisor_dir', None, '/usr/local/lib/nimstack-supervisor', 'docker',
     lambda get: as_bool(get('nim_docker_supervisor', get('nim_group_supervisor', True)))),
    ('nim_docker_image_staging_dir', None, '/var/tmp/nimstack-images', 'docker', None),
    ('nim_firewall_rules_file', None, '/etc/nimstack/nftables-nimstack.nft', 'docker',
     lambda get: as_bool(get('nim_firewall_enabled', get('nim_group_firewall', True)))),
    ('nim_frontend_config_dir', None, '/etc/nimstack/frontend', 'frontend', None),
    ('nim_frontend_program_dir', None, '/usr/local/lib/nimstack-frontend', 'frontend', None),
    ('monitoring_dir', None, '/etc/prometheus/nimstack', 'monitoring', None),
)
P_DIR_SAME = 'is also the path of %s on this host'
P_DIR_INSIDE = 'is inside %s on this host'
P_DIR_HOLDS = 'holds %s on this host'
ACCEPT_OWN_DIR = ('a path of its own: not the path of another directory the collection writes on the host, '
                  'nor inside one, nor holding one (the teardown of one would remove the other)')


# Every gid the collection gives a host's files or groups, in the same form as LISTENERS, with what
# the gid is for (GID_PURPOSE): the group nimstack-secrets, which may read the keys, and the ids
# the NIM containers run as and the model cache is owned by. The secrets group has one gid, so its
# settings must agree; and no workload gid may be it, or the containers' user could read the keys
# (gid_clash_problems). The workload gids may equal each other (the cache is the containers').
GIDS = (
    ('nim_docker_secrets_gid', 'nim_secrets_gid', DEFAULT_SECRETS_GID, 'docker', None),
    ('ssh_mesh_secrets_gid', 'nim_secrets_gid', DEFAULT_SECRETS_GID, 'docker', _contract_is('mpi')),
    ('nim_docker_container_gid', None, 1000, 'docker', None),
    ('nfs_cache_owner_gid', None, 1000, 'docker', lambda get: as_bool(get('nfs_enabled', True))),
)
GID_SECRETS = 'secrets'
GID_PURPOSE = {'nim_secrets_gid': GID_SECRETS, 'nim_docker_secrets_gid': GID_SECRETS, 'ssh_mesh_secrets_gid': GID_SECRETS,
               'nim_docker_container_gid': 'workload', 'nfs_cache_owner_gid': 'workload'}
P_GID_SPLIT = 'differs from %s on this host, and both are the gid of the one group nimstack-secrets'
P_GID_SHARED = ('is also %s on this host: nimstack-secrets, the group that may read the keys, would hold the '
                'user the NIM containers run as or the model cache\'s owner')
ACCEPT_SECRETS_GID_OWN = ('one gid for nimstack-secrets (set nim_secrets_gid once), other than the gid of the NIM '
                          'containers (nim_docker_container_gid) and of the model cache (nfs_cache_owner_gid)')


def _in_effect(table, hvars, where, read):
    """[(variable, value)] of the table's settings in effect on the host, in the table's order; where:
    the set of its kinds (docker, exporters, frontend, monitoring); read: the value as compared. A
    value its own rule refuses is left out (named by that rule)."""
    def get(name, default=None):
        return hvars.get(name, default)

    found = []
    for name, follows, default, kind, when in table:
        if kind not in where or (when is not None and not when(get)):
            continue
        # Named as the inventory sets it: the role's own name where set, else the inventory-wide one.
        shown = name if name in hvars or follows is None else follows
        value = get(name, get(follows, default) if follows else default)
        if check_value(shown, value) is None:
            found.append((shown, read(value)))
    return found


def host_listeners(hvars, where):
    """[(variable, port)] the host listens on, in LISTENERS order (_in_effect)."""
    return _in_effect(LISTENERS, hvars, where, lambda value: as_int(value)[0])


def host_directories(hvars, where):
    """[(variable, normalised path)] the collection writes on the host, in DIRECTORIES order."""
    return _in_effect(DIRECTORIES, hvars, where, lambda value: '/' + posixpath.normpath(value).lstrip('/'))


def host_gids(hvars, where):
    """[(variable, gid)] the collection gives on the host, in GIDS order."""
    return _in_effect(GIDS, hvars, where, lambda value: as_int(value)[0])


def _named(first, second, hvars):
    """Of two clashing settings, (the one to name, the other): the one the inventory sets, the
    later where both or neither are."""
    return (first, second) if second not in hvars and first in hvars else (second, first)


def directory_clash_problems(hvars, where):
    """[(variable, path, problem)]: every directory equal to, inside or holding an earlier one of the
    host, named by the one of the two that the inventory sets (the later where both are)."""
    found = host_directories(hvars, where)
    clashes = {}
    for i, (name, path) in enumerate(found):
        for other, other_path in found[:i]:
            if path == other_path:
                relation = P_DIR_SAME
            elif path.startswith(other_path.rstrip('/') + '/'):
                relation = P_DIR_INSIDE
            elif other_path.startswith(path.rstrip('/') + '/'):
                relation = P_DIR_HOLDS
            else:
                continue
            shown, against = _named(other, name, hvars)
            if shown != name:
                # Seen from the other side: inside becomes holds.
                relation = {P_DIR_INSIDE: P_DIR_HOLDS, P_DIR_HOLDS: P_DIR_INSIDE}.get(relation, relation)
            clashes.setdefault((shown, relation), []).append(against)
    # One problem per variable and relation, naming every directory it meets that way.
    return [(shown, dict(found)[shown], relation % ', '.join(others)) for (shown, relation), others in clashes.items()]


def clash_problems(hvars, where):
    """[(variable, port, the variable it clashes with)]: every listener whose port an earlier one of
    the host holds, named by the one of the two that the inventory sets (the later where both are)."""
    seen = {}
    clashes = []
    for name, port in host_listeners(hvars, where):
        if port not in seen:
            seen[port] = name
        else:
            shown, against = _named(seen[port], name, hvars)
            clashes.append((shown, port, against))
    return clashes


def gid_clash_problems(hvars, where):
    """[(variable, gid, problem)]: a secrets gid that differs from another secrets gid of the host, or
    that a workload gid of the host shares, named by the one of the two the inventory sets."""
    found = host_gids(hvars, where)
    clashes = {}
    for i, (name, gid) in enumerate(found):
        for other, other_gid in found[:i]:
            secrets = [GID_PURPOSE[n] == GID_SECRETS for n in (name, other)]
            if all(secrets) and gid != other_gid:
                relation = P_GID_SPLIT
            elif any(secrets) and not all(secrets) and gid == other_gid:
                relation = P_GID_SHARED
            else:
                continue
            shown, against = _named(other, name, hvars)
            names = clashes.setdefault((shown, relation), [])
            if against not in names:
                names.append(against)
    return [(shown, dict(found)[shown], relation % ', '.join(others)) for (shown, relation), others in clashes.items()]


def check_inputs(hosts, host_vars, group_of=None, host_kinds=None):
    """Check every variable with a rule on every host; return the problems, one per wrong value.

    hosts: the hosts in inventory order. host_vars: {host: {variable: value}} with the variables
    the inventory or -e sets (only names in RULES are read). group_of: {host: nim_group}, to name a
    whole deployment group instead of its hosts. host_kinds: {host: kinds} (LISTENERS',
    DIRECTORIES' and GIDS' where) for the checks that no two listeners of a host share a port, no two
    directories of a host meet and the secrets group's gid is its own.
    """
    findings = []
    for host in hosts:
        hvars = host_vars.get(host) or {}
        for name in CHECKED_VARIABLES:
            if name not in hvars:
                continue
            value = hvars[name]
            problem = check_value(name, value)
            if problem is not None:
                if RULES[name].detail is not None:
                    problem += ' (%s)' % '; '.join(RULES[name].detail(value))
                findings.append((host, (name, show(value, RULES[name].secret), problem, RULES[name].accepts)))
        for name, problem, accepts in cross_problems(hvars):
            findings.append((host, (name, show(hvars.get(name), RULES[name].secret), problem, accepts)))
        kinds = (host_kinds or {}).get(host, ())
        for name, port, other in clash_problems(hvars, kinds):
            findings.append((host, (name, str(port), P_PORT_CLASH % other, ACCEPT_OWN_PORT)))
        for name, path, problem in directory_clash_problems(hvars, kinds):
            findings.append((host, (name, show(path), problem, ACCEPT_OWN_DIR)))
        for name, gid, problem in gid_clash_problems(hvars, kinds):
            findings.append((host, (name, str(gid), problem, ACCEPT_SECRETS_GID_OWN)))
    return ['%s: %s=%s %s; accepted: %s' % (place, name, shown, problem, accepts)
            for place, (name, shown, problem, accepts) in by_place(hosts, findings, group_of)]


def by_place(hosts, findings, group_of=None):
    """Findings ([(host, key)]) as one (where, key) per key, in the order first found, where naming
    a whole deployment group when every host of it has the key (group_of: {host: nim_group})."""
    group_of = group_of or {}
    members = {}
    for host in hosts:
        members.setdefault(group_of.get(host), []).append(host)
    found = {}
    order = []
    for host, key in findings:
        if key not in found:
            found[key] = []
            order.append(key)
        found[key].append(host)
    return [(where(found[key], group_of, members), key) for key in order]
