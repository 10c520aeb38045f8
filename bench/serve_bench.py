#!/usr/bin/env python3
"""`quarry serve`: time to serve and time to load the page, against peers measured in the same
run (issue 27).

Start: from spawning `quarry serve --data <the bundled CSVs> --port 0` to its first answer on
/api/info, against `quarry schema` on the same files (the same opening of the data, then exit)
and `python3 -m http.server` answering its first request. Goal: under 1 s.

Page load: what the page fetches when opened (/, its three scripts, /app.css, /api/info, /api/threads,
/api/schema) over one keep-alive connection with the cookie, against Python's http.server
serving the same five static files and three JSON files of the same bytes. Goal: under 200 ms.
Medians of --runs, each after one warm-up; ratios are quarry's median over the peer's.

  bench/serve_bench.py [--quarry build/quarry] [--runs 11]
"""
import argparse, glob, http.client, os, shutil, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = ['/', '/page.js', '/outcome.js', '/app.js', '/app.css', '/api/info', '/api/threads',
        '/api/schema']


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(port, path, headers, deadline):
    while time.perf_counter() < deadline:
        try:
            c = http.client.HTTPConnection('127.0.0.1', port, timeout=2)
            c.request('GET', path, headers=headers)
            r = c.getresponse()
            r.read()
            c.close()
            if r.status == 200:
                return True
        except OSError:
            time.sleep(0.005)
    return False


def start_quarry(quarry, data, scratch):
    """Spawns quarry serve; returns (process, port, token, ms to the first /api/info answer)."""
    env = dict(os.environ, HOME=scratch, XDG_CACHE_HOME=os.path.join(scratch, 'cache'), NO_COLOR='1')
    env = {k: v for k, v in env.items() if not k.startswith('QUARRY_')}
    started = time.perf_counter()
    p = subprocess.Popen([quarry, 'serve', '--port', '0', '--runs-dir', os.path.join(scratch, 'runs')] +
                         sum([['--data', d] for d in data], []),
                         cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = p.stdout.readline().strip()
    if not url:
        sys.exit('serve_bench: quarry serve printed no URL')
    port = int(url.split(':')[2].split('/')[0])
    token = url.split('token=')[1]
    if not wait_for(port, '/api/info', {'Authorization': 'Bearer ' + token}, started + 30):
        sys.exit('serve_bench: /api/info never answered')
    return p, port, token, (time.perf_counter() - started) * 1000


def start_python(root):
    port = free_port()
    started = time.perf_counter()
    p = subprocess.Popen([sys.executable, '-m', 'http.server', str(port), '--bind', '127.0.0.1'],
                         cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_for(port, '/index.html', {}, started + 30):
        sys.exit('serve_bench: http.server never answered')
    return p, port, (time.perf_counter() - started) * 1000


def load(port, paths, headers):
    started = time.perf_counter()
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    total = 0
    for path in paths:
        c.request('GET', path, headers=headers)
        r = c.getresponse()
        total += len(r.read())
        if r.status != 200:
            sys.exit(f'serve_bench: {path} answered {r.status}')
    c.close()
    return (time.perf_counter() - started) * 1000, total


def median_of(runs, fn):
    fn()  # warm-up
    return statistics.median(fn() for _ in range(runs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quarry', default=os.path.join(ROOT, 'build', 'quarry'))
    ap.add_argument('--runs', type=int, default=11)
    a = ap.parse_args()
    data = sorted(glob.glob(os.path.join(ROOT, 'data', '*.csv')))
    scratch = tempfile.mkdtemp(prefix='quarry-serve-bench-')
    try:
        def quarry_start():
            p, _, _, ms = start_quarry(a.quarry, data, scratch)
            p.terminate()
            p.wait()
            return ms

        def schema():
            started = time.perf_counter()
            subprocess.run([a.quarry, 'schema', '--no-cache'] + data, cwd=scratch,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            return (time.perf_counter() - started) * 1000

        p, port, token, _ = start_quarry(a.quarry, data, scratch)
        cookie = {'Cookie': f'quarry_token_{port}=' + token}
        # The peer serves files of the same bytes as quarry's answers.
        static = os.path.join(scratch, 'static')
        os.makedirs(static)
        peer_paths = []
        for path in PAGE:
            c = http.client.HTTPConnection('127.0.0.1', port)
            c.request('GET', path, headers=cookie)
            body = c.getresponse().read()
            name = 'index.html' if path == '/' else path.strip('/').replace('/', '_')
            with open(os.path.join(static, name), 'wb') as f:
                f.write(body)
            peer_paths.append('/' + name)
        q_load = median_of(a.runs, lambda: load(port, PAGE, cookie)[0])
        page_bytes = load(port, PAGE, cookie)[1]
        p.terminate()
        p.wait()

        def python_start():
            pp, _, ms = start_python(static)
            pp.terminate()
            pp.wait()
            return ms

        pp, pport, _ = start_python(static)
        py_load = median_of(a.runs, lambda: load(pport, peer_paths, {})[0])
        pp.terminate()
        pp.wait()

        q_start = median_of(a.runs, quarry_start)
        s_start = median_of(a.runs, schema)
        py_start = median_of(a.runs, python_start)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f'data: {len(data)} bundled CSV files; medians of {a.runs} runs')
    print(f'{"measure":46} {"ms":>9}')
    print(f'{"quarry serve: start to first /api/info":46} {q_start:9.1f}')
    print(f'{"quarry schema on the same data (peer)":46} {s_start:9.1f}')
    print(f'{"python3 -m http.server: start (peer)":46} {py_start:9.1f}')
    print(f'{"quarry serve: page load (" + str(len(PAGE)) + " requests, " + str(page_bytes) + " B)":46} {q_load:9.1f}')
    print(f'{"python3 http.server: same bytes (peer)":46} {py_load:9.1f}')
    print(f'ratio start / quarry schema: {q_start / s_start:.2f}')
    print(f'ratio start / http.server start: {q_start / py_start:.2f}')
    print(f'ratio page load / http.server: {q_load / py_load:.2f}')
    print(f'goal start under 1000 ms: {"PASS" if q_start < 1000 else "FAIL"}')
    print(f'goal page load under 200 ms: {"PASS" if q_load < 200 else "FAIL"}')


if __name__ == '__main__':
    main()
