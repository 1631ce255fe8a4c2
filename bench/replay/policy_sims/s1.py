from common import *
from simcore import run
import collections, sys, bisect
reqs, refs = load()
N=len(refs); D=len(set(r[0] for r in refs))
nxt=next_use(refs)
# offline table: per class, sorted list of gaps (inf for never)
def cls_of(i,ref,k):
    if ref[5] and k==0: return 'PL'
    return min(k,4)
cnt=collections.Counter(); gaps=collections.defaultdict(list)
for i,ref in enumerate(refs):
    k=cnt[ref[0]]; cnt[ref[0]]+=1
    c=cls_of(i,ref,k)
    gaps[c].append(refs[nxt[i]][1]-ref[1] if nxt[i] is not None else float('inf'))
for c in gaps: gaps[c].sort()
def make_score(W):
    cache={}
    def score(c,age,now):
        key=(c,age//1000)
        if key in cache: return cache[key]
        g=gaps[c]
        lo=bisect.bisect_right(g,age); hi=bisect.bisect_right(g,age+W)
        s=(hi-lo)/max(1,len(g)-lo)
        cache[key]=s; return s
    return score
for frac in [float(x) for x in sys.argv[1].split(',')]:
    C=int(frac*D)
    for W in [60e3,120e3,300e3,600e3,1e9]:
        h=run(refs,C,cls_of,make_score(W))
        print(frac, 'W',W/1000, round(h/N,4))
