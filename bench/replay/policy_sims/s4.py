from common import *
from feats import annotate
from simcore import run
import collections, sys, bisect
reqs, refs = load()
N=len(refs); D=len(set(r[0] for r in refs)); nxt=next_use(refs)
F=annotate(reqs, refs)
def nb(x, edges):
    for e in edges:
        if x<=e: return e
    return 999
CL=sys.argv[2]
def cls_of(i,ref,k):
    f=F[i]
    if f['pl'] and k==0: return 'PL'
    new=f['n']-f['pre']; cont=f['pre']>=2
    if CL=='k': return min(k,4)
    if CL=='new': return (min(k,4), cont, nb(new,[2,8,32]))
    if CL=='new2': return (min(k,2), cont, nb(new,[1,2,4,8,16,32]))
    if CL=='newn': return (min(k,2), cont, nb(new,[2,8,32]), nb(f['n'],[8,32,64]))
    if CL=='n': return (min(k,4), cont, nb(f['n'],[4,8,16,32,64]))
gaps=collections.defaultdict(list)
for i,ref in enumerate(refs):
    c=cls_of(i,ref,F[i]['k'])
    gaps[c].append(refs[nxt[i]][1]-ref[1] if nxt[i] is not None else float('inf'))
for c in gaps: gaps[c].sort()
if '-v' in sys.argv:
    for c in sorted(gaps, key=str): g=gaps[c]; fin=[x for x in g if x!=float('inf')]; print(c,len(g),round(len(fin)/len(g),3), fin[len(fin)//2]/1000 if fin else None)
def make_score(T):
    cache={}
    def score(c,age,now):
        key=(c,age//2000)
        if key in cache: return cache[key]
        g=gaps[c]; a=age
        lo=bisect.bisect_right(g,a); hi=bisect.bisect_right(g,a+T)
        hits=hi-lo
        occ=sum(x-a for x in g[lo:hi]) + (len(g)-hi)*T
        s=hits/occ if occ>0 else 0
        cache[key]=s; return s
    return score
for frac in [float(x) for x in sys.argv[1].split(',')]:
    C=int(frac*D)
    for T in [float(x)*1000 for x in sys.argv[3].split(',')]:
        h=run(refs,C,cls_of,make_score(T))
        print(CL, frac, 'T',T/1000, round(h/N,4), flush=True)
