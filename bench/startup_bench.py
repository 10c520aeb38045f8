#!/usr/bin/env python3
"""Start-up time of quarry against peers measured in the same run (issue 24 section 4).

Each command runs --runs times (after one warm-up) from a scratch directory; the median wall
time and the median CPU time (user + system of the child) are printed, with quarry's medians as
ratios of its peers' and the goals (`quarry --version` under 20 ms, `quarry sql` on a two-line
CSV under 100 ms) as PASS or FAIL. Peers: the sqlite3 CLI, DuckDB alone through
build/bench/duckdb_peer (the same library quarry loads, no quarry code), and
`python3 -c "import duckdb"` when that module is installed.

  bench/startup_bench.py [--quarry build/quarry] [--peer build/bench/duckdb_peer] [--runs 21]
"""
import argparse, os, resource, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(argv, cwd, env, runs):
    walls, cpus = [], []
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        r = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            sys.exit(f'startup_bench: {" ".join(argv)} exited {r.returncode}: {r.stderr.decode()[-500:]}')
        if i == 0:
            continue  # warm-up: page cache, the parse cache's first entry
        walls.append(wall * 1000)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quarry', default=os.path.join(ROOT, 'build', 'quarry'))
    ap.add_argument('--peer', default=os.path.join(ROOT, 'build', 'bench', 'duckdb_peer'))
    ap.add_argument('--runs', type=int, default=21)
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix='quarry-startup-')
    try:
        with open(os.path.join(scratch, 'tiny.csv'), 'w') as f:
            f.write('id,name\n1,a\n')
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, 'cache'),
                   XDG_STATE_HOME=os.path.join(scratch, 'state'), NO_COLOR='1')
        rows = []
        def add(name, argv):
            wall, cpu = measure(argv, scratch, env, a.runs)
            rows.append((name, wall, cpu))
            return wall
        q_version = add('quarry --version', [a.quarry, '--version'])
        q_sql = add('quarry sql tiny.csv "SELECT 1"', [a.quarry, 'sql', 'tiny.csv', 'SELECT 1'])
        q_scan = add('quarry sql tiny.csv "SELECT * FROM tiny"',
                     [a.quarry, 'sql', 'tiny.csv', 'SELECT * FROM tiny'])
        peers = {}
        if shutil.which('sqlite3'):
            peers['sqlite3'] = add('sqlite3 :memory: "select 1"', ['sqlite3', ':memory:', 'select 1'])
        if os.path.exists(a.peer):
            peers['duckdb'] = add("duckdb_peer scan read_csv('tiny.csv')",
                                  [a.peer, 'scan', "SELECT * FROM read_csv('tiny.csv')"])
        if subprocess.run([sys.executable, '-c', 'import duckdb'], capture_output=True).returncode == 0:
            peers['python-duckdb'] = add('python3 -c "import duckdb"', [sys.executable, '-c', 'import duckdb'])
        print(f'startup_bench: median of {a.runs} runs each, milliseconds')
        print(f'{"command":48} {"wall":>8} {"cpu":>8}')
        for name, wall, cpu in rows:
            print(f'{name:48} {wall:8.1f} {cpu:8.1f}')
        for peer, wall in peers.items():
            print(f'ratio: quarry --version / {peer} = {q_version / wall:.1f}x; '
                  f'quarry sql (scan) / {peer} = {q_scan / wall:.1f}x')
        print(f'goal: quarry --version under 20 ms: {"PASS" if q_version < 20 else "FAIL"} '
              f'({q_version:.1f} ms)')
        print(f'goal: quarry sql on a small CSV under 100 ms: {"PASS" if q_sql < 100 else "FAIL"} '
              f'({q_sql:.1f} ms)')
    finally:
        shutil.rmtree(scratch)


if __name__ == '__main__':
    main()
