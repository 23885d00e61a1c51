#!/usr/bin/env python3
"""The bumps study set: handling noise on a handset, as 16 kHz WAVs with an empty
transcripts.tsv for `examples/segment_study.rs` (CLIPS=DIR): low thumps, knocks, rustle,
breath puffs, their mix, loud thumps and handling (a thump with rustle), 8 s each, three of
a kind, 0.5–1.6 s apart over faint hiss. The kinds of bumps tests/engine/noise.rs makes;
deterministic (seed 11). Needs numpy.

    python3 hark-bench/study/bumps.py DIR
"""
import sys
import wave

import numpy as np
R = 16000
rng = np.random.default_rng(11)
out = sys.argv[1]
def save(name,x):
    x=np.clip(x,-1,1)
    with wave.open(f"{out}/{name}.wav","wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(R); w.writeframes((x*32767).astype("<i2").tobytes())
def lp(x,k): return np.convolve(x,np.ones(k)/k,"same")
def t(s): return np.arange(int(s*R))/R
def thump(f=80,decay=0.03,amp=0.6):
    tt=t(0.25); return amp*np.exp(-tt/decay)*(np.sin(2*np.pi*f*tt)+0.5*lp(rng.standard_normal(len(tt)),8))
def knock(f=300,decay=0.02,amp=0.5):
    tt=t(0.15); return amp*np.exp(-tt/decay)*np.sin(2*np.pi*f*tt+rng.uniform(0,6))
def rustle(d=0.3,amp=0.15):
    tt=t(d); env=np.sin(np.pi*tt/d)**2; return amp*env*lp(rng.standard_normal(len(tt)),3)
def puff(d=0.35,amp=0.3):
    tt=t(d); env=np.minimum(1,tt*30)*np.exp(-tt*8); return amp*env*lp(rng.standard_normal(len(tt)),20)
def clip(events,secs=8,hiss=0.004):
    x=hiss*rng.standard_normal(secs*R); at=0.5
    while at<secs-0.6:
        e=events(); i=int(at*R); x[i:i+len(e)]+=e[:len(x)-i]; at+=rng.uniform(0.5,1.6)
    return x
names=[]
for name,ev in [("bumps_thump",lambda: thump(rng.uniform(50,120))),("bumps_knock",lambda: knock(rng.uniform(200,600))),
                ("bumps_rustle",lambda: rustle(rng.uniform(0.15,0.5))),("bumps_puff",lambda: puff()),
                ("bumps_mixed",lambda: [thump,knock,rustle,puff][rng.integers(0,4)]()),
                ("bumps_loud_thump",lambda: thump(rng.uniform(50,120),amp=0.95)),("bumps_handling",lambda: thump(rng.uniform(100,200),decay=0.06,amp=0.4)+np.pad(rustle(0.2),(0,int(0.05*R)))[:int(0.25*R)])]:
    for k in range(3):
        save(f"{name}_{k}",clip(ev)); names.append(f"{name}_{k}")
open(f"{out}/transcripts.tsv","w").write("".join(f"{n}.wav\t\n" for n in names))
