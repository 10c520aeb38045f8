#!/usr/bin/env python3
"""Checks the README and docs/: every relative link names a file that exists and, with a
#fragment, a heading that exists in it (GitHub's anchor rules); every shell block marked
runnable (an HTML comment `<!-- runnable -->` on the line before its fence) runs with exit 0
from a scratch copy of the repository, with `quarry` on PATH. Usage:
  scripts/check_docs.py [--run QUARRY_BINARY]
Without --run only the links are checked. Exit 1 names each broken link or failing block."""
import os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)')


def doc_files():
    out = [os.path.join(ROOT, 'README.md'), os.path.join(ROOT, 'CONTRIBUTING.md')]
    docs = os.path.join(ROOT, 'docs')
    out += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))
    return out


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fence = False
    for n, line in enumerate(text.split('\n'), 1):
        if line.startswith('```'):
            fence = not fence
            continue
        if not fence:
            yield n, line


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(path):
    seen, out = {}, set()
    for _, line in prose_lines(open(path, encoding='utf-8').read()):
        m = re.match(r'^#{1,6} (.*)', line)
        if not m:
            continue
        base = slug(m.group(1))
        k = seen.get(base, 0)
        out.add(base if k == 0 else f'{base}-{k}')
        seen[base] = k + 1
    return out


def check_links():
    errors = []
    for path in doc_files():
        text = open(path, encoding='utf-8').read()
        for n, line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r'^[a-z]+:', target):
                    continue  # http(s), mailto: not fetched (no network here)
                file_part, _, frag = target.partition('#')
                dest = path if not file_part else os.path.normpath(
                    os.path.join(os.path.dirname(path), file_part))
                where = f'{os.path.relpath(path, ROOT)}:{n}'
                if not os.path.exists(dest):
                    errors.append(f'{where}: link to {target}: no file {os.path.relpath(dest, ROOT)}')
                elif frag and dest.endswith('.md') and frag not in anchors(dest):
                    errors.append(f'{where}: link to {target}: no heading #{frag} in '
                                  f'{os.path.relpath(dest, ROOT)}')
    return errors


def runnable_blocks():
    for path in doc_files():
        lines = open(path, encoding='utf-8').read().split('\n')
        for i, line in enumerate(lines):
            if line.strip() == '<!-- runnable -->' and i + 1 < len(lines) and lines[i + 1].startswith('```'):
                body = []
                for j in range(i + 2, len(lines)):
                    if lines[j].startswith('```'):
                        break
                    body.append(lines[j])
                yield f'{os.path.relpath(path, ROOT)}:{i + 2}', '\n'.join(body)


def run_blocks(quarry):
    errors, count = [], 0
    bindir = tempfile.mkdtemp(prefix='quarry-docs-bin-')
    os.symlink(os.path.abspath(quarry), os.path.join(bindir, 'quarry'))
    for where, body in runnable_blocks():
        count += 1
        with tempfile.TemporaryDirectory(prefix='quarry-docs-') as scratch:
            # A copy of what the commands read, never the checkout itself: a command that
            # writes (runs/, caches) writes into the scratch copy.
            for d in ('data', 'fixtures', 'prompts', 'tasks'):
                shutil.copytree(os.path.join(ROOT, d), os.path.join(scratch, d), symlinks=True)
            env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get('PATH', ''),
                       XDG_CACHE_HOME=os.path.join(scratch, '.cache'),
                       XDG_STATE_HOME=os.path.join(scratch, '.state'), NO_COLOR='1')
            for k in ('OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL',
                      'OPENROUTER_API_KEY', 'QUARRY_API_KEY', 'QUARRY_BASE_URL', 'QUARRY_MODEL'):
                env.pop(k, None)
            r = subprocess.run(['bash', '-euo', 'pipefail', '-c', body], cwd=scratch, env=env,
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                errors.append(f'{where}: block exited {r.returncode}:\n{body}\n--- stderr:\n'
                              f'{r.stderr[-2000:]}')
    shutil.rmtree(bindir)
    return errors, count


def main():
    errors = check_links()
    ran = 0
    if len(sys.argv) == 3 and sys.argv[1] == '--run':
        block_errors, ran = run_blocks(sys.argv[2])
        errors += block_errors
        if ran == 0:
            errors.append('no block is marked <!-- runnable -->')
    for e in errors:
        print(e)
    print(f'check_docs: {len(doc_files())} files, {ran} runnable blocks run, {len(errors)} problems')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
