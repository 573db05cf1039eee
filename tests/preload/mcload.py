#!/usr/bin/env python3
"""mcload.py PORT CONNECTIONS OPS: a memcached client, another process
(tests/preload/run_check.sh, case memcached). Waits until 127.0.0.1:PORT
accepts (10 s at most), then opens CONNECTIONS connections one after the
other, each making OPS rounds of set and get of its own key, and checks
every answer. Prints "ok CONNECTIONS OPS"; exits 1 on a wrong answer or
no server."""
import socket
import sys
import time

port, conns, ops = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + 10
while True:
    try:
        socket.create_connection(('127.0.0.1', port), timeout=10).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit('mcload: no server on port %d' % port)
        time.sleep(0.05)
for c in range(conns):
    s = socket.create_connection(('127.0.0.1', port), timeout=10)
    f = s.makefile('rb')
    for i in range(ops):
        key, val = b'k%d.%d' % (c, i), b'v%d' % i
        s.sendall(b'set %s 0 0 %d\r\n%s\r\n' % (key, len(val), val))
        if f.readline() != b'STORED\r\n':
            sys.exit('mcload: set not stored')
        s.sendall(b'get %s\r\n' % key)
        if (f.readline() != b'VALUE %s 0 %d\r\n' % (key, len(val)) or
                f.readline() != val + b'\r\n' or f.readline() != b'END\r\n'):
            sys.exit('mcload: get answered wrong')
    s.close()
print('ok', conns, ops)
