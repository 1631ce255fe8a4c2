# Generic multi-queue sim: each class has an LRU queue (OrderedDict block->last access t).
# On eviction, compare tails by score(class, age, now) and evict the min.
from collections import OrderedDict
import collections
def run(refs, C, classify, score, bypass=None, on_access=None):
    """classify(i, ref, k, meta)->class; k = prior accesses count; score(cls, age_ms, now)->float (higher keep)"""
    queues=collections.defaultdict(OrderedDict)
    where={}  # block->class
    cnt=collections.Counter()
    hits=0
    for i,ref in enumerate(refs):
        b,t=ref[0],ref[1]
        k=cnt[b]; cnt[b]+=1
        if on_access: on_access(i, ref, k, b in where)
        if b in where:
            hits+=1
            c=where[b]; del queues[c][b]
        cls=classify(i, ref, k)
        if b not in where and bypass is not None and bypass(cls):
            continue
        queues[cls][b]=t; where[b]=cls
        if len(where)>C:
            best=None
            for c,q in queues.items():
                if not q: continue
                vb,vt=next(iter(q.items()))
                s=score(c, t-vt, t)
                if best is None or s<best[0]: best=(s,c,vb)
            _,c,vb=best
            del queues[c][vb]; del where[vb]
    return hits
