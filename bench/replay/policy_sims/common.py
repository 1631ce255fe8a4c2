import json, sys
def load(path='/work/shared/traces/conversation_trace.jsonl'):
    reqs=[json.loads(l) for l in open(path)]
    refs=[]  # (block, t, req, pos, nblocks, partial_last)
    for i,r in enumerate(reqs):
        h=r['hash_ids']; n=len(h); partial=r['input_length']%512!=0
        for j,b in enumerate(h):
            refs.append((b, r['timestamp'], i, j, n, partial and j==n-1))
    return reqs, refs
def next_use(refs):
    N=len(refs); nxt=[None]*N; seen={}
    for i in range(N-1,-1,-1):
        b=refs[i][0]; nxt[i]=seen.get(b); seen[b]=i
    return nxt
