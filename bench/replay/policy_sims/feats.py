from common import *
import collections
def annotate(reqs, refs):
    """per ref: dict of features available online at that access."""
    seen=set(); last_t={}; prev_gap={}; cnt=collections.Counter()
    out=[]; idx=0
    for ri,r in enumerate(reqs):
        h=r['hash_ids']; t=r['timestamp']; pre=0
        while pre<len(h) and h[pre] in seen: pre+=1
        for j,b in enumerate(h):
            k=cnt[b]
            g = t-last_t[b] if b in last_t else None
            out.append(dict(k=k, gap=g, pgap=prev_gap.get(b), pre=pre, j=j, n=len(h),
                            pl=(r['input_length']%512!=0 and j==len(h)-1), t=t))
        for b in h:
            if b in last_t: prev_gap[b]=t-last_t[b]
            last_t[b]=t; cnt[b]+=1; seen.add(b)
    return out
