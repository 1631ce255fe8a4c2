# Online class x age "expected hits per unit of cache time" eviction (LHD-like, uncensored gaps
# from the metadata the store keeps for disk-resident objects).
from common import *
from feats import annotate
from collections import OrderedDict, defaultdict
import math, sys
def bucket(age_ms):
    return min(63, int(4*math.log2(1+age_ms/1000.0)))
BSTART=[ (2**(i/4)-1)*1000 for i in range(65)]
def classify(f, k, hints):
    pl=f['pl'] and k==0 and 'pl' in hints
    if pl: return 'PL'
    kk=min(k,3)
    if 'req' in hints and (k==0 or 'get' in hints):
        new=f['n']-f['pre']; cont=f['pre']>=2
        nb=0 if new<=2 else 1 if new<=8 else 2 if new<=32 else 3
        if not cont: nb=2 if f['n']<=32 else 3
        return (kk, cont, nb)
    return kk
class Est:
    def __init__(s, T_ms, window):
        s.T=T_ms; s.window=window; s.hits=defaultdict(lambda:[0.0]*64); s.tot=defaultdict(float)
        s.n=0; s.table={}
    def access(s, c): s.tot[c]+=1; s.tick()
    def reuse(s, c, gap): s.hits[c][bucket(gap)]+=1
    def tick(s):
        s.n+=1
        if s.n % s.window==0:
            for c in s.tot:
                s.tot[c]/=2; h=s.hits[c]
                for i in range(64): h[i]/=2
        if s.n % 2000==1: s.rebuild()
    def rebuild(s):
        s.table={}
        for c in s.tot:
            h=s.hits[c]; tot=s.tot[c]; never=max(0.0, tot-sum(h))
            row=[0.0]*64
            for i in range(64):
                a=BSTART[i]; hits=0.0; occ=never*s.T
                for j in range(i,64):
                    mid=(BSTART[j]+BSTART[j+1])/2
                    d=mid-a
                    if d<=s.T: hits+=h[j]; occ+=d*h[j]
                    else: occ+=s.T*h[j]
                row[i]=hits/occ if occ>0 else 0.0
            s.table[c]=row
    def score(s, c, age):
        row=s.table.get(c)
        if row is None: return 1.0  # unknown class: keep (like LRU)
        return row[bucket(age)]
def run(refs, F, C, hints, T, window, adapt=0):
    est=Est(T, window); ev_age=0
    queues=defaultdict(OrderedDict); where={}; lastcls={}; lastt={}; cnt=defaultdict(int); hits=0
    for i,ref in enumerate(refs):
        b,t=ref[0],ref[1]; f=F[i]; k=cnt[b]; cnt[b]+=1
        if b in lastcls: est.reuse(lastcls[b], t-lastt[b])
        c=classify(f,k,hints); est.access(c); lastcls[b]=c; lastt[b]=t
        if b in where:
            hits+=1; del queues[where[b]][b]
        queues[c][b]=t; where[b]=c
        if len(where)>C:
            best=None
            for cc,q in queues.items():
                if not q: continue
                vb,vt=next(iter(q.items()))
                sc=est.score(cc, t-vt)
                key=(sc, vt)
                if best is None or key<best[0]: best=(key,cc,vb)
            _,cc,vb=best; del queues[cc][vb]; del where[vb]
            if adapt: 
                ev_age = 0.999*ev_age + 0.001*(t-best[0][1]) if ev_age else (t-best[0][1])
                if i % 2000 == 0: est.T = max(10e3, adapt*ev_age)
    return hits
if __name__=='__main__':
    reqs, refs = load(sys.argv[1] if len(sys.argv)>1 and sys.argv[1].endswith('jsonl') else '/work/shared/traces/conversation_trace.jsonl')
    F=annotate(reqs, refs); N=len(refs); D=len(set(r[0] for r in refs))
    args=[a for a in sys.argv[1:] if not a.endswith('jsonl')]
    fracs=[float(x) for x in args[0].split(',')]; hintsets=args[1].split(','); Ts=[float(x)*1000 for x in args[2].split(',')]
    wmult=float(args[3]) if len(args)>3 else 16
    for frac in fracs:
        C=int(frac*D)
        for hs in hintsets:
            hints=set(hs.split('+'))
            for T in Ts:
                h=run(refs,F,C,hints,T if T>0 else 150e3,int(wmult*C), adapt=-T/1000 if T<0 else 0)
                print(frac, hs, 'T',T/1000, 'w',wmult, round(h/N,4), flush=True)
