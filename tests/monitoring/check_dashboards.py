#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Every metric a dashboard's PromQL names is one some target serves.

Reads Grafana dashboard JSON files, takes the PromQL of every panel's targets (rows' nested
panels included) and of every query variable (the selector inside label_values(...)), extracts
the metric names with a PromQL tokenizer (strings, label matchers, ranges, grouping label lists,
Grafana variables, functions, keywords and numbers are not names) and checks each against the
served names given:

  check_dashboards.py --served FILE [--served FILE...] DASHBOARD.json...
  check_dashboards.py --prometheus URL DASHBOARD.json...   (URL/api/v1/label/__name__/values)
  check_dashboards.py --served FILE --rules RULE_FILE [DASHBOARD.json...]   alert rules' expressions too

A file of served names holds one name a line; '#' starts a comment. Exit 1 naming the dashboard,
the panel and the metric of every name no target serves.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import re
import sys

import yaml

from urllib.request import urlopen

# PromQL's keywords and the words that are neither metrics nor functions.
KEYWORDS = frozenset(('by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'and',
                      'or', 'unless', 'atan2', 'inf', 'nan', 'start', 'end'))
# Clauses whose parenthesised list holds label names.
_LABEL_LISTS = re.compile(r'\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)', re.I)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VAR = re.compile(r'\$\{[^}]*\}|\$\$?\w+|\[\[\w+(?::\w+)?\]\]')
_IDENT = re.compile(r'[A-Za-z_:][A-Za-z0-9_:]*')
_NUMBER = re.compile(r'(?<![A-Za-z0-9_:.])(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?)'
                     r'(ms|[smhdwy])*')
_LABEL_VALUES = re.compile(r'^\s*label_values\s*\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$', re.S)


def _strip_braces(text, open_char, close_char):
    """text without any open_char ... close_char span (nesting ignored: PromQL's don't nest)."""
    out, depth = [], 0
    for char in text:
        if char == open_char:
            depth += 1
        elif char == close_char and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    return ''.join(out)


def metric_names(expr):
    """The metric names a PromQL expression reads, in order of first appearance."""
    # Grafana's variable functions: label_values(selector, label) and query_result(expr) run
    # PromQL; label_values(label), label_names() and metrics(regex) name no metric.
    match = _LABEL_VALUES.match(expr)
    call = re.match(r'^\s*(label_values|label_names|metrics|query_result)\s*\((.*)\)\s*$', expr, re.S)
    if match:
        expr = match.group(1)
    elif call:
        expr = call.group(2) if call.group(1) == 'query_result' else ''
    text = _STRING.sub(' ', expr)
    text = _GRAFANA_VAR.sub(' ', text)
    text = _strip_braces(text, '{', '}')
    text = _strip_braces(text, '[', ']')
    text = _LABEL_LISTS.sub(' ', text)
    text = _NUMBER.sub(' ', text)
    names = []
    for found in _IDENT.finditer(text):
        word = found.group(0)
        following = text[found.end():].lstrip()
        if following.startswith('('):
            continue  # a function or an aggregation
        if word.lower() in KEYWORDS:
            continue
        if word not in names:
            names.append(word)
    return names


def _panels(panels):
    for panel in panels or []:
        yield panel
        yield from _panels(panel.get('panels'))


def queries(board):
    """(where, expr) of every PromQL the dashboard runs: its panels' targets and its query variables
    (or, for a rule file read by main(), its rules)."""
    found = list(board.get('rules') or [])
    for panel in _panels(board.get('panels')):
        for target in panel.get('targets') or []:
            if target.get('expr'):
                found.append(('panel "%s" (%s)' % (panel.get('title', ''), target.get('refId', '?')), target['expr']))
    for var in (board.get('templating') or {}).get('list') or []:
        if var.get('type') != 'query':
            continue
        query = var.get('query')
        if isinstance(query, dict):
            query = query.get('query')
        if query:
            found.append(('variable $%s' % var.get('name'), query))
    return found


def rule_queries(rule_file):
    """(where, expr) of every rule of a Prometheus rule file (a dict with groups)."""
    return [('rule %s' % (rule.get('alert') or rule.get('record')), rule['expr'])
            for group in (rule_file or {}).get('groups') or [] for rule in group.get('rules') or []]


def problems(boards, served):
    """Every metric of every dashboard no target serves: 'dashboard: panel "T" (A): metric M is not served'."""
    found = []
    for name, board in boards:
        for where, expr in queries(board):
            for metric in metric_names(expr):
                if metric not in served:
                    found.append('%s: %s: metric %s is not served by any target' % (name, where, metric))
    return found


def read_served(paths):
    served = set()
    for path in paths:
        with open(path) as handle:
            for line in handle:
                line = line.split('#', 1)[0].strip()
                if line:
                    served.add(line)
    return served


def fetch_served(url):
    with urlopen(url.rstrip('/') + '/api/v1/label/__name__/values', timeout=30) as response:
        body = json.loads(response.read().decode('utf-8'))
    if body.get('status') != 'success':
        raise ValueError('%s answered %r' % (url, body.get('status')))
    return set(body.get('data') or [])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--served', action='append', default=[], help='a file of served metric names')
    parser.add_argument('--prometheus', action='append', default=[], help='a Prometheus base URL')
    parser.add_argument('--rules', action='append', default=[], help='a Prometheus rule file to check as well')
    parser.add_argument('dashboards', nargs='*')
    args = parser.parse_args(argv)
    if not args.served and not args.prometheus:
        parser.error('give --served FILE or --prometheus URL')
    if not args.dashboards and not args.rules:
        parser.error('give dashboards or --rules')
    served = read_served(args.served)
    for url in args.prometheus:
        served |= fetch_served(url)
    boards = []
    for path in args.dashboards:
        with open(path) as handle:
            boards.append((path, json.load(handle)))
    for path in args.rules:
        with open(path) as handle:
            boards.append((path, {'rules': rule_queries(yaml.safe_load(handle))}))
    found = problems(boards, served)
    all_queries = [expr for board in boards for _where, expr in queries(board[1])]
    names = sorted(set(m for expr in all_queries for m in metric_names(expr)))
    for problem in found:
        print('check_dashboards.py: %s' % problem, file=sys.stderr)
    print('check_dashboards.py: %d file(s), %d queries, %d metric names, %d not served'
          % (len(boards), len(all_queries), len(names), len(found)))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
