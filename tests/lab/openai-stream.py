#!/usr/bin/env python
"""Stream one chat completion with the official OpenAI Python client and check what came back.

    openai-stream.py BASE_URL MODEL [--expect WORD]...

BASE_URL is the server's /v1 root (http://host:8000/v1). Prints one JSON line: the chunks
received, the seconds to the first and the last chunk, and the streamed text; exits 1 when the
stream was not a stream (fewer than 3 content chunks), carried no finish_reason, or lacks a
word given with --expect.
"""

import argparse
import json
import sys
import time

import openai


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('base_url')
    parser.add_argument('model')
    parser.add_argument('--expect', action='append', default=[])
    parser.add_argument('--timeout', type=float, default=60.0)
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key='not-used', timeout=args.timeout, max_retries=0)
    start = time.monotonic()
    first = None
    pieces = []
    finish = None
    chunks = 0
    stream = client.chat.completions.create(model=args.model, stream=True,
                                            messages=[{'role': 'user', 'content': 'stream, please'}])
    for chunk in stream:
        chunks += 1
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        if choice.delta and choice.delta.content:
            if first is None:
                first = time.monotonic() - start
            pieces.append(choice.delta.content)
        finish = choice.finish_reason or finish
    text = ''.join(pieces)
    result = {'chunks': chunks, 'content_chunks': len(pieces), 'first_chunk_s': round(first or -1, 3),
              'total_s': round(time.monotonic() - start, 3), 'finish_reason': finish, 'text': text}
    print(json.dumps(result))
    missing = [word for word in args.expect if word not in text]
    if len(pieces) < 3 or finish != 'stop' or missing:
        print('openai-stream.py: not a proper stream (%s)' % (
            'missing %s' % ', '.join(missing) if missing else 'chunks %d, finish %s' % (len(pieces), finish)),
            file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
