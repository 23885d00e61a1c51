#!/usr/bin/env python3
# Hostile clients against a running release binary (BENCHMARKS.md, "Hostile clients"):
#   python3 samples/hostile.py target/release/hark
# RSS under 200 unfinished 15 KiB request heads, 200 heads past the 16 KiB cap, and the log
# written by 2,001 refused upgrades with 2 KB paths. Serves on 127.0.0.1:18181.
import socket, subprocess, time, os, sys
bin=sys.argv[1]; port=18181
log=open('/tmp/hostile-serve.log','wb')
env=dict(os.environ, HARK_SECRET='measure-secret-0123456789abcdef')
p=subprocess.Popen([bin,'serve','--listen',f'127.0.0.1:{port}'],stderr=log,stdout=subprocess.DEVNULL,env=env)
def rss():
    for l in open(f'/proc/{p.pid}/status'):
        if l.startswith('VmRSS'): return int(l.split()[1])
for _ in range(600):
    try:
        s=socket.create_connection(('127.0.0.1',port)); s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'); r=s.recv(100); s.close()
        if b'200' in r: break
    except Exception: pass
    time.sleep(0.2)
time.sleep(5)
base=rss(); print('idle RSS KiB', base)
conns=[]
for i in range(200):
    s=socket.create_connection(('127.0.0.1',port))
    s.sendall(b'GET /api/custom-transcriber HTTP/1.1\r\nHost: x\r\nX-Pad: '+b'a'*(15*1024))
    conns.append(s)
time.sleep(2)
r1=rss(); print('200 unfinished heads of 15 KiB: RSS KiB', r1, 'growth', r1-base, 'per conn', (r1-base)/200)
cut=0
for i in range(200):
    s=socket.create_connection(('127.0.0.1',port))
    try:
        s.sendall(b'GET /api/custom-transcriber HTTP/1.1\r\nHost: x\r\nX-Pad: '+b'a'*(400*1024))
    except Exception: pass
    s.settimeout(5)
    try:
        d=s.recv(100)
        if d.startswith(b'HTTP/1.1 431') or d==b'': cut+=1
    except Exception: pass
    s.close()
time.sleep(1)
r2=rss(); print('then 200 heads of 400 KB: cut', cut, 'RSS KiB', r2, 'growth from idle', r2-base)
for s in conns: s.close()
before=os.path.getsize('/tmp/hostile-serve.log')
path='/api/custom-transcriber/'+'p'*2000
t=time.time()
for i in range(2001):
    s=socket.create_connection(('127.0.0.1',port))
    s.sendall(f'GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'.encode())
    s.recv(100); s.close()
time.sleep(0.5)
print('2001 refused upgrades with 2 KB paths: log grew by', os.path.getsize('/tmp/hostile-serve.log')-before, 'bytes in', round(time.time()-t,1),'s')
p.terminate(); p.wait()
