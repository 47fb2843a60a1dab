# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""AWX's survey rules, applied to the collection's survey specs (playbooks/awx/vars/surveys.yml).

AWX checks a survey spec when it is saved and the answers when a job is launched; neither can run
here, so this module applies the same rules to the same data: the unit tests check the specs, and
tests/e2e/test-awx.sh turns survey answers into the extra variables AWX would write to
env/extravars. Only the question types the collection uses are supported.

    python3 tests/awx/awx_survey.py SURVEYS_YML SURVEY_NAME [variable=answer ...]
        prints the extra variables as JSON, or the problems on stderr and exits 1.
"""

import json
import sys

import yaml

QUESTION_TYPES = ('text', 'integer', 'multiplechoice')
REQUIRED_KEYS = ('question_name', 'variable', 'type', 'required')


def spec_problems(survey):
    """Return what AWX would refuse in a survey spec, as messages naming the question."""
    problems = []
    for key in ('name', 'description', 'spec'):
        if key not in survey:
            problems.append('survey: %s is missing' % key)
    seen = set()
    for index, question in enumerate(survey.get('spec') or []):
        where = 'question %d (%s)' % (index, question.get('variable', '?'))
        for key in REQUIRED_KEYS:
            if key not in question:
                problems.append('%s: %s is missing' % (where, key))
        variable = question.get('variable')
        if variable in seen:
            problems.append('%s: variable %s is asked twice' % (where, variable))
        seen.add(variable)
        kind = question.get('type')
        if kind not in QUESTION_TYPES:
            problems.append('%s: type %r is not one of %s' % (where, kind, ', '.join(QUESTION_TYPES)))
            continue
        if kind == 'multiplechoice':
            choices = question.get('choices')
            if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
                problems.append('%s: choices must be a non-empty list of strings' % where)
            elif len(set(choices)) != len(choices):
                problems.append('%s: choices repeat a value' % where)
            elif question.get('default') not in (None, '') and question['default'] not in choices:
                problems.append('%s: default %r is not among the choices' % (where, question['default']))
        else:
            low, high = question.get('min'), question.get('max')
            if not isinstance(low, int) or not isinstance(high, int) or isinstance(low, bool) or low > high:
                problems.append('%s: min and max must be integers with min <= max' % where)
            elif question.get('default') not in (None, ''):
                problems.extend(_answer_problems(question, question['default'], where + ' default'))
        if question.get('required') and kind == 'text' and question.get('default') not in (None, ''):
            problems.append('%s: a required confirmation must not have a default' % where)
    return problems


def _answer_problems(question, answer, where):
    kind = question['type']
    if kind == 'multiplechoice':
        if answer not in question['choices']:
            return ['%s: %r is not one of %s' % (where, answer, ', '.join(question['choices']))]
    elif kind == 'integer':
        if not isinstance(answer, int) or isinstance(answer, bool):
            return ['%s: %r is not an integer' % (where, answer)]
        if not question['min'] <= answer <= question['max']:
            return ['%s: %d is not between %d and %d' % (where, answer, question['min'], question['max'])]
    elif kind == 'text':
        if not isinstance(answer, str):
            return ['%s: %r is not text' % (where, answer)]
        if not question['min'] <= len(answer) <= question['max']:
            return ['%s: %d characters, not between %d and %d' % (where, len(answer), question['min'], question['max'])]
    return []


def extra_vars(survey, answers):
    """Return (extra variables, problems) for answers {variable: value}, as an AWX launch would.

    A question left blank passes its default, or no variable at all; an answer to a question the
    survey does not ask is refused (AWX drops it unless the template prompts for variables).
    """
    problems = []
    result = {}
    questions = {q['variable']: q for q in survey['spec']}
    for variable in answers:
        if variable not in questions:
            problems.append('%s is not a question of survey %s' % (variable, survey['name']))
    for variable, question in questions.items():
        answer = answers.get(variable)
        if answer in (None, ''):
            if question.get('default') not in (None, ''):
                result[variable] = question['default']
            elif question['required']:
                problems.append('%s: an answer is required' % variable)
            continue
        if question['type'] == 'integer' and isinstance(answer, str):
            try:
                answer = int(answer)
            except ValueError:
                pass
        found = _answer_problems(question, answer, variable)
        problems.extend(found)
        if not found:
            result[variable] = answer
    return result, problems


def load(path, name):
    with open(path) as handle:
        surveys = yaml.safe_load(handle)
    if name not in surveys:
        raise KeyError('%s has no survey %s (it has %s)' % (path, name, ', '.join(sorted(surveys))))
    return surveys[name]


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    survey = load(argv[1], argv[2])
    answers = dict(arg.split('=', 1) for arg in argv[3:])
    problems = spec_problems(survey)
    result, answer_problems = extra_vars(survey, answers)
    problems.extend(answer_problems)
    if problems:
        sys.stderr.write(''.join('awx_survey: %s\n' % p for p in problems))
        return 1
    json.dump(result, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
