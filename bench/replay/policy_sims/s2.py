from common import *
from collections import OrderedDict
reqs, refs = load()
N=len(refs); D=len(set(r[0] for r in refs)); nxt=next_use(refs)
for frac in [0.05,0.1,0.25]:
    C=int(frac*D)
    for mode in ['lru','dead_bypass']:
        c=OrderedDict(); h=0
        for i,ref in enumerate(refs):
            b=ref[0]
            if b in c:
                h+=1
                if mode=='dead_bypass' and nxt[i] is None: del c[b]; continue
                c.move_to_end(b); continue
            if mode=='dead_bypass' and nxt[i] is None: continue
            c[b]=1
            if len(c)>C: c.popitem(last=False)
        print(frac, mode, round(h/N,4))
