#!/usr/bin/env python3
"""Checks that quarry's modules include only what DESIGN.md's module table lets them: every
`#include "quarry/<module>/..."` in src/quarry/<m>/ must name <m> itself or a module below it,
and a header ending in _internal.h only from its own module. Every module compiles with -I src,
so without this check a wrong include would build. Usage:
  scripts/check_layers.py [SRC_ROOT]     (default: this checkout's src/quarry)
  scripts/check_layers.py --self-test    (shows that a wrong include fails)
Exit 1 names each file, line and include that breaks the layering."""
import os, re, sys, tempfile

# DESIGN.md, "Modules": what each module may include besides itself. `common` is below all.
BELOW = {
    'common': set(),
    'engine': {'common'},
    'llm': {'common'},
    'trace': {'common'},
    'sandbox': {'common'},
    'chart': {'common'},
    'knowledge': {'common', 'engine'},
    'agent': {'common', 'engine', 'llm', 'trace', 'sandbox', 'chart', 'knowledge'},
    'mcp': {'common', 'agent', 'engine', 'llm', 'trace', 'sandbox', 'chart', 'knowledge'},
    'serve': {'common', 'agent', 'engine', 'llm', 'trace', 'sandbox', 'chart', 'mcp',
              'knowledge'},
    'bench': {'common', 'agent', 'engine', 'llm', 'trace', 'sandbox', 'chart', 'knowledge'},
    'cli': {'knowledge', 'common', 'agent', 'engine', 'llm', 'trace', 'sandbox', 'chart', 'mcp', 'serve',
            'bench'},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"quarry/([a-z_]+)/([^"]+)"')


def check(root):
    problems = []
    for module in sorted(os.listdir(root)):
        path = os.path.join(root, module)
        if not os.path.isdir(path):
            continue
        if module not in BELOW:
            problems.append(f'{path}: module "{module}" is not in the layering table; add it '
                            'to DESIGN.md and to scripts/check_layers.py')
            continue
        for folder, _, files in os.walk(path):
            for name in sorted(files):
                if not name.endswith(('.h', '.cc')):
                    continue
                file = os.path.join(folder, name)
                with open(file, encoding='utf-8', errors='replace') as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) == module:
                            continue
                        target, header = m.group(1), m.group(2)
                        where = f'{os.path.relpath(file, os.path.dirname(root))}:{number}'
                        if target not in BELOW[module]:
                            problems.append(f'{where}: {module} includes quarry/{target}/{header}'
                                            f', but {target} is not below {module}')
                        elif header.endswith('_internal.h'):
                            problems.append(f'{where}: {module} includes quarry/{target}/{header}'
                                            f', which only {target} may include')
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        for module, text in {'engine': '#include "quarry/agent/agent.h"\n',
                             'agent': '#include "quarry/engine/engine_internal.h"\n',
                             'trace': '#include "quarry/common/common.h"\n'}.items():
            os.makedirs(os.path.join(tmp, module))
            with open(os.path.join(tmp, module, 'x.cc'), 'w') as f:
                f.write(text)
        problems = check(tmp)
    expected = ['engine/x.cc:1: engine includes quarry/agent/agent.h, but agent is not below engine',
                'agent/x.cc:1: agent includes quarry/engine/engine_internal.h, which only engine '
                'may include']
    missing = [e for e in expected if not any(p.endswith(e) for p in problems)]
    if missing or len(problems) != 2:
        print('check_layers self-test failed; got:', *problems, sep='\n  ')
        return 1
    print('check_layers self-test: an upward include and a foreign _internal.h are both refused')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'src', 'quarry')
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} include(s) break the layering (DESIGN.md, "Modules")')
        return 1
    print(f'layering: every include in {root} points down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
